"""The "proof" kind: a learner's sympy expression is evaluated at points the exercise chose,
in the learner's process, and only the numbers are judged (by ``check`` and by the grader).
"""

import json

import numpy as np
import pytest
import sympy as sp

from attnlib.cli import main
from attnlib.selfcheck import check, registry
from attnlib.selfcheck.exercise import Exercise
from attnlib.selfcheck.judge import check_expression
from attnlib.selfcheck.run import expression_function
from tests.grader.conftest import load, write

p_1, p_2 = sp.symbols("p_1 p_2", positive=True)


def test_symbols_are_matched_by_name_whatever_their_assumptions():
    at = expression_function(sp.Symbol("p_1") * 2 + p_2, ["p_1", "p_2"])
    assert at(0.5, 3.0) == 4.0
    assert expression_function(sp.Matrix([[p_1, p_2]]), ["p_1", "p_2"])(1, 2).shape == (2,)
    assert expression_function(7, ["p_1"])(0.3) == 7.0  # a constant is an expression too


def test_a_string_is_never_parsed_and_an_unknown_symbol_is_named():
    with pytest.raises(TypeError, match="a string is not an expression"):
        expression_function("p_1 + 1", ["p_1"])(1.0)
    with pytest.raises(NameError, match="uses q_9; it may only use p_1, p_2"):
        expression_function(sp.Symbol("q_9") + p_1, ["p_1", "p_2"])(1.0, 2.0)
    with pytest.raises(ValueError, match="not real"):
        expression_function(sp.sqrt(p_1 - 2), ["p_1"])(1.0)


def test_a_proof_needs_points_names_and_an_expected_expression():
    base = dict(id="x1", lesson="08_why_sqrt_dk", answer="x", hints=("h",), solution="s")
    with pytest.raises(ValueError, match="needs cases, an expected expression and arg_names"):
        Exercise(kind="proof", expected=p_1, cases=[(1.0,)], **base)
    with pytest.raises(ValueError, match="needs cases, an expected expression and arg_names"):
        Exercise(kind="proof", expected=p_1, arg_names=("p_1",), **base)


def test_a_mistake_is_named_only_where_it_matches_at_every_point():
    points = [(1.0,), (2.0,), (3.0,)]
    right, double = (lambda x: x), (lambda x: 2 * x)
    one_point = [{"ok": 2.0}, {"ok": 5.0}, {"ok": 5.0}]  # 2 x at p_1 = 1 only
    everywhere = [{"ok": 2.0}, {"ok": 4.0}, {"ok": 6.0}]
    mistakes = [("jacobian_sign", double)]
    assert check_expression(one_point, points, right, mistakes, names=["p_1"]).mistake is None
    assert check_expression(everywhere, points, right, mistakes, names=["p_1"]).mistake == (
        "jacobian_sign"
    )


def test_the_judge_takes_numbers_only():
    exercise = registry.get("sqrt_jacobian_row_sums")
    values = [
        expression_function(exercise.expected, exercise.arg_names)(*p) for p in exercise.cases
    ]
    feedback = exercise.judge([{"ok": v} for v in values])  # what the kernel sends back
    assert feedback.passed, feedback.message
    # the expression itself, or a string, is not data the judge evaluates
    assert not exercise.judge(exercise.expected).passed
    assert not exercise.judge("p_0*(1 - p_0 - p_1 - p_2)").passed


def test_check_messages_speak_of_an_expression():
    feedback = check("sqrt_jacobian_row_sums", sp.Symbol("x"), quiet=True)
    assert feedback.status == "error"
    assert "your expression raised NameError" in feedback.message
    assert "at p_0 = 0.2, p_1 = 0.3, p_2 = 0.1" in feedback.message


def test_the_grader_evaluates_the_expression_in_the_kernel(tmp_path):
    from attnlib.grade.sandbox import strip_package
    from attnlib.selfcheck import record, wire

    exercise = registry.get("sqrt_jacobian_psd")
    package = strip_package(tmp_path, registry)  # what a graded kernel imports
    spec = json.loads((tmp_path / "attnlib/selfcheck/grading.json").read_text())["exercises"]
    assert spec[exercise.id]["arg_names"] == ["p_0", "p_1", "p_2", "v_0", "v_1", "v_2"]
    assert not (tmp_path / "attnlib/selfcheck/registry.py").exists() and package
    cases = wire.decode(spec[exercise.id]["cases"])
    data = record.answer_data("proof", cases, spec[exercise.id]["arg_names"], exercise.expected)
    *values, form = data
    assert all(set(r) == {"ok"} for r in values)  # numbers at the points
    # and the formula as a tree of class names and numbers, which the judge rebuilds from a
    # short list of sympy classes (no text is ever parsed)
    assert form["ok"] is None and form["form"][0] == "Add"
    assert exercise.judge(wire.decode(wire.encode(data))).passed


def test_attnlib_check_grades_the_proofs_of_a_handed_in_notebook(tmp_path, capsys):
    nb = load("solutions", "09_saturation")  # the saturation lesson holds both proofs
    for cell in nb["cells"]:
        source = "".join(cell["source"])
        if 'check("sqrt_jacobian_psd", quad)' in source:  # v^T J v itself: not yet a proof
            cell["source"] = 'quad = (v.T * J * v)[0]\ncheck("sqrt_jacobian_psd", quad)'
    path = write(tmp_path / "09_saturation.ipynb", nb)
    assert main(["check", "--json", "-q", str(path)]) == 1
    rows = {r["exercise"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["sqrt_jacobian_row_sums"]["status"] == "passed"
    assert (rows["sqrt_jacobian_psd"]["status"], rows["sqrt_jacobian_psd"]["mistake"]) == (
        "wrong",
        "psd_not_sum_of_squares",
    )


def test_the_points_of_the_psd_proof_can_tell_v_t_j_v_from_a_sum_of_squares():
    from attnlib.checkers import lesson_09 as L8  # the saturation lesson holds the proof

    raw = expression_function(L8.QUADRATIC, L8.PSD_NAMES)
    assert min(raw(*point) for point in L8.PSD_POINTS) < 0  # negative somewhere off the simplex
    for point in L8.PSD_POINTS:
        if np.isclose(sum(point[:3]), 1):
            assert np.isclose(
                raw(*point), expression_function(L8.VARIANCE_FORM, L8.PSD_NAMES)(*point)
            )
