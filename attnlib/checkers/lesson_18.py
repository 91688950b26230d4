"""Checkers for lesson 18, gradients and the chain rule.

Ids: ``grad_by_nudging`` (by hand: how much a loss moves per unit nudge of the divisor
sqrt(d_k), measured by central finite differences: attnlib has no formula for it),
``grad_jacobian_by_hand`` (the softmax Jacobian of p = (1/2, 1/4, 1/4) by hand),
``grad_chain_by_hand`` (the chain rule with G by hand: J^T G for a step with two outputs).
Expected answers come from ``attnlib.grad`` and ``attnlib.core``; the backward pass's
exercises, and the tied scores' prediction, are lesson 19's (``attnlib/checkers/lesson_19.py``).
"""

import numpy as np

from .. import example as ex
from ..core import softmax
from ..grad import softmax_jacobian
from ..selfcheck.exercise import Exercise

# ---- grad_by_nudging: d loss / d c for the divisor c = sqrt(d_k), by finite differences -----
NUDGE_TARGET = np.array([[4.0, 2.0], [4.0, 2.0], [4.0, 2.0]])  # the output each token should have
NUDGE_C = np.sqrt(ex.d_k)  # the document's divisor, sqrt(2)


def divisor_loss(c):
    """The exercise's loss: squared distance of softmax(Q K^T / c) V from the target."""
    A = softmax(ex.Q @ ex.K.T / c)  # (3, 3)
    return float(((A @ ex.V - NUDGE_TARGET) ** 2).sum())


def _divisor_rate(c):
    """d loss / d c, exactly, by the backward pass: dS_scaled times d(S / c)/dc = -S / c^2."""
    S = ex.Q @ ex.K.T  # (n_q, n_k)
    A = softmax(S / c)
    dA = 2 * (A @ ex.V - NUDGE_TARGET) @ ex.V.T  # (n_q, d_v) @ (d_v, n_k)
    dS_scaled = A * (dA - (A * dA).sum(axis=-1, keepdims=True))
    return float((dS_scaled * (-S / c**2)).sum())


DIVISOR_RATE = _divisor_rate(NUDGE_C)

GRAD_BY_NUDGING = Exercise(
    id="grad_by_nudging",
    lesson="18_gradients",
    kind="value",
    answer="dL_dc",
    hints=[
        "Nudge c up by a small h and down by h, and compare the two losses.",
        "Divide the change in the loss by the distance between the two nudged points, 2h.",
        "c is np.sqrt(2); take h = 1e-6, small enough for the slope and large enough that "
        "the two losses still differ in float64.",
    ],
    solution=(
        "c, h = np.sqrt(2), 1e-6\n"
        "dL_dc = (loss_of_divisor(c + h) - loss_of_divisor(c - h)) / (2 * h)"
        f"  # {DIVISOR_RATE:.4f}"
    ),
    expected=DIVISOR_RATE,
    mistakes={
        "fd_divided_by_h": 2 * DIVISOR_RATE,
        "fd_sign": -DIVISOR_RATE,
        "fd_nudged_d_k": DIVISOR_RATE / (2 * NUDGE_C),  # dc / dd_k = 1 / (2 sqrt(d_k))
    },
    decimals=4,
    name="dL_dc",
)


# ---- grad_jacobian_by_hand ------------------------------------------------------------------
P_HAND = np.array([0.5, 0.25, 0.25])


J_HAND = softmax_jacobian(P_HAND)

GRAD_JACOBIAN_BY_HAND = Exercise(
    id="grad_jacobian_by_hand",
    lesson="18_gradients",
    kind="value",
    answer="J_hand",
    hints=[
        "J[i, j] = p_i (1 - p_i) on the diagonal and -p_i p_j off it.",
        "J[0, 0] = 0.5 x 0.5 = 0.25; J[0, 1] = -0.5 x 0.25 = -0.125. Each row sums to 0.",
    ],
    solution=(
        "J_hand = [[0.25, -0.125, -0.125],\n"
        "          [-0.125, 0.1875, -0.0625],\n"
        "          [-0.125, -0.0625, 0.1875]]"
    ),
    expected=J_HAND,
    mistakes={"jacobian_missing_outer": np.diag(P_HAND), "jacobian_sign": -J_HAND},
    decimals=4,
    name="J",
)


# ---- grad_chain_by_hand: the chain rule with G on a step with two outputs ------------------
CHAIN_M = np.array([1.0, 2.0])  # the inputs (m_0, m_1)
CHAIN_G = np.array([2.0, -1.0])  # the loss's gradient with respect to (y_0, y_1)


def chain_step(m):
    """The exercise's step: y_0 = 3 m_0 + m_1 and y_1 = m_0 m_1."""
    return np.array([3 * m[0] + m[1], m[0] * m[1]])


CHAIN_J = np.array([[3.0, 1.0], [CHAIN_M[1], CHAIN_M[0]]])  # J[i, j] = d y_i / d m_j


GRAD_CHAIN_BY_HAND = Exercise(
    id="grad_chain_by_hand",
    lesson="18_gradients",
    kind="value",
    answer="dL_dm",
    hints=[
        "A unit nudge of m_0 moves y_0 by 3 and y_1 by m_1 = 2: column 0 of the Jacobian.",
        "Each output's move is worth its G: add G_0 times y_0's move and G_1 times y_1's.",
    ],
    solution=lambda: (
        f"dL_dm = {(CHAIN_J.T @ CHAIN_G).tolist()}"
        "  # J^T G: column j of J (the outputs' moves per unit of m_j), weighted by G"
    ),
    expected=CHAIN_J.T @ CHAIN_G,
    mistakes={
        "chain_not_transposed": CHAIN_J @ CHAIN_G,
        "chain_without_G": CHAIN_J.sum(axis=0),
    },
    decimals=4,
    name="dL_dm",
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    GRAD_BY_NUDGING,
    GRAD_JACOBIAN_BY_HAND,
    GRAD_CHAIN_BY_HAND,
)
