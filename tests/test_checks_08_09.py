"""Checkers of lessons 08 (why sqrt(d_k)) and 09 (masking): accept the reference answer,
name every mistake they know, and say "not attempted" for the stub."""

import numpy as np
import pytest

from attnlib.checkers import lesson_08 as L8
from attnlib.checkers import lesson_09 as L9
from attnlib.selfcheck import MISTAKES, exercise_ids
from tests.checker_cases import (
    assert_mistake,
    assert_not_attempted,
    assert_passed,
    softmax_rows,
    verdict,
)

IDS = [
    "sqrt_variance",
    "sqrt_scaled_from_x",
    "sqrt_predict_saturation",
    "sqrt_fix_self_attention",
    "mask_causal",
    "mask_weights",
    "mask_fix_attention",
    "mask_predict_empty_row",
]


def test_every_id_is_registered():
    assert set(IDS) <= set(exercise_ids())


def test_new_mistake_codes_have_hints():
    for code in [
        "spread_not_squared",
        "variance_divided_by_root",
        "saturation",
        "mask_after_softmax",
        "inverted_mask",
        "causal_excludes_self",
        "mask_ignored",
        "empty_row",
    ]:
        assert MISTAKES[code]


@pytest.mark.parametrize("exercise_id", IDS)
def test_stub_is_not_attempted(exercise_id):
    assert_not_attempted(exercise_id)


# ---- reference answers written the way the solution notebooks write them -----------------


def scaled_scores_from_x(X, W_Q, W_K):
    Q, K = X @ W_Q, X @ W_K
    return Q @ K.T / np.sqrt(Q.shape[-1])


def self_attention(X, W_Q, W_K, W_V):
    Q, K, V = X @ W_Q, X @ W_K, X @ W_V
    return softmax_rows(Q @ K.T / np.sqrt(Q.shape[-1])) @ V


def masked_attention(Q, K, V, mask):
    S = np.where(mask, Q @ K.T / np.sqrt(K.shape[-1]), -np.inf)
    return softmax_rows(S) @ V


def masked_attention_big_negative(Q, K, V, mask):
    S = Q @ K.T / np.sqrt(K.shape[-1]) + np.where(mask, 0.0, -1e9)  # additive form
    return softmax_rows(S) @ V


@pytest.mark.parametrize(
    ("exercise_id", "answer"),
    [
        ("sqrt_variance", (72, 2.25)),
        ("sqrt_variance", [72.0, 2.25]),
        ("sqrt_scaled_from_x", scaled_scores_from_x),
        ("sqrt_predict_saturation", "rises"),
        ("sqrt_predict_saturation", " Rises "),
        ("sqrt_fix_self_attention", self_attention),
        ("mask_causal", [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]),
        ("mask_causal", np.tril(np.ones((4, 4), dtype=bool))),
        ("mask_weights", L9.WEIGHTS_CAUSAL),
        ("mask_weights", np.round(L9.WEIGHTS_CAUSAL, 3)),
        ("mask_fix_attention", masked_attention),
        ("mask_fix_attention", masked_attention_big_negative),
        ("mask_predict_empty_row", "nan"),
    ],
)
def test_reference_answer_passes(exercise_id, answer):
    assert_passed(exercise_id, answer)


# ---- every named mistake is recognised by its code --------------------------------------------


def _mistake_cases():
    cases = [
        ("sqrt_variance", (48, 1.5), "spread_not_squared"),
        ("sqrt_variance", (72, 72 / np.sqrt(32)), "variance_divided_by_root"),
        ("sqrt_variance", (72, 72), "unscaled"),
        ("sqrt_predict_saturation", "stays", "saturation"),
        ("sqrt_predict_saturation", "falls", "saturation"),
        ("mask_causal", np.triu(np.ones((4, 4))), "causal_sees_future"),
        ("mask_causal", np.tril(np.ones((4, 4)), k=-1), "causal_excludes_self"),
        ("mask_causal", ~L9.CAUSAL_4, "inverted_mask"),
        ("mask_predict_empty_row", "zeros", "empty_row"),
        ("mask_predict_empty_row", "uniform", "empty_row"),
    ]
    cases += [("sqrt_scaled_from_x", f, code) for code, f in L8.SCALED_FROM_X_MISTAKES]
    cases += [
        ("sqrt_fix_self_attention", f, code)
        for code, f in L8.SELF_ATTENTION_MISTAKES
        if f is not None
    ]
    cases += [("mask_fix_attention", f, code) for code, f in L9.MASKED_ATTENTION_MISTAKES if f]
    S, C = L9.S_SCALED, L9.CAUSAL_3
    cases += [
        ("mask_weights", softmax_rows(S) * C, "mask_after_softmax"),
        ("mask_weights", softmax_rows(S), "mask_ignored"),
        ("mask_weights", softmax_rows(np.where(C, L9.S, -np.inf)), "unscaled"),
        ("mask_weights", softmax_rows(np.where(C.T, S, -np.inf)), "transposed"),
        ("mask_weights", L9.WEIGHTS_CAUSAL.T, "transposed"),
    ]
    return cases


@pytest.mark.parametrize(("exercise_id", "answer", "code"), _mistake_cases())
def test_named_mistake_is_recognised(exercise_id, answer, code):
    assert_mistake(exercise_id, answer, code)


def test_inverted_mask_weights_are_named_even_with_a_nan_row():
    with np.errstate(invalid="ignore"):
        inverted = softmax_rows(np.where(~L9.CAUSAL_3, L9.S_SCALED, -np.inf))
    assert np.isnan(inverted[2]).all()
    assert verdict("mask_weights", inverted).mistake == "inverted_mask"


def test_mask_fix_attention_names_overflow_of_a_naive_exp():
    def no_max(Q, K, V, mask):
        S = np.where(mask, Q @ K.T / np.sqrt(K.shape[-1]), -np.inf)
        return np.exp(S) / np.exp(S).sum(axis=-1, keepdims=True) @ V

    assert verdict("mask_fix_attention", no_max).mistake == "overflow"


def test_the_broken_functions_of_the_notebooks_are_named():
    def broken_self_attention(X, W_Q, W_K, W_V):  # as in solutions/08_why_sqrt_dk.ipynb
        Q, K, V = X @ W_Q, X @ W_K, X @ W_V
        return softmax_rows(Q @ K.T / np.sqrt(X.shape[1])) @ V

    def broken_masked_attention(Q, K, V, mask):  # as in solutions/09_masking.ipynb
        A = softmax_rows(Q @ K.T / np.sqrt(K.shape[-1]))
        return (A * mask) @ V

    assert verdict("sqrt_fix_self_attention", broken_self_attention).mistake == "wrong_d"
    assert verdict("mask_fix_attention", broken_masked_attention).mistake == "mask_after_softmax"


# ---- other wrong answers: no mistake code, a message that shows where -----------------------


def test_unknown_wrong_value_shows_the_first_wrong_entry():
    feedback = verdict("sqrt_variance", (70, 2.25))
    assert (feedback.passed, feedback.mistake) == (False, None)
    assert "var_dot" in feedback.message and "expected 72" in feedback.message


def test_wrong_shape_mask_says_the_shapes():
    feedback = verdict("mask_causal", np.tril(np.ones((3, 3))))
    assert feedback.mistake is None
    assert "shape (3, 3), expected (4, 4)" in feedback.message


def test_unknown_option_lists_the_options():
    feedback = verdict("mask_predict_empty_row", "infinity")
    assert "'nan', 'zeros', 'uniform'" in feedback.message


def test_function_that_raises_is_one_line():
    def raises(Q, K, V, mask):
        raise RuntimeError("oops")

    feedback = verdict("mask_fix_attention", raises)
    assert feedback.status == "error" and "RuntimeError: oops" in feedback.message
    assert "\n" not in feedback.message
