"""Checkers of lessons 04 (scaling), 05 (softmax), 06 (blending values) and 07 (the whole
formula): each accepts the reference answer, names every mistake it knows with its code,
says "not attempted" for the stub, and answers odd input in one line.

Wrong answers are written the way a learner would write them, not taken from the checkers.
The find-the-bug functions of the notebooks are tested against the checker they feed,
including the required ``attention`` checker in formula.py.
"""

import ast
import json
from pathlib import Path

import numpy as np
import pytest

from attnlib import example as ex
from attnlib.selfcheck import MISTAKES, exercise_ids
from tests.checker_cases import (
    assert_mistake,
    assert_not_attempted,
    assert_passed,
    naive_softmax,
    softmax_rows,
    verdict,
)

ROOT = Path(__file__).resolve().parent.parent
LESSONS = ("04_scaling", "05_softmax", "06_blending_values", "07_the_whole_formula")

Q, K, V = ex.X @ ex.W_Q, ex.X @ ex.W_K, ex.X @ ex.W_V  # (3, 2) each
S = Q @ K.T  # (3, 3)
d_k = ex.d_k

IDS = [
    "scaling_birds_eat",
    "scaling_predict",
    "scaling_birds_weights",
    "scaling_fix",
    "softmax_eat_row",
    "softmax_predict_shift",
    "softmax_predict_double",
    "softmax_fix_axis",
    "blend_birds_by_hand",
    "blend_even_weights",
    "blend_fix",
    "formula_shapes",
    "formula_self_attention",
    "formula_predict_reorder",
]


# ---- learner-style code (softmax_rows and naive_softmax come from tests.checker_cases) -------


def attention(Q, K, V):
    return softmax_rows(Q @ K.T / np.sqrt(Q.shape[-1])) @ V


def self_attention(X, W_Q, W_K, W_V):
    return attention(X @ W_Q, X @ W_K, X @ W_V)


def weights_from_scores(S, d_k):
    return softmax_rows(S / np.sqrt(d_k))


REFERENCE = {
    "scaling_birds_eat": 9 / np.sqrt(2),
    "scaling_predict": "smaller",
    "scaling_birds_weights": softmax_rows(S[0] / np.sqrt(2)),
    "scaling_fix": lambda Q, K: Q @ K.T / np.sqrt(Q.shape[-1]),
    "softmax_eat_row": softmax_rows(S[1] / np.sqrt(2)),
    "softmax_predict_shift": "same",
    "softmax_predict_double": "sharper",
    "softmax_fix_axis": weights_from_scores,
    "blend_birds_by_hand": [0.013 * 0 + 0.882 * 4 + 0.106 * 2, 0.013 * 4 + 0.882 * 2 + 0.106 * 4],
    "blend_even_weights": [(0 + 4 + 2) / 3, (4 + 2 + 4) / 3],
    "blend_fix": lambda A, V: A @ V,
    "formula_shapes": ((3, 5), (3, 2)),
    "formula_self_attention": self_attention,
    "formula_predict_reorder": "same",
}

# Answers a learner would also get right: rounded by hand, another spelling, a list.
ALSO_RIGHT = [
    ("scaling_birds_eat", 6.36),
    ("scaling_birds_eat", 9 / 1.41),  # by hand with the rounded root
    ("scaling_predict", " Smaller"),
    ("scaling_birds_weights", [0.013, 0.882, 0.106]),  # the document's rounded weights
    ("softmax_eat_row", [0.576, 0.140, 0.284]),
    ("blend_birds_by_hand", (3.738, 2.237)),  # from the unrounded weights
    ("blend_even_weights", [2, 3.33]),
    ("formula_shapes", [[3, 5], [3, 2]]),
    ("formula_shapes", (np.array([3, 5]), (3, 2))),
    ("formula_shapes", np.array([[3, 5], [3, 2]])),
    ("softmax_fix_axis", lambda S, d_k: softmax_rows(np.asarray(S) / d_k**0.5)),
]


def scaled_by(divisor):
    """Self-attention whose scores are divided by divisor(X, Q, V)."""

    def f(X, W_Q, W_K, W_V):
        Q, K, V = X @ W_Q, X @ W_K, X @ W_V
        return softmax_rows(Q @ K.T / divisor(X, Q, V)) @ V

    return f


WRONG = [
    # 04: one scaled score
    ("scaling_birds_eat", 9, "unscaled"),
    ("scaling_birds_eat", 9 / 2, "divided_by_d_k"),
    ("scaling_birds_eat", 9 * np.sqrt(2), "multiplied"),
    ("scaling_predict", "larger", "score_gaps"),
    ("scaling_birds_weights", [0.002, 0.950, 0.047], "unscaled"),
    ("scaling_birds_weights", softmax_rows(S[0] / 2), "divided_by_d_k"),
    ("scaling_birds_weights", softmax_rows(S[0] * np.sqrt(2)), "multiplied"),
    ("scaling_birds_weights", softmax_rows(S[:, 0] / np.sqrt(2)), "transposed"),
    # 04: the find-the-bug function, as the notebook shows it, and other slips
    ("scaling_fix", lambda Q, K: Q @ K.T / np.sqrt(len(Q)), "counted_tokens"),
    ("scaling_fix", lambda Q, K: Q @ K.T / np.sqrt(K.shape[0]), "counted_tokens"),
    ("scaling_fix", lambda Q, K: Q @ K.T, "unscaled"),
    ("scaling_fix", lambda Q, K: Q @ K.T / Q.shape[1], "divided_by_d_k"),
    ("scaling_fix", lambda Q, K: Q @ K.T * np.sqrt(Q.shape[1]), "multiplied"),
    ("scaling_fix", lambda Q, K: K @ Q.T / np.sqrt(Q.shape[1]), "transposed"),
    # 05
    ("softmax_eat_row", [0.665, 0.090, 0.245], "unscaled"),
    ("softmax_eat_row", softmax_rows(S[1] / 2), "divided_by_d_k"),
    ("softmax_eat_row", softmax_rows(S[1] * np.sqrt(2)), "multiplied"),
    ("softmax_eat_row", softmax_rows(S[:, 1] / np.sqrt(2)), "wrong_axis"),
    ("softmax_predict_shift", "sharper", "score_gaps"),
    ("softmax_predict_shift", "flatter", "score_gaps"),
    ("softmax_predict_double", "same", "score_gaps"),
    ("softmax_predict_double", "flatter", "score_gaps"),
    ("softmax_fix_axis", lambda S, d_k: softmax_rows((S / np.sqrt(d_k)).T).T, "wrong_axis"),
    ("softmax_fix_axis", lambda S, d_k: naive_softmax(S / np.sqrt(d_k)), "overflow"),
    ("softmax_fix_axis", lambda S, d_k: weights_from_scores(S, d_k).T, "transposed"),
    ("softmax_fix_axis", lambda S, d_k: softmax_rows(S), "unscaled"),
    ("softmax_fix_axis", lambda S, d_k: softmax_rows(S / d_k), "divided_by_d_k"),
    ("softmax_fix_axis", lambda S, d_k: softmax_rows(S * np.sqrt(d_k)), "multiplied"),
    # 06
    (
        "blend_birds_by_hand",
        [0.013 * 0 + 0.576 * 4 + 0.140 * 2, 0.013 * 4 + 0.576 * 2 + 0.140 * 4],
        "transposed",
    ),
    ("blend_birds_by_hand", np.array([0.002, 0.950, 0.047]) @ V, "unscaled"),
    ("blend_even_weights", [0 + 4 + 2, 4 + 2 + 4], "not_normalised"),
    ("blend_fix", lambda A, V: A.T @ V, "transposed"),
    ("blend_fix", lambda A, V: np.ones_like(A) @ V, "not_normalised"),
    # 07
    ("formula_shapes", ((5, 3), (3, 2)), "transposed"),
    ("formula_shapes", ((3, 5), (3, 4)), "output_shape"),
    ("formula_shapes", ((3, 5), (5, 2)), "output_shape"),
    ("formula_self_attention", lambda X, a, b, c: attention(X @ b, X @ a, X @ c), "swapped_qk"),
    ("formula_self_attention", lambda X, a, b, c: attention(X @ b, X @ b, X @ c), "swapped_qk"),
    ("formula_self_attention", scaled_by(lambda X, Q, V: np.sqrt(X.shape[1])), "wrong_d"),
    ("formula_self_attention", scaled_by(lambda X, Q, V: np.sqrt(V.shape[1])), "wrong_d"),
    ("formula_self_attention", scaled_by(lambda X, Q, V: 1), "unscaled"),
    ("formula_self_attention", scaled_by(lambda X, Q, V: Q.shape[1]), "divided_by_d_k"),
    ("formula_self_attention", scaled_by(lambda X, Q, V: Q.shape[1] ** -0.5), "multiplied"),
    (
        "formula_self_attention",
        lambda X, a, b, c: softmax_rows((X @ a) @ (X @ b).T / np.sqrt(a.shape[1])).T @ (X @ c),
        "transposed",
    ),
    (
        "formula_self_attention",
        lambda X, a, b, c: (
            naive_softmax((X @ a) @ (X @ b).T / np.sqrt(a.shape[1]), axis=0) @ (X @ c)
        ),
        "wrong_axis",
    ),
    (
        "formula_self_attention",
        lambda X, a, b, c: naive_softmax((X @ a) @ (X @ b).T / np.sqrt(a.shape[1])) @ (X @ c),
        "overflow",
    ),
    ("formula_predict_reorder", "rows reordered", "order_matters"),
    ("formula_predict_reorder", "different", "order_matters"),
]


def test_every_id_is_registered():
    assert set(IDS) <= set(exercise_ids())
    assert set(REFERENCE) == set(IDS)


def test_new_mistake_codes_have_hints():
    for code in ["score_gaps", "counted_tokens", "not_normalised", "output_shape", "order_matters"]:
        assert MISTAKES[code]


@pytest.mark.parametrize("exercise_id", IDS)
def test_reference_answer_passes(exercise_id):
    assert_passed(exercise_id, REFERENCE[exercise_id])


@pytest.mark.parametrize(("exercise_id", "answer"), ALSO_RIGHT)
def test_other_right_answers_pass(exercise_id, answer):
    feedback = verdict(exercise_id, answer)
    assert feedback.passed, feedback.message


@pytest.mark.parametrize(("exercise_id", "answer", "code"), WRONG)
def test_named_mistake_is_recognised(exercise_id, answer, code):
    assert_mistake(exercise_id, answer, code)


@pytest.mark.parametrize("exercise_id", IDS)
def test_stub_is_not_attempted(exercise_id):
    stub = (lambda *args: ...) if callable(REFERENCE[exercise_id]) else ...
    assert_not_attempted(exercise_id, stub)


def test_other_wrong_answers_show_the_first_wrong_entry():
    feedback = verdict("scaling_birds_eat", 7)
    assert (feedback.mistake, feedback.status) == (None, "wrong")
    assert "is 7, expected 6.36" in feedback.message
    feedback = verdict("blend_even_weights", [2, 3])
    assert "entry [1] is 3, expected 3.333" in feedback.message
    feedback = verdict("formula_shapes", ((2, 2), (3, 2)))
    assert "weights_shape is (2, 2), expected (3, 5)" in feedback.message


@pytest.mark.parametrize(
    ("exercise_id", "answer", "says"),
    [
        ("scaling_birds_eat", {6.36}, "is a set"),
        ("scaling_birds_eat", "6.36", "wants numbers"),
        ("scaling_birds_weights", [0.1, 0.9], "has shape (2,), expected (3,)"),
        ("softmax_eat_row", [[0.5, 0.5], [1]], "not a grid of numbers"),
        ("scaling_predict", "bigger", "not one of the options: 'larger', 'smaller'"),
        ("softmax_predict_shift", 3, "not one of the options"),
        ("formula_shapes", (3, 5), "expected a pair (weights_shape, output_shape)"),
        ("formula_shapes", ("3, 5", (3, 2)), "a tuple of whole numbers"),
        ("formula_shapes", ((3.5, 5), (3, 2)), "a tuple of whole numbers"),
        ("scaling_fix", np.ones((3, 3)), "expected a function"),
        ("scaling_fix", lambda Q, K: 1 / 0, "raised ZeroDivisionError"),
        ("softmax_fix_axis", lambda S, d_k: None, "returned None"),
        ("blend_fix", lambda A, V: (A @ V, A), "returned a tuple of 2"),
        ("formula_self_attention", lambda X: X, "raised TypeError"),
    ],
)
def test_odd_answers_get_one_line_and_no_traceback(exercise_id, answer, says):
    feedback = verdict(exercise_id, answer)
    assert not feedback.passed
    assert feedback.status in ("wrong", "error")
    assert says in feedback.message
    assert "\n" not in feedback.message and "Traceback" not in feedback.message


# ---- the find-the-bug functions of the notebooks, against the checkers they feed ---------


def notebook_function(lesson, name):
    """The function ``name`` exactly as the solution notebook of ``lesson`` defines it."""
    nb = json.loads((ROOT / "solutions" / f"{lesson}.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        for node in ast.parse("".join(cell["source"])).body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                namespace = {"np": np}
                exec(compile(ast.Module([node], []), lesson, "exec"), namespace)
                return namespace[name]
    raise LookupError(f"{name} is not defined in solutions/{lesson}.ipynb")


@pytest.mark.parametrize(
    ("lesson", "name", "exercise_id", "code"),
    [
        ("04_scaling", "scaled_scores_broken", "scaling_fix", "counted_tokens"),
        ("05_softmax", "weights_from_scores_broken", "softmax_fix_axis", "wrong_axis"),
        ("06_blending_values", "blend_broken", "blend_fix", "transposed"),
        ("07_the_whole_formula", "broken_attention", "attention", "wrong_d"),
    ],
)
def test_each_broken_function_of_the_notebooks_is_named(lesson, name, exercise_id, code):
    broken = notebook_function(lesson, name)
    assert verdict(exercise_id, broken).mistake == code


@pytest.mark.parametrize(
    ("lesson", "name", "exercise_id"),
    [
        ("04_scaling", "fixed_scaled_scores", "scaling_fix"),
        ("05_softmax", "softmax", "softmax"),
        ("05_softmax", "weights_from_scores", "softmax_fix_axis"),
        ("06_blending_values", "blend", "blend_fix"),
        ("07_the_whole_formula", "attention", "attention"),
    ],
)
def test_each_repaired_function_of_the_notebooks_passes(lesson, name, exercise_id):
    assert verdict(exercise_id, notebook_function(lesson, name)).passed


def test_lesson_07_broken_attention_shows_its_second_bug_once_the_first_is_fixed():
    def root_fixed(Q, K, V):  # the learner repaired the root but not the overflow
        e = np.exp(Q @ K.T / np.sqrt(Q.shape[-1]))
        return e / e.sum(axis=-1, keepdims=True) @ V

    def max_fixed(Q, K, V):  # the learner repaired the overflow but not the root
        S = Q @ K.T / np.sqrt(V.shape[-1])
        return softmax_rows(S) @ V

    assert verdict("attention", root_fixed).mistake == "overflow"
    assert verdict("attention", max_fixed).mistake == "wrong_d"
    assert verdict("attention", attention).passed


def test_required_ids_accept_the_answers_of_these_notebooks():
    A = softmax_rows(S / np.sqrt(d_k))
    assert verdict("scaled_scores", S / np.sqrt(d_k)).passed
    assert verdict("weights", A).passed
    assert verdict("output", A @ V).passed
    assert verdict("softmax", softmax_rows).passed


# ---- the notebooks use these ids: at least three exercises per lesson --------------------


def check_ids(path):
    nb = json.loads(path.read_text(encoding="utf-8"))
    ids = []
    for cell in nb["cells"]:
        if cell["cell_type"] == "code":
            source = "".join(cell["source"])
            ids += [line.split('"')[1] for line in source.splitlines() if line.startswith("check(")]
    return ids


@pytest.mark.parametrize("lesson", LESSONS)
def test_each_lesson_has_registered_exercises(lesson):
    ids = check_ids(ROOT / "solutions" / f"{lesson}.ipynb")
    assert len(ids) >= 4, ids
    assert set(ids) <= set(exercise_ids())
    assert ids == check_ids(ROOT / "exercises" / f"{lesson}.ipynb")
