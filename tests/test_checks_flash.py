"""The checkers of lesson 29 (FlashAttention), with answers written the way a learner writes
them: numpy only, never taken from attnlib, so a checker cannot pass by comparing the
package with itself. Each right answer passes; each slip a learner makes is named with its
own code; an unfilled cell is "not attempted"."""

import numpy as np
import pytest

from tests.checker_cases import assert_mistake, assert_not_attempted, assert_passed

S_BIRDS = np.array([3.0, 9.0, 6.0]) / np.sqrt(2)  # birds' scaled scores
L_BIRDS = 1 * np.exp(S_BIRDS[0] - S_BIRDS[1]) + 1 + np.exp(S_BIRDS[2] - S_BIRDS[1])


def backward(Q, K, V, output, L, dOutput, block_size, D="right", from_L=True, root=True):
    d_k = Q.shape[1]
    r = np.sqrt(d_k) if root else 1.0
    dQ, dK, dV = np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)
    row_term = (dOutput * output).sum(axis=1, keepdims=True)
    if D == "dOutput twice":
        row_term = (dOutput * dOutput).sum(axis=1, keepdims=True)
    for start in range(0, K.shape[0], block_size):
        keys = slice(start, start + block_size)
        S = Q @ K[keys].T / np.sqrt(d_k)
        if from_L:
            P = np.exp(S - L[:, None])
        else:
            E = np.exp(S - S.max(axis=1, keepdims=True))
            P = E / E.sum(axis=1, keepdims=True)
        dV[keys] = P.T @ dOutput
        dP = dOutput @ V[keys].T
        if D == "per tile":
            row_term = (P * dP).sum(axis=1, keepdims=True)
        if D == "none":
            row_term = 0.0
        dS = P * (dP - row_term)
        dQ += dS @ K[keys] / r
        dK[keys] = dS.T @ Q / r
    return dQ, dK, dV


def backward_untiled(Q, K, V, output, L, dOutput, block_size):
    # one tile holding every key: right, if not what the lesson is about
    return backward(Q, K, V, output, L, dOutput, K.shape[0])


def backward_naive_exp(Q, K, V, output, L, dOutput, block_size):
    d_k = Q.shape[1]
    with np.errstate(all="ignore"):
        P = np.exp(Q @ K.T / np.sqrt(d_k)) / np.exp(L)[:, None]
        dP = dOutput @ V.T
        dS = P * (dP - (dOutput * output).sum(axis=1, keepdims=True))
        return dS @ K / np.sqrt(d_k), dS.T @ Q / np.sqrt(d_k), P.T @ dOutput


def forward(Q, K, V, block_size, rescale_acc=True, rescale_l=True, max_in_L=True):
    d_k = Q.shape[1]
    m = np.full((Q.shape[0], 1), -np.inf)
    l_sum, acc = np.zeros((Q.shape[0], 1)), np.zeros((Q.shape[0], V.shape[1]))
    for start in range(0, K.shape[0], block_size):
        S = Q @ K[start : start + block_size].T / np.sqrt(d_k)
        m_new = np.maximum(m, S.max(axis=1, keepdims=True))
        P = np.exp(S - m_new)
        factor = np.exp(m - m_new)
        l_sum = (l_sum * factor if rescale_l else l_sum) + P.sum(axis=1, keepdims=True)
        acc = (acc * factor if rescale_acc else acc) + P @ V[start : start + block_size]
        m = m_new
    L = m + np.log(l_sum) if max_in_L else np.log(l_sum)
    return acc / l_sum, L[:, 0]


def forward_naive(Q, K, V, block_size):
    with np.errstate(all="ignore"):
        E = np.exp(Q @ K.T / np.sqrt(Q.shape[1]))
        return E @ V / E.sum(axis=1, keepdims=True), np.log(E.sum(axis=1))


def merge(output_a, L_a, output_b, L_b):
    L = np.logaddexp(L_a, L_b)
    return np.exp(L_a - L)[:, None] * output_a + np.exp(L_b - L)[:, None] * output_b, L


def merge_naive(output_a, L_a, output_b, L_b):
    with np.errstate(all="ignore"):
        total = np.exp(L_a) + np.exp(L_b)
        output = (np.exp(L_a)[:, None] * output_a + np.exp(L_b)[:, None] * output_b) / total[
            :, None
        ]
        return output, np.log(total)


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("flash_lse_by_hand", (S_BIRDS[1], L_BIRDS, S_BIRDS[1] + np.log(L_BIRDS))),
        ("flash_lse_by_hand", (6.364, 1.134, 6.490)),  # worked by hand, three decimals
        ("flash_backward", backward),
        ("flash_predict_memory", (2, 4)),
        ("flash_fix_forward", forward),
        ("flash_merge", merge),
    ],
)
def test_right_answers_pass(exercise_id, answer):
    assert_passed(exercise_id, answer)


@pytest.mark.parametrize(
    "exercise_id, answer, code",
    [
        ("flash_lse_by_hand", (6.364, 2.120, 6.490), "no_rescale"),
        ("flash_lse_by_hand", (6.364, 1.134, np.log(1.134)), "lse_without_max"),
        ("flash_backward", backward_naive_exp, "overflow"),
        ("flash_backward", lambda *a: backward(*a, D="per tile"), "flash_D_per_tile"),
        ("flash_backward", lambda *a: backward(*a, D="dOutput twice"), "flash_D_wrong_arrays"),
        ("flash_backward", lambda *a: backward(*a, D="none"), "jacobian_missing_outer"),
        ("flash_backward", lambda *a: backward(*a, from_L=False), "flash_tile_max"),
        ("flash_backward", lambda *a: backward(*a, root=False), "backward_unscaled"),
        ("flash_predict_memory", (4, 4), "flash_backward_quadratic"),
        ("flash_predict_memory", (2, 2), "linear_in_n"),
        ("flash_fix_forward", forward_naive, "overflow"),
        ("flash_fix_forward", lambda *a: forward(*a, rescale_acc=False), "values_not_rescaled"),
        (
            "flash_fix_forward",
            lambda *a: forward(*a, rescale_acc=False, rescale_l=False),
            "no_rescale",
        ),
        ("flash_fix_forward", lambda *a: forward(*a, max_in_L=False), "lse_without_max"),
        ("flash_merge", merge_naive, "overflow"),
        (
            "flash_merge",
            lambda oa, La, ob, Lb: ((oa + ob) / 2, merge(oa, La, ob, Lb)[1]),
            "merge_unweighted",
        ),  # fmt: skip
        (
            "flash_merge",
            lambda oa, La, ob, Lb: (merge(oa, La, ob, Lb)[0], La + Lb),
            "merge_l_added",
        ),  # fmt: skip
    ],
)
def test_named_mistakes_are_recognised(exercise_id, answer, code):
    assert_mistake(exercise_id, answer, code)


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("flash_lse_by_hand", (..., ..., ...)),
        ("flash_backward", lambda Q, K, V, output, L, dOutput, block_size: ...),
        ("flash_predict_memory", (..., ...)),
        ("flash_fix_forward", lambda Q, K, V, block_size: ...),
        ("flash_merge", lambda output_a, L_a, output_b, L_b: ...),
    ],
)
def test_unfilled_cells_are_not_attempted(exercise_id, answer):
    assert_not_attempted(exercise_id, answer)


def test_merging_two_halves_gives_full_attention():
    # the transfer task's claim, checked without the checker: halves merged = all keys at once
    rng = np.random.default_rng(3)
    Q, K, V = rng.normal(size=(4, 3)), rng.normal(size=(9, 3)), rng.normal(size=(9, 2))
    halves = [forward(Q, K[keys], V[keys], 2) for keys in (slice(0, 5), slice(5, None))]
    output, L = merge(*halves[0], *halves[1])
    want_output, want_L = forward(Q, K, V, 9)
    np.testing.assert_allclose(output, want_output, atol=1e-12)
    np.testing.assert_allclose(L, want_L, atol=1e-12)
