"""What a learner sees in self-study is what ``attnlib check`` records.

Two honest habits used to grade differently from how they self-checked:

- a check cell under ``%%capture`` (or inside ``capture_output()``) showed ✓ in
  self-study, but its answer never reached the grader ("not attempted");
- ``assert check(...).passed`` passed in self-study and raised while graded, so the rest
  of the cell (here: the next exercise's answer) never ran.

And one dishonest habit must gain nothing from the fix (``passed`` is truthy while
graded): a loop that tries answers until ``check`` says passed stops at its first, wrong,
guess while graded, and that guess is graded wrong.

One class of notebooks (lesson 03) is graded once, through the real ``attnlib check``.
"""

import contextlib
import io
import json
import re

import pytest

from attnlib.cli import main
from attnlib.selfcheck import check

from .conftest import IDS, check_cells, code, rows_of, solved, src, write

WRONG_Z = [-0.5, 0.5, 1.0]  # K^T z = (-1, 2), not 0


def _with_checks(rewrite):
    """The solved notebook, each check cell's ``check(...)`` call rewritten."""
    nb = solved()
    for i in check_cells(nb):
        source = src(nb["cells"][i])
        match = re.search(r"""check\(\s*["'](\w+)["'][^\n]*\)""", source)
        nb["cells"][i]["source"] = rewrite(match.group(1), source, match.group(0))
        nb["cells"][i]["outputs"] = []
    return nb


def captured_notebook():
    """Every check cell runs under %%capture; one under capture_output() instead."""

    def rewrite(exercise_id, source, call):
        if exercise_id == "rank_witness":
            quiet = "from IPython.utils.capture import capture_output\n\nwith capture_output():\n"
            return source.replace(call, f"{quiet}    {call}")
        return "%%capture\n" + source

    return _with_checks(rewrite)


def asserting_notebook():
    """``assert check(...).passed`` on every right answer, then more code in the same cell."""

    def rewrite(exercise_id, source, call):
        after = f"\nafter_{exercise_id} = True  # the cell runs on past the assert"
        return source.replace(call, f"assert {call}.passed") + after

    nb = _with_checks(rewrite)
    nb["cells"].append(code("print(" + " and ".join(f"after_{i}" for i in IDS) + ")"))
    return nb


def guessing_notebook():
    """A wrong answer asserted, and a loop that asks check for the right one."""

    def rewrite(exercise_id, source, call):
        if exercise_id == "rank_witness":
            return f"assert check('rank_witness', {WRONG_Z!r}).passed"
        if exercise_id == "double_keys":
            return (
                "for guess in ('halved', 'unchanged', 'quadrupled', 'doubled'):\n"
                "    if check('double_keys', guess).passed:\n"
                "        break"
            )
        return source

    return _with_checks(rewrite)


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    root = tmp_path_factory.mktemp("habits")
    notebooks = {
        name: write(root / name / "03_scoring.ipynb", build())
        for name, build in (
            ("captured", captured_notebook),
            ("asserting", asserting_notebook),
            ("guessing", guessing_notebook),
        )
    }
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        main(["check", "--json", "-q", "-j", "2", *(str(p.parent) for p in notebooks.values())])
    return json.loads(out.getvalue()), notebooks


def statuses(graded, name):
    report, notebooks = graded
    return {e: r["status"] for e, r in rows_of(report, notebooks[name]).items()}


def test_a_check_under_capture_reaches_the_grader(graded):
    assert statuses(graded, "captured") == dict.fromkeys(IDS, "passed")
    report, notebooks = graded
    assert str(notebooks["captured"]) not in report["cell_errors"]


def test_assert_on_passed_runs_on_while_graded_as_in_self_study(graded):
    assert statuses(graded, "asserting") == dict.fromkeys(IDS, "passed")
    report, notebooks = graded
    assert str(notebooks["asserting"]) not in report["cell_errors"]


def test_a_wrong_answer_asserted_passed_is_graded_as_check_judges_it(graded):
    ours = check("rank_witness", WRONG_Z, quiet=True)
    assert not ours.passed  # self-study: the assert raises
    found = statuses(graded, "guessing")
    assert found["rank_witness"] == ours.status == "wrong"
    assert found["score_eat_seeds"] == "passed"


def test_asking_check_for_the_answer_in_a_loop_records_the_first_guess(graded):
    ours = check("double_keys", "halved", quiet=True)
    assert statuses(graded, "guessing")["double_keys"] == ours.status == "wrong"


@pytest.mark.parametrize(
    "exercise_id", ["x_matrix", "x_shape", "sqrt_variance", "softmax", "sqrt_jacobian_psd"]
)
def test_the_graded_kernel_sees_not_attempted_as_the_judge_does(exercise_id):
    """Only a placeholder gets passed = False while graded; the rule needs no answer key."""
    from attnlib.selfcheck import answer_data, record, registry

    exercise = registry.get(exercise_id)
    stub_function = lambda *args: ...  # noqa: E731 - a stub that returns the placeholder
    for answer in (..., None, [1.0, ...], (..., 2.0), stub_function, 1.0, [[1.0, 2.0]]):
        data = answer_data(exercise, answer)
        judged = exercise.judge(data).status == "not attempted"
        assert record.unanswered(exercise.kind, data) == judged, (exercise_id, answer)
