"""The checkers of lessons 04-12, in one style: tables of answers written the way a learner
writes them (never taken from the checkers), each with the verdict it must get.

- ``RIGHT``: answers that pass (the solution notebooks' way, rounded by hand, another form);
- ``WRONG``: answers that are wrong in a way the exercise names, with the mistake code;
- ``OTHER``: wrong answers no mistake explains, with a piece of the one-line message.

The generic test over every exercise (tests/test_exercises.py) already checks each
exercise's declared data (reference, stub, each mistake); these tables check that the data
describes what learners really write. The find-the-bug functions of the solution notebooks
are tested against the exercise they feed. Lessons 01-03 and the formula ids are in
tests/test_selfcheck.py.
"""

import ast
import json

import numpy as np
import pytest

import attnlib
from attnlib import example as ex
from attnlib.checkers import lesson_09 as L9
from attnlib.checkers import lesson_10 as L10
from attnlib.checkers import lesson_11 as L11
from attnlib.checkers import lesson_12 as L12
from tests.checker_cases import (
    ROOT,
    assert_mistake,
    assert_passed,
    naive_softmax,
    softmax_rows,
    verdict,
)

Q, K, V = ex.X @ ex.W_Q, ex.X @ ex.W_K, ex.X @ ex.W_V  # (3, 2) each, computed here
S = Q @ K.T  # (3, 3)
d_k = ex.d_k


# ---- learner-style code (softmax_rows and naive_softmax come from tests.checker_cases) -------


def attention(Q, K, V):
    return softmax_rows(Q @ K.T / np.sqrt(Q.shape[-1])) @ V


def self_attention(X, W_Q, W_K, W_V):
    return attention(X @ W_Q, X @ W_K, X @ W_V)


def weights_from_scores(S, d_k):
    return softmax_rows(S / np.sqrt(d_k))


def scaled_by(divisor):
    """Self-attention whose scores are divided by divisor(X, Q, V)."""

    def f(X, W_Q, W_K, W_V):
        Q, K, V = X @ W_Q, X @ W_K, X @ W_V
        return softmax_rows(Q @ K.T / divisor(X, Q, V)) @ V

    return f


def scaled_scores_from_x(X, W_Q, W_K):
    Q, K = X @ W_Q, X @ W_K
    return Q @ K.T / np.sqrt(Q.shape[-1])


def masked_attention(Q, K, V, mask):
    S = np.where(mask, Q @ K.T / np.sqrt(K.shape[-1]), -np.inf)
    return softmax_rows(S) @ V


def masked_attention_big_negative(Q, K, V, mask):
    S = Q @ K.T / np.sqrt(K.shape[-1]) + np.where(mask, 0.0, -1e9)  # additive form
    return softmax_rows(S) @ V


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


def merge_split_without_transpose(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads):
    def bad(Z):
        return Z.reshape(n_heads, Z.shape[0], -1)

    Q, K, V = bad(X_q @ W_Q), bad(X_kv @ W_K), bad(X_kv @ W_V)
    heads = softmax_rows(Q @ K.transpose(0, 2, 1) / np.sqrt(Q.shape[-1])) @ V
    return heads.transpose(1, 0, 2).reshape(X_q.shape[0], -1) @ W_O


def no_projection(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads):
    return multi_head(X_q, X_kv, W_Q, W_K, W_V, np.eye(W_O.shape[0]), n_heads)


def reference_update(m_old, l_old, block):
    m_new = max(m_old, float(block.max()))
    return m_new, l_old * np.exp(m_old - m_new) + np.exp(block - m_new).sum()


def blocked_attention(Q, K, V, block_size, rescale_l=True, rescale_a=True, inverted=False):
    n_q, d_k = Q.shape
    m = np.full((n_q, 1), -np.inf)
    l_sum = np.zeros((n_q, 1))
    a_sum = np.zeros((n_q, V.shape[1]))
    for start in range(0, K.shape[0], block_size):
        S_b = Q @ K[start : start + block_size].T / np.sqrt(d_k)
        m_new = np.maximum(m, S_b.max(axis=1, keepdims=True))
        P_b = np.exp(S_b - m_new)
        old_to_new = np.exp(m_new - m) if inverted else np.exp(m - m_new)
        if inverted:
            old_to_new = np.where(np.isfinite(m), old_to_new, 0.0)
        l_sum = (l_sum * old_to_new if rescale_l else l_sum) + P_b.sum(axis=1, keepdims=True)
        a_sum = (a_sum * old_to_new if rescale_a else a_sum) + P_b @ V[start : start + block_size]
        m = m_new
    return a_sum / l_sum


def attnlib_blocked(Q, K, V, block_size):
    return attnlib.blocked_attention(Q, K, V, block_size=block_size)


def no_max(Q, K, V, block_size):
    l_sum, a_sum = 0.0, 0.0
    for s in range(0, K.shape[0], block_size):
        P_b = np.exp(Q @ K[s : s + block_size].T / np.sqrt(Q.shape[1]))
        l_sum, a_sum = l_sum + P_b.sum(axis=1, keepdims=True), a_sum + P_b @ V[s : s + block_size]
    return a_sum / l_sum


def unscaled(Q, K, V, block_size):
    return blocked_attention(Q * np.sqrt(Q.shape[1]), K, V, block_size)


def per_block(Q, K, V, block_size):
    outs = []
    for s in range(0, K.shape[0], block_size):
        S_b = Q @ K[s : s + block_size].T / np.sqrt(Q.shape[1])
        P_b = np.exp(S_b - S_b.max(axis=1, keepdims=True))
        outs.append(P_b / P_b.sum(axis=1, keepdims=True) @ V[s : s + block_size])
    return np.mean(outs, axis=0)


# ---- RIGHT: answers that pass ----------------------------------------------------------------
J_HAND = [[1 / 4, -1 / 8, -1 / 8], [-1 / 8, 3 / 16, -1 / 16], [-1 / 8, -1 / 16, 3 / 16]]
ROW_12 = np.concatenate([L12.BLOCK_1, L12.BLOCK_2])

RIGHT = [
    # 04-07, as the solution notebooks write them
    ("scaling_birds_eat", 9 / np.sqrt(2)),
    ("scaling_predict", "smaller"),
    ("scaling_birds_weights", softmax_rows(S[0] / np.sqrt(2))),
    ("scaling_fix", lambda Q, K: Q @ K.T / np.sqrt(Q.shape[-1])),
    ("softmax_eat_row", softmax_rows(S[1] / np.sqrt(2))),
    ("softmax_predict_shift", "same"),
    ("softmax_predict_double", "sharper"),
    ("softmax_fix_axis", weights_from_scores),
    ("blend_birds_by_hand", [0.013 * 0 + 0.882 * 4 + 0.106 * 2, 0.013 * 4 + 0.882 * 2 + 0.106 * 4]),
    ("blend_even_weights", [(0 + 4 + 2) / 3, (4 + 2 + 4) / 3]),
    ("blend_fix", lambda A, V: A @ V),
    ("formula_shapes", ((3, 5), (3, 2))),
    ("formula_self_attention", self_attention),
    ("formula_predict_reorder", "same"),
    # 04-07, rounded by hand, another spelling, a list
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
    # 08
    ("sqrt_variance", (72, 2.25)),
    ("sqrt_variance", [72.0, 2.25]),
    ("sqrt_scaled_from_x", scaled_scores_from_x),
    ("sqrt_predict_saturation", "rises"),
    ("sqrt_predict_saturation", " Rises "),
    ("sqrt_fix_self_attention", self_attention),
    # 09
    ("mask_causal", [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]),
    ("mask_causal", np.tril(np.ones((4, 4), dtype=bool))),
    ("mask_weights", L9.WEIGHTS_CAUSAL),
    ("mask_weights", np.round(L9.WEIGHTS_CAUSAL, 3)),
    ("mask_fix_attention", masked_attention),
    ("mask_fix_attention", masked_attention_big_negative),
    ("mask_predict_empty_row", "nan"),
    # 10
    ("heads_by_hand", [[3, 4], [9, 10]]),
    ("heads_by_hand", np.array([[3.0, 4.0], [9.0, 10.0]])),
    ("heads_split", split),
    ("heads_cross_shape", (4, 6, 9)),
    ("heads_cross_shape", [4, 6, 9]),
    ("heads_fix_merge", multi_head),
    # 11
    ("grad_jacobian_by_hand", J_HAND),
    ("grad_jacobian_by_hand", np.round(J_HAND, 4)),  # rounded by hand
    ("grad_softmax_jacobian", lambda p: np.diag(p) - np.outer(p, p)),
    ("grad_predict_saturation", "shrinks"),
    ("grad_predict_saturation", " Shrinks "),
    ("grad_fix_backward", backward),
    ("grad_fix_backward", L11._variant(None)),
    # 12
    ("cost_matrix_mib", 4096 * 4096 * 8 / 2**20),
    ("cost_matrix_mib", 128),
    ("cost_doubling", (4, 2)),
    ("online_rescale", reference_update(L12.M_OLD, L12.L_OLD, L12.BLOCK_2)),
    ("online_rescale", (3, np.exp(ROW_12 - 3).sum())),
    ("online_rescale", (3, 1.585)),  # rounded by hand
    ("blocked_fix", blocked_attention),
    ("blocked_fix", attnlib_blocked),
]

# ---- WRONG: answers wrong in a way the exercise names -----------------------------------------
S_SCALED, CAUSAL_3 = L9.S_SCALED, L9.CAUSAL_3

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
    # 08
    ("sqrt_variance", (48, 1.5), "spread_not_squared"),
    ("sqrt_variance", (72, 72 / np.sqrt(32)), "variance_divided_by_root"),
    ("sqrt_variance", (72, 72), "unscaled"),
    ("sqrt_scaled_from_x", lambda X, a, b: (X @ a) @ (X @ b).T / np.sqrt(X.shape[1]), "wrong_d"),
    ("sqrt_scaled_from_x", lambda X, a, b: (X @ a) @ (X @ b).T, "unscaled"),
    ("sqrt_scaled_from_x", lambda X, a, b: scaled_scores_from_x(X, a, b).T, "transposed"),
    ("sqrt_predict_saturation", "stays", "saturation"),
    ("sqrt_predict_saturation", "falls", "saturation"),
    ("sqrt_fix_self_attention", scaled_by(lambda X, Q, V: np.sqrt(X.shape[1])), "wrong_d"),
    ("sqrt_fix_self_attention", scaled_by(lambda X, Q, V: 1), "unscaled"),
    # 09
    ("mask_causal", np.triu(np.ones((4, 4))), "causal_sees_future"),
    ("mask_causal", np.tril(np.ones((4, 4)), k=-1), "causal_excludes_self"),
    ("mask_causal", 1 - np.tril(np.ones((4, 4))), "inverted_mask"),
    ("mask_weights", softmax_rows(S_SCALED) * CAUSAL_3, "mask_after_softmax"),
    ("mask_weights", softmax_rows(S_SCALED), "mask_ignored"),
    ("mask_weights", softmax_rows(np.where(CAUSAL_3, S, -np.inf)), "unscaled"),
    ("mask_weights", softmax_rows(np.where(CAUSAL_3.T, S_SCALED, -np.inf)), "transposed"),
    ("mask_weights", L9.WEIGHTS_CAUSAL.T, "transposed"),
    (
        "mask_fix_attention",
        lambda Q, K, V, m: (softmax_rows(Q @ K.T / np.sqrt(K.shape[-1])) * m) @ V,
        "mask_after_softmax",
    ),
    ("mask_fix_attention", lambda Q, K, V, m: masked_attention(Q, K, V, ~m), "inverted_mask"),
    ("mask_predict_empty_row", "zeros", "empty_row"),
    ("mask_predict_empty_row", "uniform", "empty_row"),
    # 10
    ("heads_by_hand", [[5, 6], [7, 8]], "reshape_no_transpose"),
    ("heads_by_hand", [[2, 5], [8, 11]], "heads_interleaved"),
    ("heads_split", lambda X, h: X.reshape(h, X.shape[0], -1), "reshape_no_transpose"),
    (
        "heads_split",
        lambda X, h: X.reshape(X.shape[0], -1, h).transpose(2, 0, 1),
        "heads_interleaved",
    ),
    ("heads_cross_shape", (4, 9, 6), "transposed"),
    ("heads_cross_shape", (4, 6, 6), "cross_keys_from_queries"),
    ("heads_fix_merge", lambda *a: multi_head(*a, merge="reshape only"), "merge_no_transpose"),
    ("heads_fix_merge", lambda *a: multi_head(*a, root="d_model"), "wrong_d"),
    ("heads_fix_merge", lambda *a: multi_head(*a, root="none"), "unscaled"),
    ("heads_fix_merge", no_projection, "no_output_projection"),
    ("heads_fix_merge", merge_split_without_transpose, "reshape_no_transpose"),
    # 11
    ("grad_jacobian_by_hand", np.diag([0.5, 0.25, 0.25]), "jacobian_missing_outer"),
    ("grad_jacobian_by_hand", -np.array(J_HAND), "jacobian_sign"),
    ("grad_softmax_jacobian", np.diag, "jacobian_missing_outer"),
    ("grad_softmax_jacobian", lambda p: np.outer(p, p) - np.diag(p), "jacobian_sign"),
    ("grad_predict_saturation", "grows", "saturated_gradients"),
    ("grad_predict_saturation", "unchanged", "saturated_gradients"),
    *[
        ("grad_fix_backward", lambda Q, K, V, G, m=mistake: backward(Q, K, V, G, m), mistake)
        for mistake in ("jacobian_missing_outer", "softmax_skipped", "backward_unscaled", "wrong_d")
    ],
    # 12
    ("cost_matrix_mib", 4096 * 8 / 2**20, "linear_in_n"),
    ("cost_matrix_mib", 4096 * 4096 * 4 / 2**20, "float32_bytes"),
    ("cost_matrix_mib", 4096 * 4096 * 8 / 1e6, "decimal_megabytes"),
    ("cost_doubling", (2, 2), "linear_in_n"),
    ("cost_doubling", (4, 4), "blocked_memory_quadratic"),
    ("online_rescale", (3.0, L12.L_OLD + np.exp(L12.BLOCK_2 - 3).sum()), "no_rescale"),
    (
        "online_rescale",
        (3.0, L12.L_OLD * np.exp(3 - L12.M_OLD) + np.exp(L12.BLOCK_2 - 3).sum()),
        "rescale_inverted",
    ),
    (
        "blocked_fix",
        lambda Q, K, V, b: blocked_attention(Q, K, V, b, rescale_a=False),
        "values_not_rescaled",
    ),
    (
        "blocked_fix",
        lambda Q, K, V, b: blocked_attention(Q, K, V, b, rescale_l=False, rescale_a=False),
        "no_rescale",
    ),
    (
        "blocked_fix",
        lambda Q, K, V, b: blocked_attention(Q, K, V, b, inverted=True),
        "rescale_inverted",
    ),
    ("blocked_fix", per_block, "per_block_softmax"),
    ("blocked_fix", unscaled, "unscaled"),
    ("blocked_fix", no_max, "overflow"),
]


def raises(*args):
    raise RuntimeError("oops")


# ---- OTHER: wrong answers no mistake explains: the status and a piece of the one line --------
OTHER = [
    # a value that is off, or of the wrong shape
    ("scaling_birds_eat", 7, "wrong", "is 7, expected 6.36"),
    ("blend_even_weights", [2, 3], "wrong", "entry [1] is 3, expected 3.333"),
    ("formula_shapes", ((2, 2), (3, 2)), "wrong", "weights_shape is (2, 2), expected (3, 5)"),
    ("sqrt_variance", (70, 2.25), "wrong", "var_dot: the value is 70, expected 72"),
    ("mask_causal", np.tril(np.ones((3, 3))), "wrong", "shape (3, 3), expected (4, 4)"),
    ("heads_by_hand", [[3, 4], [9, 11]], "wrong", "entry [1, 1] is 11, expected 10"),
    ("heads_by_hand", [3, 4, 9], "wrong", "shape (3,), expected (2, 2)"),
    ("grad_jacobian_by_hand", np.eye(3), "wrong", "J: entry [0, 0] is 1, expected 0.25"),
    ("cost_matrix_mib", 100, "wrong", "is 100, expected 128"),
    ("cost_doubling", (4, 3), "wrong", "growth_blocked"),
    ("cost_doubling", 4, "wrong", "expected a tuple of 2"),
    # an option that is not one, or another wrong option
    ("scaling_predict", "bigger", "wrong", "not one of the options: 'larger', 'smaller'"),
    ("softmax_predict_shift", 3, "wrong", "not one of the options"),
    ("mask_predict_empty_row", "infinity", "wrong", "'nan', 'zeros', 'uniform'"),
    ("heads_cross_shape", (6, 9), "wrong", "is not it"),
    ("heads_cross_shape", (1, 2, 3), "wrong", "not one of the options"),
    # answers of the wrong kind
    ("scaling_birds_eat", "6.36", "wrong", "wants numbers"),
    ("scaling_birds_eat", {6.36}, "wrong", "is a set"),
    ("scaling_birds_weights", [0.1, 0.9], "wrong", "has shape (2,), expected (3,)"),
    ("softmax_eat_row", [[0.5, 0.5], [1]], "wrong", "not a grid of numbers"),
    ("formula_shapes", (3, 5), "wrong", "expected a pair (weights_shape, output_shape)"),
    ("formula_shapes", ("3, 5", (3, 2)), "wrong", "a tuple of whole numbers"),
    ("formula_shapes", ((3.5, 5), (3, 2)), "wrong", "a tuple of whole numbers"),
    ("scaling_fix", np.ones((3, 3)), "wrong", "expected a function"),
    ("blocked_fix", 3.0, "wrong", "expected a function"),
    # functions that raise, return the wrong thing or compute something else
    ("scaling_fix", lambda Q, K: 1 / 0, "error", "raised ZeroDivisionError"),
    ("heads_split", lambda X, h: 1 / 0, "error", "ZeroDivisionError"),
    ("blocked_fix", lambda Q, K, V, b: 1 / 0, "error", "ZeroDivisionError"),
    ("mask_fix_attention", raises, "error", "RuntimeError: oops"),
    ("formula_self_attention", lambda X: X, "error", "raised TypeError"),
    ("softmax_fix_axis", lambda S, d_k: None, "wrong", "returned None"),
    ("blend_fix", lambda A, V: (A @ V, A), "wrong", "returned a tuple of 2"),
    ("blocked_fix", lambda Q, K, V, b: "output", "wrong", "is a str"),
    ("heads_split", lambda X, h: X, "wrong", "has shape"),
    ("grad_softmax_jacobian", lambda p: -np.outer(p, p), "wrong", "result: entry"),
    ("grad_fix_backward", lambda Q, K, V, G: backward(Q, K, V, G)[::-1], "wrong", "dQ"),
    ("grad_fix_backward", lambda Q, K, V, G: backward(Q, K, V, G)[0], "wrong", "a tuple of 3"),
]


@pytest.mark.parametrize(("exercise_id", "answer"), RIGHT)
def test_right_answer_passes(exercise_id, answer):
    assert_passed(exercise_id, answer)


@pytest.mark.parametrize(("exercise_id", "answer", "code"), WRONG)
def test_named_mistake_is_recognised(exercise_id, answer, code):
    assert_mistake(exercise_id, answer, code)


@pytest.mark.parametrize(("exercise_id", "answer", "status", "says"), OTHER)
def test_other_wrong_answer_gets_one_clear_line(exercise_id, answer, status, says):
    feedback = verdict(exercise_id, answer)
    assert (feedback.passed, feedback.status, feedback.mistake) == (False, status, None)
    assert says in feedback.message, feedback.message
    assert "\n" not in feedback.message and "Traceback" not in feedback.message


# ---- the find-the-bug functions of the solution notebooks, against the exercise they feed ----


def notebook_function(lesson, name):
    """The function ``name`` exactly as the solution notebook of ``lesson`` defines it."""
    nb = json.loads((ROOT / "solutions" / f"{lesson}.ipynb").read_text(encoding="utf-8"))
    for cell in nb["cells"]:
        if cell["cell_type"] != "code":
            continue
        for node in ast.parse("".join(cell["source"])).body:
            if isinstance(node, ast.FunctionDef) and node.name == name:
                namespace = {"np": np, "attnlib": attnlib}
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
        (
            "15_transformer_block",
            "transformer_block_broken",
            "block_fix_residual",
            "residual_from_norm",
        ),
        ("16_training_an_attention_head", "train_step_broken", "fix_train_step", "gradient_ascent"),
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
        ("15_transformer_block", "transformer_block", "block_fix_residual"),
        ("16_training_an_attention_head", "train_step", "fix_train_step"),
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


def test_each_lesson_10_mistake_of_the_checker_is_really_wrong():
    for code, variant in L10.FIX_MISTAKES:
        assert verdict("heads_fix_merge", variant).mistake == code


def test_lesson_15_post_norm_is_named_in_the_original_transformer_layout():
    def post_norm_block(X, W_Q, W_K, W_V, W_O, W_1, b_1, W_2, b_2, n_heads):
        LN = attnlib.layer_norm  # LN(X + Sublayer(X)), as in the Transformer paper
        H = LN(X + attnlib.multi_head_attention(X, X, W_Q, W_K, W_V, W_O, n_heads)[0])
        return LN(H + attnlib.mlp(H, W_1, b_1, W_2, b_2))

    assert verdict("block_fix_residual", post_norm_block).mistake == "post_norm"
