"""Checkers of lessons 10 (multi-head and cross-attention) and 11 (gradients): accept the
reference answer written as the solutions write it, name every mistake they know, and
say "not attempted" for the stub."""

import numpy as np
import pytest

from attnlib.checkers import lesson_10 as L10
from attnlib.checkers import lesson_11 as L11
from attnlib.selfcheck import MISTAKES, exercise_ids
from tests.checker_cases import (
    assert_mistake,
    assert_not_attempted,
    assert_passed,
    softmax_rows,
    verdict,
)

IDS = [
    "heads_by_hand",
    "heads_split",
    "heads_cross_shape",
    "heads_fix_merge",
    "grad_jacobian_by_hand",
    "grad_softmax_jacobian",
    "grad_predict_saturation",
    "grad_fix_backward",
]
NEW_MISTAKES = [
    "reshape_no_transpose",
    "heads_interleaved",
    "merge_no_transpose",
    "no_output_projection",
    "cross_keys_from_queries",
    "jacobian_missing_outer",
    "jacobian_sign",
    "softmax_skipped",
    "backward_unscaled",
    "saturated_gradients",
]


def test_every_id_is_registered():
    assert set(IDS) <= set(exercise_ids())


def test_new_mistake_codes_have_hints():
    for code in NEW_MISTAKES:
        assert MISTAKES[code]


@pytest.mark.parametrize("exercise_id", IDS)
def test_stub_is_not_attempted(exercise_id):
    assert_not_attempted(exercise_id)


@pytest.mark.parametrize("exercise_id", ["heads_split", "heads_fix_merge", "grad_fix_backward"])
def test_function_returning_ellipsis_is_not_attempted(exercise_id):
    def stub(*args):
        return ...

    assert verdict(exercise_id, stub).status == "not attempted"


# ---- reference answers written the way the solution notebooks write them -----------------


def split(Z, n_heads):
    n, width = Z.shape
    return Z.reshape(n, n_heads, width // n_heads).transpose(1, 0, 2)


def multi_head(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads, merge="right", root="d_k"):
    Q, K, V = split(X_q @ W_Q, n_heads), split(X_kv @ W_K, n_heads), split(X_kv @ W_V, n_heads)
    d = {"d_k": Q.shape[-1], "d_model": X_q.shape[-1], "none": 1}[root]
    heads = softmax_rows(Q @ K.transpose(0, 2, 1) / np.sqrt(d)) @ V
    if merge == "right":
        merged = heads.transpose(1, 0, 2).reshape(X_q.shape[0], -1)
    else:
        merged = heads.reshape(X_q.shape[0], -1)
    return merged @ W_O


def backward(Q, K, V, dOutput, mistake=None):
    d_k = Q.shape[-1]
    A = softmax_rows(Q @ K.T / np.sqrt(d_k))
    dV = A.T @ dOutput
    dA = dOutput @ V.T
    dS = A * (dA - (A * dA).sum(axis=1, keepdims=True))
    if mistake == "jacobian_missing_outer":
        dS = A * dA
    if mistake == "softmax_skipped":
        dS = dA
    if mistake == "backward_unscaled":
        return dS @ K, dS.T @ Q, dV
    width = V.shape[1] if mistake == "wrong_d" else d_k
    return dS @ K / np.sqrt(width), dS.T @ Q / np.sqrt(width), dV


# ---- lesson 10 ------------------------------------------------------------------------------


def test_heads_by_hand():
    assert_passed("heads_by_hand", [[3, 4], [9, 10]])
    assert_passed("heads_by_hand", np.array([[3.0, 4.0], [9.0, 10.0]]))
    assert_mistake("heads_by_hand", [[5, 6], [7, 8]], "reshape_no_transpose")
    assert_mistake("heads_by_hand", [[2, 5], [8, 11]], "heads_interleaved")
    other = verdict("heads_by_hand", [[3, 4], [9, 11]])
    assert (other.passed, other.mistake) == (False, None)
    assert "entry [1, 1] is 11, expected 10" in other.message
    assert "shape (3,), expected (2, 2)" in verdict("heads_by_hand", [3, 4, 9]).message


def test_heads_split():
    assert_passed("heads_split", split)
    assert_mistake("heads_split", lambda X, h: X.reshape(h, X.shape[0], -1), "reshape_no_transpose")
    assert_mistake(
        "heads_split",
        lambda X, h: X.reshape(X.shape[0], -1, h).transpose(2, 0, 1),
        "heads_interleaved",
    )
    assert verdict("heads_split", lambda X, h: X).mistake is None
    raised = verdict("heads_split", lambda X, h: 1 / 0)
    assert raised.status == "error" and "ZeroDivisionError" in raised.message


def test_heads_cross_shape():
    assert_passed("heads_cross_shape", (4, 6, 9))
    assert_passed("heads_cross_shape", [4, 6, 9])
    assert_mistake("heads_cross_shape", (4, 9, 6), "transposed")
    assert_mistake("heads_cross_shape", (4, 6, 6), "cross_keys_from_queries")
    assert verdict("heads_cross_shape", (6, 9)).mistake is None
    assert "not one of the options" in verdict("heads_cross_shape", (1, 2, 3)).message


def test_heads_fix_merge():
    assert_passed("heads_fix_merge", multi_head)
    assert_mistake(
        "heads_fix_merge", lambda *a: multi_head(*a, merge="reshape only"), "merge_no_transpose"
    )
    assert_mistake("heads_fix_merge", lambda *a: multi_head(*a, root="d_model"), "wrong_d")
    assert_mistake("heads_fix_merge", lambda *a: multi_head(*a, root="none"), "unscaled")

    def no_projection(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads):
        return multi_head(X_q, X_kv, W_Q, W_K, W_V, np.eye(W_O.shape[0]), n_heads)

    assert_mistake("heads_fix_merge", no_projection, "no_output_projection")

    def split_without_transpose(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads):
        def bad(Z):
            return Z.reshape(n_heads, Z.shape[0], -1)

        Q, K, V = bad(X_q @ W_Q), bad(X_kv @ W_K), bad(X_kv @ W_V)
        heads = softmax_rows(Q @ K.transpose(0, 2, 1) / np.sqrt(Q.shape[-1])) @ V
        return heads.transpose(1, 0, 2).reshape(X_q.shape[0], -1) @ W_O

    assert_mistake("heads_fix_merge", split_without_transpose, "reshape_no_transpose")


def test_lesson_10_mistake_variants_are_really_wrong():
    for code, variant in L10.FIX_MISTAKES:
        assert verdict("heads_fix_merge", variant).mistake == code


# ---- lesson 11 ------------------------------------------------------------------------------

J_HAND = [[1 / 4, -1 / 8, -1 / 8], [-1 / 8, 3 / 16, -1 / 16], [-1 / 8, -1 / 16, 3 / 16]]


def test_grad_jacobian_by_hand():
    assert_passed("grad_jacobian_by_hand", J_HAND)
    assert_passed("grad_jacobian_by_hand", np.round(J_HAND, 4))  # rounded by hand
    assert_mistake("grad_jacobian_by_hand", np.diag([0.5, 0.25, 0.25]), "jacobian_missing_outer")
    assert_mistake("grad_jacobian_by_hand", -np.array(J_HAND), "jacobian_sign")
    other = verdict("grad_jacobian_by_hand", np.eye(3))
    assert (other.passed, other.mistake) == (False, None)
    assert "J: entry [0, 0] is 1, expected 0.25" in other.message
    assert verdict("grad_jacobian_by_hand", None).status == "not attempted"


def test_grad_softmax_jacobian():
    assert_passed("grad_softmax_jacobian", lambda p: np.diag(p) - np.outer(p, p))
    assert_mistake("grad_softmax_jacobian", np.diag, "jacobian_missing_outer")
    assert_mistake("grad_softmax_jacobian", lambda p: np.outer(p, p) - np.diag(p), "jacobian_sign")
    assert verdict("grad_softmax_jacobian", lambda p: -np.outer(p, p)).mistake is None


def test_grad_predict_saturation():
    assert_passed("grad_predict_saturation", "shrinks")
    assert_passed("grad_predict_saturation", " Shrinks ")
    assert_mistake("grad_predict_saturation", "grows", "saturated_gradients")
    assert_mistake("grad_predict_saturation", "unchanged", "saturated_gradients")


@pytest.mark.parametrize(
    "mistake", ["jacobian_missing_outer", "softmax_skipped", "backward_unscaled", "wrong_d"]
)
def test_grad_fix_backward_names_each_mistake(mistake):
    assert_mistake("grad_fix_backward", lambda Q, K, V, G: backward(Q, K, V, G, mistake), mistake)


def test_grad_fix_backward():
    assert_passed("grad_fix_backward", backward)
    assert_passed("grad_fix_backward", L11._variant(None))
    wrong_order = verdict("grad_fix_backward", lambda Q, K, V, G: backward(Q, K, V, G)[::-1])
    assert (wrong_order.passed, wrong_order.mistake) == (False, None)
    one = verdict("grad_fix_backward", lambda Q, K, V, G: backward(Q, K, V, G)[0])
    assert "expected a tuple of 3" in one.message
