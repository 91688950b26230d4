"""The checkers of lessons 04 to 11, 16, 18 and 22, in one style: tables of answers written the
way a learner writes them (never taken from the checkers), each with the verdict it must get.

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
import sympy as sp

import attnlib
from attnlib import example as ex
from attnlib.checkers import lesson_10 as L9
from attnlib.checkers import lesson_16 as L12
from attnlib.checkers import lesson_18 as L14
from attnlib.checkers import lesson_19 as L90
from attnlib.checkers import lesson_22 as L16
from tests.checker_cases import (
    ROOT,
    assert_mistake,
    assert_passed,
    naive_softmax,
    softmax_rows,
    verdict,
)

S16 = [
    [11.5, 9, 10, 8.5],
    [3, 12, 11.25, 0.5],
    [1000, 998, 250, 1001],
]  # lesson 05's float16 scores

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


def padding_mask_loop(lengths, n_k):
    mask = np.zeros((len(lengths), 1, n_k), dtype=bool)
    for b, length in enumerate(lengths):
        mask[b, 0, :length] = True
    return mask


def masked_attention(Q, K, V, mask):
    S = np.where(mask, Q @ K.T / np.sqrt(K.shape[-1]), -np.inf)
    return softmax_rows(S) @ V


def masked_attention_big_negative(Q, K, V, mask):
    S = Q @ K.T / np.sqrt(K.shape[-1]) + np.where(mask, 0.0, -1e9)  # additive form
    return softmax_rows(S) @ V


def zero_empty_rows(masked):
    """A masked attention that gives a query with no visible key a row of zeros."""

    def repaired(Q, K, V, mask):
        seen = np.any(mask, axis=-1, keepdims=True)  # (n_q, 1)
        with np.errstate(invalid="ignore"):
            return np.where(seen, masked(Q, K, V, mask | ~seen), 0.0)

    return repaired


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


def temperature_attention(Q, K, V, T):
    return softmax_rows(Q @ K.T / np.sqrt(Q.shape[1]) / T) @ V


# 08's proofs, in sympy as a learner writes them
P_SYM = sp.Matrix(sp.symbols("p_0:3", positive=True))
V_SYM = sp.Matrix(sp.symbols("v_0:3", real=True))
J_SYM = sp.diag(*P_SYM) - P_SYM * P_SYM.T
_MEAN = sum(p_i * v_i for p_i, v_i in zip(P_SYM, V_SYM, strict=True))
VARIANCE_FORM = sum(p_i * (v_i - _MEAN) ** 2 for p_i, v_i in zip(P_SYM, V_SYM, strict=True))
PAIRWISE_FORM = (
    sum(P_SYM[i] * P_SYM[j] * (V_SYM[i] - V_SYM[j]) ** 2 for i in range(3) for j in range(3)) / 2
)


def bad_split(Z, n_heads):
    return Z.reshape(n_heads, Z.shape[0], -1)


def multi_query(X, W_Q, W_K, W_V, W_O, n_heads, split_fn=split, merge="right", root="d_k"):
    Q, K, V = split_fn(X @ W_Q, n_heads), X @ W_K, X @ W_V
    d = Q.shape[-1] if root == "d_k" else Q.shape[0] * Q.shape[-1]
    heads = softmax_rows(Q @ K.T / np.sqrt(d)) @ V  # (n_heads, n, d_v)
    if merge == "right":
        return heads.transpose(1, 0, 2).reshape(X.shape[0], -1) @ W_O
    return heads.reshape(X.shape[0], -1) @ W_O


def masked_backward(Q, K, V, dOutput, mask, mistake=None):
    d_k = Q.shape[-1]
    if mistake == "mask_after_softmax":
        A = softmax_rows(Q @ K.T / np.sqrt(d_k)) * mask
    else:
        A = softmax_rows(np.where(mask, Q @ K.T / np.sqrt(d_k), -np.inf))
    dV = A.T @ dOutput
    dA = dOutput @ V.T
    dS = A * (dA - (A * dA).sum(axis=1, keepdims=True))
    if mistake == "jacobian_missing_outer":
        dS = A * dA
    return dS @ K / np.sqrt(d_k), dS.T @ Q / np.sqrt(d_k), dV


def column_weights(S):
    """A stable softmax down the columns: the wrong axis, and no other slip."""
    return softmax_rows(S.T).T


def causal_tiles(Q, K, V, block_size, mask_inside=True, rescale_a=True, no_max=False):
    """Causal blocked attention in tiles of queries, skipping the key blocks above them."""
    n, d_k = Q.shape
    out = np.zeros((n, V.shape[1]))
    for qs in range(0, n, block_size):
        Q_b = Q[qs : qs + block_size]
        i = np.arange(qs, qs + len(Q_b))[:, None]
        m, l_sum, a_sum = np.full((len(Q_b), 1), -np.inf), 0.0, 0.0
        for ks in range(0, qs + len(Q_b), block_size):
            S_b = Q_b @ K[ks : ks + block_size].T / np.sqrt(d_k)
            j = np.arange(ks, ks + S_b.shape[1])[None, :]
            if mask_inside:
                S_b = np.where(j <= i, S_b, -np.inf)
            m_new = np.maximum(m, S_b.max(axis=1, keepdims=True)) if not no_max else 0 * S_b[:, :1]
            P_b = np.exp(S_b - m_new)
            l_sum = l_sum * np.exp(m - m_new) + P_b.sum(axis=1, keepdims=True)
            a_sum = (a_sum * np.exp(m - m_new) if rescale_a else a_sum) + P_b @ V[
                ks : ks + block_size
            ]
            m = m_new
        out[qs : qs + len(Q_b)] = a_sum / l_sum
    return out


def causal_key_blocks(Q, K, V, block_size, mask=True, no_max=False):
    """Every query at once over blocks of keys, masking each block (no tile is skipped)."""
    i = np.arange(Q.shape[0])[:, None]
    m, l_sum, a_sum = np.full((Q.shape[0], 1), -np.inf), 0.0, 0.0
    for ks in range(0, K.shape[0], block_size):
        S_b = Q @ K[ks : ks + block_size].T / np.sqrt(Q.shape[1])
        j = np.arange(ks, ks + S_b.shape[1])[None, :]
        if mask:
            S_b = np.where(j <= i, S_b, -np.inf)
        if no_max:  # exp of the raw scores: inf on large ones
            l_sum, a_sum = (
                l_sum + np.exp(S_b).sum(axis=1, keepdims=True),
                a_sum + np.exp(S_b) @ V[ks : ks + block_size],
            )
            continue
        m_new = np.maximum(m, S_b.max(axis=1, keepdims=True))
        old = np.where(np.isfinite(m), np.exp(m - m_new), 0.0)
        P_b = np.exp(S_b - m_new)
        l_sum = l_sum * old + P_b.sum(axis=1, keepdims=True)
        a_sum = a_sum * old + P_b @ V[ks : ks + block_size]
        m = m_new
    return a_sum / l_sum


# ---- RIGHT: answers that pass ----------------------------------------------------------------
J_HAND = [[1 / 4, -1 / 8, -1 / 8], [-1 / 8, 3 / 16, -1 / 16], [-1 / 8, -1 / 16, 3 / 16]]
# grad_chain_by_hand, measured by nudging the exercise's step (not its J^T G)
CHAIN_BY_NUDGING = attnlib.central_difference(
    lambda m: float((L14.CHAIN_G * L14.chain_step(m)).sum()), L14.CHAIN_M
)
CHAIN_J_NUDGED = np.array(  # J[i, j] = d y_i / d m_j, one output at a time
    [
        attnlib.central_difference(lambda m, i=i: float(L14.chain_step(m)[i]), L14.CHAIN_M)
        for i in (0, 1)
    ]
)
ROW_16 = np.concatenate([L16.BLOCK_1, L16.BLOCK_2])

RIGHT = [
    # 04-07, as the solution notebooks write them
    ("scaling_birds_eat", 9 / np.sqrt(2)),
    ("scaling_predict", "smaller"),
    ("scaling_birds_weights", softmax_rows(S[0] / np.sqrt(2))),
    ("scaling_fix", lambda Q, K: Q @ K.T / np.sqrt(Q.shape[-1])),
    ("softmax_eat_row", softmax_rows(S[1] / np.sqrt(2))),
    ("scaled_scores_batched", lambda Q, K: Q @ np.swapaxes(K, -1, -2) / np.sqrt(Q.shape[-1])),
    (
        "scaled_scores_batched",
        lambda Q, K: np.einsum("...id,...jd->...ij", Q, K) / Q.shape[-1] ** 0.5,
    ),
    ("float16_weights", softmax_rows(np.float16(S16))),
    ("softmax_predict_key_shift", "rises"),
    ("softmax_predict_double", "sharper"),
    ("softmax_fix_axis", weights_from_scores),
    ("blend_find_weights", [0.3, 0.4, 0.3]),
    ("blend_value_change", np.outer(softmax_rows(S / np.sqrt(2))[:, 1], [6 - 4, 12 - 2])),
    ("blend_even_weights", [(0 + 4 + 2) / 3, (4 + 2 + 4) / 3]),
    ("blend_fix", lambda A, V: A @ V),
    ("formula_shapes", ((3, 5), (3, 2))),
    ("formula_self_attention", self_attention),
    ("formula_predict_reorder", "same"),
    ("formula_temperature", temperature_attention),
    # 04-07, rounded by hand, another spelling, a list
    ("scaling_birds_eat", 6.36),
    ("scaling_birds_eat", 9 / 1.414),  # by hand with the root to 3 decimals
    ("scaling_predict", " Smaller"),
    ("scaling_birds_weights", [0.013, 0.882, 0.106]),  # the document's rounded weights
    ("softmax_eat_row", [0.576, 0.140, 0.284]),
    ("float16_weights", softmax_rows(np.float64(S16)).astype(np.float16)),  # cast back once
    ("blend_find_weights", (0.30, 0.40, 0.30)),
    ("blend_value_change", [[1.76, 8.82], [0.28, 1.4], [1.15, 5.76]]),  # rounded by hand
    ("blend_even_weights", [2, 3.33]),
    ("formula_shapes", [[3, 5], [3, 2]]),
    ("formula_shapes", (np.array([3, 5]), (3, 2))),
    ("formula_shapes", np.array([[3, 5], [3, 2]])),
    ("softmax_fix_axis", lambda S, d_k: softmax_rows(np.asarray(S) / d_k**0.5)),
    # 08
    ("sqrt_variance", (72, 2.25)),
    ("sqrt_variance", [72.0, 2.25]),
    ("sqrt_jacobian_row_sums", J_SYM * sp.ones(3, 1)),
    ("sqrt_jacobian_row_sums", [sum(J_SYM.row(i)) for i in range(3)]),  # a list of sums
    ("sqrt_jacobian_row_sums", sp.Matrix([p_i - p_i * sum(P_SYM) for p_i in P_SYM])),
    ("sqrt_predict_divide_by_d_k", "falls"),
    ("sqrt_predict_divide_by_d_k", " Falls "),
    ("sqrt_fix_scaled_twice", self_attention),
    ("sqrt_jacobian_psd", VARIANCE_FORM),
    ("sqrt_jacobian_psd", PAIRWISE_FORM),  # another sum of squares
    # 10
    ("mask_causal", [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]),
    ("mask_causal", np.tril(np.ones((4, 4), dtype=bool))),
    ("mask_weights", L9.WEIGHTS_CAUSAL),
    ("mask_weights", np.round(L9.WEIGHTS_CAUSAL, 3)),
    ("mask_padding", lambda lengths, n_k: np.arange(n_k) < np.array(lengths)[:, None, None]),
    ("mask_padding", lambda lengths, n_k: attnlib.padding_mask(lengths, n_k=n_k)),
    ("mask_padding", padding_mask_loop),
    # 11
    ("mask_fix_attention", zero_empty_rows(masked_attention)),
    ("mask_fix_attention", zero_empty_rows(masked_attention_big_negative)),
    ("mask_predict_finite_fill", "uniform"),
    ("mask_kv_cache", [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]),
    ("mask_kv_cache", np.arange(5)[None, :] <= np.arange(2)[:, None] + 3),
    # 16
    ("heads_by_hand", [[3, 4], [9, 10]]),
    ("heads_by_hand", np.array([[3.0, 4.0], [9.0, 10.0]])),
    ("heads_multi_query", multi_query),
    ("heads_cross_shape", (4, 6, 9)),
    ("heads_cross_shape", [4, 6, 9]),
    ("heads_fix_merge", multi_head),
    # 18
    ("grad_by_nudging", L14.DIVISOR_RATE),
    ("grad_by_nudging", round(L14.DIVISOR_RATE, 4)),  # rounded by hand
    (  # a one-sided nudge is also a nudge: within the 4 decimals checked
        "grad_by_nudging",
        (L14.divisor_loss(np.sqrt(2) + 1e-6) - L14.divisor_loss(np.sqrt(2))) / 1e-6,
    ),
    ("grad_jacobian_by_hand", J_HAND),
    ("grad_jacobian_by_hand", np.round(J_HAND, 4)),  # rounded by hand
    ("grad_chain_by_hand", CHAIN_BY_NUDGING),  # measured by nudging, not by J^T G
    ("grad_chain_by_hand", [4, 1]),  # by hand, as integers
    ("grad_predict_tied", "stays"),
    ("grad_fix_backward", backward),
    ("grad_fix_backward", L90._variant(None)),
    ("grad_masked_backward", masked_backward),
    # 22
    ("cost_matrix_mib", 4096 * 4096 * 8 / 2**20),
    ("cost_matrix_mib", 128),
    ("cost_doubling", (4, 2)),
    ("online_rescale", reference_update(L16.M_OLD, L16.L_OLD, L16.BLOCK_2)),
    ("online_rescale", (3, np.exp(ROW_16 - 3).sum())),
    ("online_rescale", (3, 1.585)),  # rounded by hand
    ("blocked_causal", causal_tiles),
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
    ("softmax_predict_key_shift", "unchanged", "shift_per_row"),
    ("softmax_predict_double", "same", "score_gaps"),
    ("softmax_predict_double", "flatter", "score_gaps"),
    ("softmax_fix_axis", lambda S, d_k: softmax_rows((S / np.sqrt(d_k)).T).T, "wrong_axis"),
    ("softmax_fix_axis", lambda S, d_k: naive_softmax(S / np.sqrt(d_k)), "overflow"),
    ("softmax_fix_axis", lambda S, d_k: weights_from_scores(S, d_k).T, "transposed"),
    ("softmax_fix_axis", lambda S, d_k: softmax_rows(S), "unscaled"),
    ("softmax_fix_axis", lambda S, d_k: softmax_rows(S / d_k), "divided_by_d_k"),
    ("softmax_fix_axis", lambda S, d_k: softmax_rows(S * np.sqrt(d_k)), "multiplied"),
    # 06
    ("blend_value_change", np.outer(softmax_rows(S / np.sqrt(2))[1], [2, 10]), "transposed"),
    ("blend_value_change", np.tile([2, 10], (3, 1)), "delta_not_weighted"),
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
        lambda X, a, b, c: column_weights((X @ a) @ (X @ b).T / np.sqrt(a.shape[1])) @ (X @ c),
        "wrong_axis",  # over the columns only: a second slip (no max) would hide the name
    ),
    (
        "formula_self_attention",
        lambda X, a, b, c: naive_softmax((X @ a) @ (X @ b).T / np.sqrt(a.shape[1])) @ (X @ c),
        "overflow",
    ),
    ("formula_predict_reorder", "rows reordered", "order_matters"),
    ("formula_predict_reorder", "different", "order_matters"),
    (
        "formula_temperature",
        lambda Q, K, V, T: softmax_rows(Q @ K.T / np.sqrt(Q.shape[1]) * T) @ V,
        "temperature_inverted",
    ),
    ("formula_temperature", lambda Q, K, V, T: softmax_rows(Q @ K.T / T) @ V, "unscaled"),
    # 08
    ("sqrt_variance", (48, 1.5), "spread_not_squared"),
    ("sqrt_variance", (72, 72 / np.sqrt(32)), "variance_divided_by_root"),
    ("sqrt_variance", (72, 72), "unscaled"),
    ("sqrt_jacobian_row_sums", sp.diag(*P_SYM) * sp.ones(3, 1), "jacobian_missing_outer"),
    ("sqrt_jacobian_row_sums", sp.zeros(3, 1), "proof_assumed_result"),
    ("sqrt_jacobian_row_sums", [0, 0, 0], "proof_assumed_result"),
    (
        "sqrt_jacobian_row_sums",
        (J_SYM * sp.ones(3, 1)).subs(P_SYM[2], 1 - P_SYM[0] - P_SYM[1]),
        "proof_assumed_result",
    ),
    ("sqrt_predict_divide_by_d_k", "rises", "over_scaled"),
    ("sqrt_predict_divide_by_d_k", "stays", "over_scaled"),
    ("sqrt_fix_scaled_twice", scaled_by(lambda X, Q, V: Q.shape[1]), "divided_by_d_k"),
    ("sqrt_fix_scaled_twice", scaled_by(lambda X, Q, V: np.sqrt(X.shape[1])), "wrong_d"),
    ("sqrt_fix_scaled_twice", scaled_by(lambda X, Q, V: 1), "unscaled"),
    ("sqrt_jacobian_psd", (V_SYM.T * J_SYM * V_SYM)[0], "psd_not_sum_of_squares"),
    ("sqrt_jacobian_psd", sp.expand((V_SYM.T * J_SYM * V_SYM)[0]), "psd_not_sum_of_squares"),
    # expanded, the variance form is >= 0 where p >= 0, but nothing in its form shows it
    ("sqrt_jacobian_psd", sp.expand(VARIANCE_FORM), "psd_not_sum_of_squares"),
    (
        "sqrt_jacobian_psd",
        sum(p_i * (v_i - sum(V_SYM) / 3) ** 2 for p_i, v_i in zip(P_SYM, V_SYM, strict=True)),
        "psd_unweighted_mean",
    ),
    # 10
    ("mask_causal", np.triu(np.ones((4, 4))), "causal_sees_future"),
    ("mask_causal", np.tril(np.ones((4, 4)), k=-1), "causal_excludes_self"),
    ("mask_causal", 1 - np.tril(np.ones((4, 4))), "inverted_mask"),
    ("mask_weights", softmax_rows(S_SCALED) * CAUSAL_3, "mask_after_softmax"),
    ("mask_weights", softmax_rows(S_SCALED), "mask_ignored"),
    ("mask_weights", softmax_rows(np.where(CAUSAL_3, S, -np.inf)), "unscaled"),
    ("mask_weights", softmax_rows(np.where(CAUSAL_3.T, S_SCALED, -np.inf)), "causal_sees_future"),
    ("mask_weights", L9.WEIGHTS_CAUSAL.T, "transposed"),
    (
        "mask_padding",
        lambda lengths, n_k: np.arange(n_k) <= np.array(lengths)[:, None, None],
        "padding_off_by_one",
    ),
    (
        "mask_padding",
        lambda lengths, n_k: np.arange(n_k) >= np.array(lengths)[:, None, None],
        "inverted_mask",
    ),
    # 11
    (
        "mask_fix_attention",
        lambda Q, K, V, m: (softmax_rows(Q @ K.T / np.sqrt(K.shape[-1])) * m) @ V,
        "mask_after_softmax",
    ),
    ("mask_fix_attention", lambda Q, K, V, m: masked_attention(Q, K, V, ~m), "inverted_mask"),
    ("mask_predict_finite_fill", "nan", "finite_fill"),
    ("mask_predict_finite_fill", "zeros", "finite_fill"),
    ("mask_kv_cache", [[1, 0, 0, 0, 0], [1, 1, 0, 0, 0]], "top_left_with_cache"),
    ("mask_kv_cache", [[0, 0, 0, 0, 1], [0, 0, 0, 0, 0]], "inverted_mask"),
    # 16
    ("heads_by_hand", [[5, 6], [7, 8]], "reshape_no_transpose"),
    ("heads_by_hand", [[2, 5], [8, 11]], "heads_interleaved"),
    ("heads_multi_query", lambda *a: multi_query(*a, split_fn=bad_split), "reshape_no_transpose"),
    ("heads_multi_query", lambda *a: multi_query(*a, merge="reshape only"), "merge_no_transpose"),
    ("heads_multi_query", lambda *a: multi_query(*a, root="all heads"), "wrong_d"),
    ("heads_cross_shape", (4, 9, 6), "transposed"),
    ("heads_cross_shape", (4, 6, 6), "cross_keys_from_queries"),
    ("heads_fix_merge", lambda *a: multi_head(*a, merge="reshape only"), "merge_no_transpose"),
    ("heads_fix_merge", lambda *a: multi_head(*a, root="d_model"), "wrong_d"),
    ("heads_fix_merge", lambda *a: multi_head(*a, root="none"), "unscaled"),
    ("heads_fix_merge", no_projection, "no_output_projection"),
    ("heads_fix_merge", merge_split_without_transpose, "reshape_no_transpose"),
    # 18
    ("grad_by_nudging", 2 * L14.DIVISOR_RATE, "fd_divided_by_h"),
    ("grad_by_nudging", -L14.DIVISOR_RATE, "fd_sign"),
    (  # d_k nudged instead of its root: the rate per unit of d_k
        "grad_by_nudging",
        (L14.divisor_loss(np.sqrt(2 + 1e-6)) - L14.divisor_loss(np.sqrt(2 - 1e-6))) / 2e-6,
        "fd_nudged_d_k",
    ),
    ("grad_jacobian_by_hand", np.diag([0.5, 0.25, 0.25]), "jacobian_missing_outer"),
    ("grad_jacobian_by_hand", -np.array(J_HAND), "jacobian_sign"),
    ("grad_chain_by_hand", CHAIN_J_NUDGED @ L14.CHAIN_G, "chain_not_transposed"),
    ("grad_chain_by_hand", CHAIN_J_NUDGED.sum(axis=0), "chain_without_G"),
    ("grad_predict_tied", "vanishes", "tied_scores_keep_gradient"),
    ("grad_predict_tied", "grows", "tied_scores_keep_gradient"),
    ("grad_masked_backward", lambda Q, K, V, G, m: backward(Q, K, V, G), "mask_ignored"),
    (
        "grad_masked_backward",
        lambda *a: masked_backward(*a, mistake="mask_after_softmax"),
        "mask_after_softmax",
    ),
    (
        "grad_masked_backward",
        lambda *a: masked_backward(*a, mistake="jacobian_missing_outer"),
        "jacobian_missing_outer",
    ),
    *[
        ("grad_fix_backward", lambda Q, K, V, G, m=mistake: backward(Q, K, V, G, m), mistake)
        for mistake in ("jacobian_missing_outer", "softmax_skipped", "backward_unscaled", "wrong_d")
    ],
    # 21: counting eat's rows from 1 picks the two that do move
    ("predict_untouched_rows", "rows 1 and 3", "rows_counted_from_1"),
    ("predict_untouched_rows", "none", "dw_zero_input"),
    # 21: the trained head's rows of W_K; the value and the marker rows both move
    ("untrained_key_row", "row 0", "key_row_reads_value"),
    ("untrained_key_row", "row 1", "key_row_reads_marker"),
    ("untrained_key_row", "none", "score_shift_has_gradient"),
    # 22
    ("cost_matrix_mib", 4096 * 8 / 2**20, "linear_in_n"),
    ("cost_matrix_mib", 4096 * 4096 * 4 / 2**20, "float32_bytes"),
    ("cost_matrix_mib", 4096 * 4096 * 8 / 1e6, "decimal_megabytes"),
    ("cost_doubling", (2, 2), "linear_in_n"),
    ("cost_doubling", (4, 4), "blocked_memory_quadratic"),
    ("online_rescale", (3.0, L16.L_OLD + np.exp(L16.BLOCK_2 - 3).sum()), "no_rescale"),
    (
        "online_rescale",
        (3.0, L16.L_OLD * np.exp(3 - L16.M_OLD) + np.exp(L16.BLOCK_2 - 3).sum()),
        "rescale_inverted",
    ),
    ("blocked_causal", lambda *a: causal_tiles(*a, mask_inside=False), "diagonal_block_unmasked"),
    ("blocked_causal", lambda *a: causal_tiles(*a, rescale_a=False), "values_not_rescaled"),
    # every query at once over every key block, masked: right numbers, but no block skipped
    ("blocked_causal", causal_key_blocks, "blocks_not_skipped"),
    ("blocked_causal", lambda *a: causal_key_blocks(*a, mask=False), "mask_ignored"),
    ("blocked_causal", lambda *a: causal_tiles(*a, no_max=True), "overflow"),
]


def raises(*args):
    raise RuntimeError("oops")


# ---- OTHER: wrong answers no mistake explains: the status and a piece of the one line --------
OTHER = [
    # a value that is off, or of the wrong shape
    ("scaling_birds_eat", 7, "wrong", "the scaled score differs (compared to 2 decimals)"),
    ("blend_even_weights", [2, 3], "wrong", "entry 1 differs"),
    ("formula_shapes", ((2, 2), (3, 2)), "wrong", "weights_shape (2, 2) differs"),
    ("sqrt_variance", (70, 2.25), "wrong", "var_dot differs"),
    ("mask_causal", np.tril(np.ones((3, 3))), "wrong", "shape (3, 3), expected (4, 4)"),
    ("heads_by_hand", [[3, 4], [9, 11]], "wrong", "row 1, column 1 differs"),
    ("heads_by_hand", [3, 4, 9], "wrong", "shape (3,), expected (2, 2)"),
    ("grad_jacobian_by_hand", np.eye(3), "wrong", "J: row 0, column 0 differs"),
    ("grad_by_nudging", -1.5, "wrong", "dL_dc differs (compared to 4 decimals)"),
    ("cost_matrix_mib", 100, "wrong", "mib differs (compared to 1 decimal)"),
    ("cost_doubling", (4, 3), "wrong", "growth_blocked"),
    ("cost_doubling", 4, "wrong", "expected a tuple of 2"),
    # divided by sqrt(T), not T: scaled by sqrt(d_k), so not "unscaled" (on the worked example
    # with T = d_k = 2 the two coincide; no case may have T = d_k)
    (
        "formula_temperature",
        lambda Q, K, V, T: softmax_rows(Q @ K.T / np.sqrt(Q.shape[1]) / np.sqrt(T)) @ V,
        "wrong",
        "differs",
    ),
    # Q / scale (divided, and without sqrt(d_k)): neither named slip; at scale = 1.0 it equals
    # multiplying by scale ("scale_twice"), so the first case that can tell them apart
    # must come before scale = 1.0
    (
        "attention_like_torch",
        lambda Q, K, V, scale=None: attnlib.attention(Q if scale is None else Q / scale, K, V)[0],
        "wrong",
        "differs",
    ),
    # an option that is not one, or another wrong option
    ("scaling_predict", "bigger", "wrong", "not one of the options: 'larger', 'smaller'"),
    ("softmax_predict_key_shift", 3, "wrong", "not one of the options"),
    ("mask_predict_finite_fill", "infinity", "wrong", "'nan', 'zeros', 'uniform'"),
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
    ("blocked_causal", 3.0, "wrong", "expected a function"),
    ("sqrt_jacobian_row_sums", 3 * P_SYM, "wrong", "your expression's result: entry 0"),
    # functions that raise, return the wrong thing or compute something else
    ("scaling_fix", lambda Q, K: 1 / 0, "error", "raised ZeroDivisionError"),
    ("heads_multi_query", lambda *a: 1 / 0, "error", "ZeroDivisionError"),
    ("blocked_causal", lambda Q, K, V, b: 1 / 0, "error", "ZeroDivisionError"),
    ("sqrt_jacobian_row_sums", "p_0 * (1 - p_0)", "error", "a string is not an expression"),
    ("sqrt_jacobian_psd", sp.Symbol("x") * P_SYM[0], "error", "uses x; it may only use p_0"),
    ("mask_fix_attention", raises, "error", "RuntimeError: oops"),
    ("formula_self_attention", lambda X: X, "error", "raised TypeError"),
    ("softmax_fix_axis", lambda S, d_k: None, "wrong", "returned None"),
    ("blend_fix", lambda A, V: (A @ V, A), "wrong", "returned a tuple of 2"),
    ("blocked_causal", lambda Q, K, V, b: "output", "wrong", "is a str"),
    ("heads_multi_query", lambda X, *a: X, "wrong", "has shape"),
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
        ("07_the_whole_formula", "broken_attention", "attention", "wrong_axis"),
        ("08_why_sqrt_dk", "self_attention_broken", "sqrt_fix_scaled_twice", "divided_by_d_k"),
        (
            "17_transformer_block",
            "transformer_block_broken",
            "block_fix_residual",
            "residual_from_norm",
        ),
        ("21_training_an_attention_head", "train_step_broken", "fix_train_step", "gradient_ascent"),
    ],
)
def test_each_broken_function_of_the_notebooks_is_named(lesson, name, exercise_id, code):
    broken = notebook_function(lesson, name)
    assert verdict(exercise_id, broken).mistake == code


@pytest.mark.parametrize(
    ("lesson", "name", "exercise_id"),
    [
        ("04_scaling", "fixed_scaled_scores", "scaling_fix"),
        ("04_scaling", "batched_scaled_scores", "scaled_scores_batched"),
        ("05_softmax", "softmax", "softmax"),
        ("05_softmax", "weights_from_scores", "softmax_fix_axis"),
        ("06_blending_values", "blend", "blend_fix"),
        ("07_the_whole_formula", "attention", "attention"),
        ("07_the_whole_formula", "attention_with_temperature", "formula_temperature"),
        ("08_why_sqrt_dk", "self_attention", "sqrt_fix_scaled_twice"),
        ("22_cost_and_memory", "causal_blocked_attention", "blocked_causal"),
        ("17_transformer_block", "transformer_block", "block_fix_residual"),
        ("21_training_an_attention_head", "train_step", "fix_train_step"),
    ],
)
def test_each_repaired_function_of_the_notebooks_passes(lesson, name, exercise_id):
    assert verdict(exercise_id, notebook_function(lesson, name)).passed


def test_required_ids_accept_the_answers_of_these_notebooks():
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


def test_mask_fix_attention_names_a_late_renormalisation_that_divides_0_by_0():
    def renormalised_late(Q, K, V, mask):  # the lesson's repair, after a max over hidden keys
        A = softmax_rows(Q @ K.T / np.sqrt(K.shape[-1])) * mask
        with np.errstate(invalid="ignore"):
            return A / A.sum(axis=-1, keepdims=True) @ V

    assert verdict("mask_fix_attention", renormalised_late).mistake == "renormalised_after_softmax"


def test_noweights_fix_smoother_names_overflow_of_a_naive_exp():
    def no_max(x_query, x_data, y_data, sigma):
        scores = -((x_query[:, None] - x_data[None, :]) ** 2) / (2 * sigma**2)
        return naive_softmax(scores) @ y_data  # every kernel value underflows on the wide case

    assert verdict("noweights_fix_smoother", no_max).mistake == "overflow"


def test_the_broken_functions_of_the_notebooks_are_named():
    def broken_masked_attention(Q, K, V, mask):  # as in solutions/11_masks_in_practice.ipynb
        A = softmax_rows(Q @ K.T / np.sqrt(K.shape[-1]))
        return (A * mask) @ V

    assert verdict("mask_fix_attention", broken_masked_attention).mistake == "mask_after_softmax"


def test_each_lesson_16_mistake_of_the_checker_is_really_wrong():
    for code, variant in L12.FIX_MISTAKES:
        assert verdict("heads_fix_merge", variant).mistake == code


def test_lesson_17_post_norm_is_named_in_the_original_transformer_layout():
    def post_norm_block(X, W_Q, W_K, W_V, W_O, W_1, b_1, W_2, b_2, n_heads):
        LN = attnlib.layer_norm  # LN(X + Sublayer(X)), as in the Transformer paper
        H = LN(X + attnlib.multi_head_attention(X, X, W_Q, W_K, W_V, W_O, n_heads)[0])
        return LN(H + attnlib.mlp(H, W_1, b_1, W_2, b_2))

    assert verdict("block_fix_residual", post_norm_block).mistake == "post_norm"


def test_untrained_key_row_expects_the_row_that_training_by_nudging_leaves_in_place():
    """Train the lesson's copy task with gradients measured by nudging each weight (no backward
    pass, no attnlib training step), then the row of W_K that stayed is the only one accepted."""
    from attnlib.selfcheck import check

    rng = np.random.default_rng(17)  # the lesson's task and starting weights
    X = np.zeros((16, 4, 3))  # (B, n, d_model): value, marker, constant 1
    X[..., 0] = rng.integers(-2, 3, size=(16, 4))
    marked = rng.integers(0, 4, size=16)
    X[np.arange(16), marked, 1] = 1.0
    X[..., 2] = 1.0
    targets = X[np.arange(16), marked, 0][:, None]  # (16, 1): the same at every position
    W_Q, W_K = 0.1 * rng.normal(size=(3, 2)), 0.1 * rng.normal(size=(3, 2))

    def loss(W_Q, W_K):
        S = (X @ W_Q) @ (X @ W_K).transpose(0, 2, 1) / np.sqrt(2)  # (16, 4, 4)
        A = np.exp(S - S.max(axis=-1, keepdims=True))
        output = (A / A.sum(axis=-1, keepdims=True)) @ X[..., 0:1]  # W_V reads the value
        return ((output[..., 0] - targets) ** 2).mean()

    def nudged(f, W, h=1e-6):
        G = np.zeros_like(W)
        for index in np.ndindex(W.shape):
            up, down = W.copy(), W.copy()
            up[index] += h
            down[index] -= h
            G[index] = (f(up) - f(down)) / (2 * h)
        return G

    W_K_start = W_K.copy()
    for _ in range(100):
        dW_Q = nudged(lambda W, W_K=W_K: loss(W, W_K), W_Q)
        dW_K = nudged(lambda W, W_Q=W_Q: loss(W_Q, W), W_K)
        W_Q, W_K = W_Q - 0.5 * dW_Q, W_K - 0.5 * dW_K
    moved = np.abs(W_K - W_K_start).max(axis=1)  # (3,): how far each row went
    assert moved.max() > 1  # training did move W_K
    (still,) = np.flatnonzero(moved < 1e-6)  # nudging leaves about 1e-10 per step
    assert check("untrained_key_row", f"row {still}", quiet=True).passed
    for other in ("row 0", "row 1", "row 2", "none"):
        if other != f"row {still}":
            assert not check("untrained_key_row", other, quiet=True).passed, other
