"""Rules every checker keeps, each tested once over the whole registry.

A rule closes a kind of hole for every exercise at once: a softmax that subtracts the
wrong number, a tolerance looser than the lesson prints, an id quoted in a lesson that no
exercise has. Each test sends the answer that used to pass and asserts that it is wrong.
"""

import ast
import copy
import json
import re
from pathlib import Path

import numpy as np
import pytest
import sympy as sp

import attnlib
import attnlib.core
from attnlib.checkers import lesson_03
from attnlib.selfcheck import MISTAKES, check, registry
from attnlib.selfcheck.run import call_cases


# ---- softmax-like functions meet a row whose spread passes 709 -------------------------------
def _first_finite(S):
    first = np.argmax(np.isfinite(S), axis=-1)[..., None]  # the first key not masked
    return np.take_along_axis(S, first, axis=-1)


def _finite(S):
    return np.where(np.isfinite(S), S, np.nan)


SHIFTS = {
    # what a learner subtracts instead of the row max; each is exact on paper
    "row min": lambda S: np.nanmin(_finite(S), axis=-1, keepdims=True),
    "row mean": lambda S: np.nanmean(_finite(S), axis=-1, keepdims=True),
    "first entry": _first_finite,
    "nothing": lambda S: np.zeros(S.shape[:-1] + (1,), S.dtype),
}


def _softmax_shifted_by(shift):
    def _exp_normalise(S, top):
        with np.errstate(all="ignore"):
            S -= shift(S)
            np.exp(S, out=S)
            S /= S.sum(axis=-1, keepdims=True)
        return S

    return _exp_normalise


def _uniform(S, top):
    S[...] = np.where(np.isfinite(S), 1.0, 0.0)
    S /= S.sum(axis=-1, keepdims=True)
    return S


def _records_with(monkeypatch, exercise, exp_normalise):
    """The reference's results on the exercise's cases, computed (in a child process, as a
    learner's function is) with attnlib's softmax step replaced by ``exp_normalise``."""
    with monkeypatch.context() as patch:
        patch.setattr(attnlib.core, "_exp_normalise", exp_normalise)
        return call_cases(exercise.reference, exercise.cases)


def _outputs(exercise):
    """The reference's results on every case, as float arrays (in this process)."""
    found = []
    for case in exercise.cases:
        with np.errstate(all="ignore"):
            result = exercise.reference(*copy.deepcopy(case))
        items = result if isinstance(result, tuple) else (result,)
        found.extend(np.asarray(item, dtype=np.float64) for item in items)
    return found


def _softmax_like():
    """Function exercises whose reference runs through attnlib's softmax step: with that
    step giving even weights instead, the results change."""
    found = []
    with pytest.MonkeyPatch.context() as patch:
        for exercise in registry.exercises().values():
            if exercise.kind != "function":
                continue
            right = _outputs(exercise)
            patch.setattr(attnlib.core, "_exp_normalise", _uniform)
            try:
                flat = _outputs(exercise)
            except ValueError:  # attnlib's own checks refused the even weights: it uses them
                flat = []
            patch.undo()
            if len(flat) != len(right) or not all(
                a.shape == b.shape and np.allclose(a, b, equal_nan=True)
                for a, b in zip(flat, right, strict=True)
            ):
                found.append(exercise.id)
    return found


SOFTMAX_LIKE = _softmax_like()


def test_the_softmax_like_exercises_are_found():
    # the detection itself can fail: these four are about softmax by their names
    assert {"softmax", "softmax_fix_axis", "attention", "formula_self_attention"} <= set(
        SOFTMAX_LIKE
    )


@pytest.mark.parametrize("shift", sorted(SHIFTS))
@pytest.mark.parametrize("exercise_id", SOFTMAX_LIKE)
def test_a_softmax_that_subtracts_anything_but_the_row_max_is_wrong(
    exercise_id, shift, monkeypatch
):
    exercise = registry.get(exercise_id)
    records = _records_with(monkeypatch, exercise, _softmax_shifted_by(SHIFTS[shift]))
    feedback = exercise.judge(records)
    # wrong, or an error when attnlib's own checks meet the nan inside the reference
    assert not feedback.passed and feedback.status in ("wrong", "error"), feedback.message


# ---- a wrong answer says where it differs, gives the first hint, never the answer ------------
VALUES = [e.id for e in registry.exercises().values() if e.kind == "value"]


def _shown(value):
    """How a message could print a number: 6.364, 6.36, 6.4 (integers are left out: row and
    column numbers would match them)."""
    forms = {f"{value:.4g}", f"{value:.3f}", f"{value:.2f}", f"{value:.1f}"}
    return {f for f in forms if float(f) != int(float(f))}


@pytest.mark.parametrize("exercise_id", VALUES)
def test_a_wrong_value_says_where_and_hints_without_the_answer(exercise_id):
    exercise = registry.get(exercise_id)
    expected = np.array(exercise.expected, dtype=np.float64)
    answer = expected.copy()
    value = answer.flat[0]
    # far from the answer and from every named mistake; whole numbers stay whole
    answer.flat[0] = value + round(abs(value) / 2) + (7 if value == int(value) else 7.77)
    if exercise.dtype is not None:
        answer = answer.astype(exercise.dtype)
    feedback = exercise.judge(answer)
    assert (feedback.status, feedback.mistake) == ("wrong", None), feedback.message
    assert "differs" in feedback.message
    assert feedback.message.endswith(f"Hint: {exercise.hints[0]}")
    for shown in _shown(float(expected.flat[0])):
        assert shown not in feedback.message, (shown, feedback.message)


# ---- exercises about a dtype judge the dtype, which travels with the answer ------------------
def _stable(x, dtype):
    z = np.asarray(x).astype(dtype)
    e = np.exp(z - z.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _naive(x, dtype):
    with np.errstate(all="ignore"):
        e = np.exp(np.asarray(x).astype(dtype))
        return e / e.sum(axis=-1, keepdims=True)


def _min_shift(x, dtype):
    with np.errstate(all="ignore"):
        z = np.asarray(x).astype(dtype)
        e = np.exp(z - z.min(axis=-1, keepdims=True))
        return e / e.sum(axis=-1, keepdims=True)


def test_the_dtype_travels_with_an_answer():
    from attnlib.selfcheck import wire

    for dtype in ("float16", "float32", "float64"):
        sent = np.array([[0.1, 65504.0], [-np.inf, np.nan]], dtype=dtype)
        got = wire.decode(wire.encode(sent))
        assert got.dtype == dtype
        np.testing.assert_array_equal(got, sent)


def test_float16_weights_judges_the_dtype():
    from attnlib.checkers.lesson_05 import S16

    assert check("float16_weights", _stable(S16, np.float16), quiet=True).passed
    wrong_answers = {
        "computed in float64": _stable(S16, np.float64),
        "computed in float32": _stable(S16, np.float32),
        "naive, hidden by float64": _naive(S16, np.float64).astype(np.float16),
        "row min, hidden by float64": _min_shift(S16, np.float64).astype(np.float16),
    }
    for how, answer in wrong_answers.items():
        feedback = check("float16_weights", answer, quiet=True)
        assert (feedback.passed, feedback.status) == (False, "wrong"), (how, feedback.message)


def test_softmax_half_judges_the_dtype():
    def right(x):
        return _stable(x, np.float32).astype(np.float16)

    assert check("softmax_half", right, quiet=True).passed
    wrong_answers = {
        "float32 out": lambda x: _stable(x, np.float32),
        "float64 out": lambda x: _stable(x, np.float64),
        "naive, hidden by float64": lambda x: _naive(x, np.float64).astype(np.float16),
    }
    for how, answer in wrong_answers.items():
        feedback = check("softmax_half", answer, quiet=True)
        assert (feedback.passed, feedback.status) == (False, "wrong"), (how, feedback.message)
    assert (
        "dtype float32" in check("softmax_half", wrong_answers["float32 out"], quiet=True).message
    )


def _attention_in(Q, K, V, dtype, scale_first=False):
    Q, K, V = (M.astype(dtype) for M in (Q, K, V))
    with np.errstate(all="ignore"):
        if scale_first:  # divide the queries first, so Q @ K.T is already scaled
            S = (Q / np.sqrt(dtype(Q.shape[-1]))) @ K.T
        else:
            S = Q @ K.T / np.sqrt(dtype(Q.shape[-1]))
        return _stable(S, dtype) @ V


def test_attention_half_fix_judges_the_dtype_and_the_largest_intermediate():
    def right(Q, K, V):
        return _attention_in(Q, K, V, np.float32).astype(np.float16)

    assert check("attention_half_fix", right, quiet=True).passed
    wrong_answers = {
        "float32 out": lambda Q, K, V: _attention_in(Q, K, V, np.float32),
        "float64 out": lambda Q, K, V: _attention_in(Q, K, V, np.float64),
        # a "fix" that stays in float16: scaled scores past 65504 overflow
        "stays in float16": lambda Q, K, V: _attention_in(Q, K, V, np.float16, scale_first=True),
    }
    for how, answer in wrong_answers.items():
        feedback = check("attention_half_fix", answer, quiet=True)
        assert not feedback.passed and feedback.status in ("wrong", "error"), (
            how,
            feedback.message,
        )


# ---- a value's tolerance is no looser than the decimals the lesson prints --------------------
ROOT = Path(__file__).resolve().parents[1]
NUMBER = re.compile(r"(?<![\w.])-?\d+\.(\d+)(?![\w.])")


def _lesson_text(stem):
    """Everything a learner reads in a lesson: its markdown and its stored outputs."""
    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text(encoding="utf-8"))
    parts = []
    for cell in nb["cells"]:
        parts.append("".join(cell["source"]) if cell["cell_type"] == "markdown" else "")
        for output in cell.get("outputs", []):
            parts.append("".join(output.get("text", "")))
            parts.append("".join(output.get("data", {}).get("text/plain", "")))
    return "\n".join(parts)


def printed_decimals(value, text):
    """The fewest decimals with which ``text`` prints ``value``: what a learner has seen of
    it at least (0 when the text never prints it, or the value is a whole number)."""
    shown = [
        len(match.group(1))
        for match in NUMBER.finditer(text)
        if value != round(value) and float(match.group(0)) == round(value, len(match.group(1)))
    ]
    return min(shown, default=0)


def _numbers(expected):
    items = expected if isinstance(expected, tuple) else (expected,)
    return [float(x) for item in items for x in np.ravel(np.asarray(item, dtype=np.float64))]


HAND_ROUNDED = [
    e.id for e in registry.exercises().values() if e.kind in ("value", "tuple") and e.decimals
]


def test_printed_decimals_reads_a_lesson_as_a_learner_would():
    assert printed_decimals(9 / np.sqrt(2), "9 / sqrt(2) = 6.36, then 6.364") == 2
    assert printed_decimals(9 / np.sqrt(2), "[6.364 1.   ], not 6.37") == 3
    assert printed_decimals(9 / np.sqrt(2), "6.37 is another number") == 0
    assert printed_decimals(2.0, "2.0 and 2.00") == 0  # a whole number: row and column numbers


@pytest.mark.parametrize("exercise_id", HAND_ROUNDED)
def test_tolerance_is_no_looser_than_the_lesson_prints(exercise_id):
    exercise = registry.get(exercise_id)
    text = _lesson_text(exercise.lesson)
    # each entry as coarsely as the lesson prints it; the tolerance must not pass the finest
    shown = max((printed_decimals(v, text) for v in _numbers(exercise.expected)), default=0)
    assert exercise.decimals >= shown, (
        f"{exercise_id} accepts answers within 1e-{exercise.decimals}, but the lesson prints "
        f"its answer to {shown} decimals"
    )


def test_scaling_birds_eat_refuses_answers_the_lesson_would_print_differently():
    assert check("scaling_birds_eat", 9 / 1.414, quiet=True).passed
    for answer in (6.43, 6.45, 6.30):
        feedback = check("scaling_birds_eat", answer, quiet=True)
        assert (feedback.passed, feedback.status) == (False, "wrong"), feedback.message


# ---- a proof that forces a sign is refused; feedback never spells out the proof --------------
def _psd_pieces():
    from attnlib.checkers import lesson_08

    return lesson_08, lesson_08.QUADRATIC


@pytest.mark.parametrize(
    "force",
    [
        lambda Q: sp.Abs(Q),
        lambda Q: sp.Max(Q, 0),
        lambda Q: sp.Piecewise((Q, Q >= 0), (0, True)),
        lambda Q: sp.sign(Q) * Q,
        lambda Q: sp.Heaviside(Q) * Q,
        lambda Q: sp.re(sp.sqrt(Q)) ** 2,
        lambda Q: sp.sqrt(Q**2),
    ],
    ids=["Abs", "Max", "Piecewise", "sign", "Heaviside", "re", "sqrt of square"],
)
def test_a_proof_that_forces_its_sign_is_refused(force):
    _, quadratic = _psd_pieces()
    feedback = check("sqrt_jacobian_psd", force(quadratic), quiet=True)
    assert (feedback.status, feedback.mistake) == ("wrong", "sign_forced"), feedback.message
    assert "forces the sign" in feedback.message


def test_an_honest_other_form_of_the_proof_still_passes():
    lesson_08, _ = _psd_pieces()
    p, v = lesson_08._p, lesson_08._v
    pairs = sum(p[i] * p[j] * (v[i] - v[j]) ** 2 for i in range(3) for j in range(3)) / 2
    assert check("sqrt_jacobian_psd", pairs, quiet=True).passed


def test_the_last_exercise_of_lesson_08_does_not_spell_out_its_answer():
    # the lesson of the variance and the Jacobian (08 when this was written), by its exercise
    exercise = registry.for_notebook(registry.get("sqrt_jacobian_psd").lesson)[-1]
    assert exercise.id == "sqrt_jacobian_psd"
    answer_pieces = ["(v_i - m)", "sum_j p_j v_j", "p_j v_j", "sum_i p_i (v_i"]
    lines = [MISTAKES[code] for code, _ in exercise.mistakes] + [MISTAKES["sign_forced"]]
    for line in lines:
        for piece in answer_pieces:
            assert piece not in line, (piece, line)


# ---- every id quoted in a notebook, the README or a docstring is an exercise -----------------
QUOTED = re.compile(r"\b(?:check|hint|solution)\(\s*\\?[\"']([A-Za-z_0-9]+)\\?[\"']")


def _docstrings(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = [tree, *ast.walk(tree)]
    kinds = (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    return [ast.get_docstring(n) or "" for n in nodes if isinstance(n, kinds)]


def _quoted_ids():
    found = []
    for folder in ("notebooks", "solutions", "exercises"):
        for path in sorted((ROOT / folder).glob("*.ipynb")):
            nb = json.loads(path.read_text(encoding="utf-8"))
            for cell in nb["cells"]:
                for name in QUOTED.findall("".join(cell["source"])):
                    found.append((path.relative_to(ROOT).as_posix(), name))
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        for name in QUOTED.findall(page.read_text(encoding="utf-8")):
            found.append((page.relative_to(ROOT).as_posix(), name))
    for path in sorted((ROOT / "attnlib").rglob("*.py")):
        for text in _docstrings(path):
            for name in QUOTED.findall(text):
                found.append((path.relative_to(ROOT).as_posix(), name))
    return found


def test_the_quote_finder_sees_every_spelling():
    text = 'check("a1", S) hint(\'b_2\') solution( "c" ) show("d")'
    assert QUOTED.findall(text) == ["a1", "b_2", "c"]


def test_every_quoted_exercise_id_exists():
    quoted = _quoted_ids()
    assert any(where == "notebooks/00_start_here.ipynb" for where, _ in quoted)
    assert any(where == "attnlib/selfcheck/__init__.py" for where, _ in quoted)
    # `hint("id")` in the lessons' "how to check" paragraph names the placeholder itself
    placeholders = {"id", "exercise_id"}
    unknown = [
        (where, name)
        for where, name in quoted
        if registry.get(name) is None and name not in placeholders
    ]
    assert unknown == []


# ---- blocked_causal proves that hidden blocks were skipped ---------------------------------
def _full_causal(Q, K, V, block_size):
    """Every score computed, the hidden ones masked with np.where: right numbers on finite
    inputs, but no block is skipped."""
    S = Q @ K.T / np.sqrt(K.shape[-1])  # (n, n)
    S = np.where(np.tril(np.ones((len(Q), len(K)), dtype=bool)), S, -np.inf)
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True) @ V


def _blocked(Q, K, V, block_size, skip=True):
    n, d_k = Q.shape
    output = np.zeros((n, V.shape[1]))
    for q0 in range(0, n, block_size):
        Q_b = Q[q0 : q0 + block_size]
        rows = np.arange(q0, q0 + len(Q_b))[:, None]
        m = np.full((len(Q_b), 1), -np.inf)
        l_sum, a_sum = np.zeros((len(Q_b), 1)), np.zeros((len(Q_b), V.shape[1]))
        for k0 in range(0, q0 + len(Q_b) if skip else n, block_size):
            S_b = Q_b @ K[k0 : k0 + block_size].T / np.sqrt(d_k)
            cols = np.arange(k0, k0 + S_b.shape[1])[None, :]
            S_b = np.where(cols <= rows, S_b, -np.inf)
            m_new = np.maximum(m, S_b.max(axis=1, keepdims=True))
            P_b = np.exp(S_b - m_new)
            l_sum = l_sum * np.exp(m - m_new) + P_b.sum(axis=1, keepdims=True)
            a_sum = a_sum * np.exp(m - m_new) + P_b @ V[k0 : k0 + block_size]
            m = m_new
        output[q0 : q0 + len(Q_b)] = a_sum / l_sum
    return output


def test_blocked_causal_passes_only_a_loop_that_skips_hidden_blocks():
    assert check("blocked_causal", _blocked, quiet=True).passed
    for answer in (_full_causal, lambda Q, K, V, b: _blocked(Q, K, V, b, skip=False)):
        feedback = check("blocked_causal", answer, quiet=True)
        assert (feedback.status, feedback.mistake) == ("wrong", "blocks_not_skipped"), (
            feedback.message
        )


# ---- "write the repaired loop": every correct loop passes, every wrong one fails --------------
# A learner repairs one index of a triple loop; how the inner dot product is then written is
# theirs to choose. The check judges results only (it never reads code), so it must not tell
# one correct loop from another: a 0/1 (bool) input did, and told `Q[i] @ K[j]` off.
def _scores_triple_loop(Q, K):
    S = np.zeros((Q.shape[0], K.shape[0]))
    for i in range(Q.shape[0]):
        for j in range(K.shape[0]):
            for m in range(Q.shape[1]):
                S[i, j] += Q[i, m] * K[j, m]
    return S


def _scores_rows_matmul(Q, K):
    S = np.zeros((Q.shape[0], K.shape[0]))
    for i in range(Q.shape[0]):
        for j in range(K.shape[0]):
            S[i, j] = Q[i] @ K[j]
    return S


def _scores_rows_dot(Q, K):
    S = np.zeros((Q.shape[0], K.shape[0]))
    for i in range(len(Q)):
        for j in range(len(K)):
            S[i, j] = np.dot(Q[i], K[j])
    return S


def _scores_generator_sum(Q, K):
    S = np.zeros((Q.shape[0], K.shape[0]))
    for i in range(Q.shape[0]):
        for j in range(K.shape[0]):
            S[i][j] = sum(Q[i][t] * K[j][t] for t in range(Q.shape[1]))
    return S


def _scores_nested_lists(Q, K):
    return [[sum(q_t * k_t for q_t, k_t in zip(q, k, strict=True)) for k in K] for q in Q]


HONEST_LOOPS = {
    "triple loop": _scores_triple_loop,
    "Q[i] @ K[j]": _scores_rows_matmul,
    "np.dot(Q[i], K[j])": _scores_rows_dot,
    "sum(Q[i][t] * K[j][t] for t ...)": _scores_generator_sum,
    "lists of sums over zip": _scores_nested_lists,
}


@pytest.mark.parametrize("form", HONEST_LOOPS)
def test_scores_loop_passes_every_correct_loop(form):
    feedback = check("scores_loop", HONEST_LOOPS[form], quiet=True)
    assert feedback.passed, feedback.message


def _scores_square_only(Q, K):  # j runs over the queries: right only when n_q = n_k
    S = np.zeros((Q.shape[0], K.shape[0]))
    for i in range(Q.shape[0]):
        for j in range(Q.shape[0]):
            S[i, j] = Q[i] @ K[j]
    return S


def _scores_last_key_skipped(Q, K):
    S = np.zeros((Q.shape[0], K.shape[0]))
    for i in range(Q.shape[0]):
        for j in range(K.shape[0] - 1):
            S[i, j] = Q[i] @ K[j]
    return S


def _scores_product_not_sum(Q, K):  # = instead of +=: keeps only the last product
    S = np.zeros((Q.shape[0], K.shape[0]))
    for i in range(Q.shape[0]):
        for j in range(K.shape[0]):
            for m in range(Q.shape[1]):
                S[i, j] = Q[i, m] * K[j, m]
    return S


WRONG_LOOPS = {
    "the broken loop (K[i])": (lesson_03._scores_loop_bug, "loop_index"),
    "K @ Q.T": (lambda Q, K: K @ Q.T, "transposed"),
    "j over the queries": (_scores_square_only, None),
    "last key skipped": (_scores_last_key_skipped, None),
    "= instead of +=": (_scores_product_not_sum, None),
}


@pytest.mark.parametrize("form", WRONG_LOOPS)
def test_scores_loop_fails_every_wrong_loop(form):
    answer, code = WRONG_LOOPS[form]
    feedback = check("scores_loop", answer, quiet=True)
    assert not feedback.passed, form
    if code is not None:
        assert feedback.mistake == code, feedback.message


def test_scores_loop_asks_only_what_its_check_judges():
    """The exercise says the check compares results (so the one-line product passes) and
    promises no way to tell a loop from Q @ K.T."""
    assert check("scores_loop", lambda Q, K: Q @ K.T, quiet=True).passed
    nb = json.loads((ROOT / "solutions" / "03_scoring.ipynb").read_text("utf-8"))
    text = " ".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    assert "so the loop is what passes" not in text
    assert "compares results" in text


# ---- 15.3: the expected answer is true as the question states it ---------------------------
def test_ln_predict_scale_is_unchanged_to_the_decimals_asked_and_not_exactly():
    exercise = registry.get("ln_predict_scale")
    nb = json.loads((ROOT / "solutions" / f"{exercise.lesson}.ipynb").read_text("utf-8"))
    cells = ["".join(c["source"]) for c in nb["cells"]]
    question = next(c for c in cells if "`ln_predict_scale`" in c)
    assert "to the three decimals the lesson prints" in question
    # the notebook's experiment, recomputed here (its own seed)
    rng = np.random.default_rng(37)
    X = rng.normal(size=(3, 4))
    params = attnlib.init_block(4, 16, rng=rng, std=1.0)
    weights = [attnlib.transformer_block(r, n_heads=2, **params)[1] for r in (X, 10 * X)]
    assert exercise.expected == "unchanged"
    np.testing.assert_array_equal(np.round(weights[0], 3), np.round(weights[1], 3))
    change = np.abs(weights[1] - weights[0]).max()
    assert 0 < change < 5e-4  # eps: not exactly unchanged, hence "to three decimals"


def _narrow_floats(value):
    items = value if isinstance(value, (tuple, list)) else (value,)
    return any(isinstance(v, np.ndarray) and v.dtype.name in ("float16", "float32") for v in items)


def test_every_function_fed_a_narrow_float_judges_its_dtype():
    about_a_dtype = [
        e.id
        for e in registry.exercises().values()
        if e.kind == "function" and any(_narrow_floats(case) for case in e.cases)
    ]
    assert {"softmax_half", "attention_half_fix"} <= set(about_a_dtype)
    assert [i for i in about_a_dtype if registry.get(i).dtype is None] == []
    assert registry.get("float16_weights").dtype == "float16"
