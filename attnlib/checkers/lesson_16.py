"""Checkers for lesson 16, gradients through attention.

Ids: ``grad_by_nudging`` (by hand: how much a loss moves per unit nudge of the divisor
sqrt(d_k), measured by central finite differences: attnlib has no formula for it),
``grad_jacobian_by_hand`` (the softmax Jacobian of p = (1/2, 1/4, 1/4) by hand),
``grad_predict_tied`` (predict then check: multiply by 10 scores whose top two are tied),
``grad_fix_backward`` (find the bug: a backward pass whose Jacobian misses the outer
product), ``grad_masked_backward`` (transfer: the backward pass of masked attention).
Expected answers come from ``attnlib.grad``, ``attnlib.core`` and ``attnlib.masks``.
"""

import numpy as np

from .. import example as ex
from ..core import attention, softmax
from ..grad import attention_backward, softmax_jacobian
from ..masks import causal_mask
from ..selfcheck.exercise import Exercise
from . import widened

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
    lesson="16_gradients",
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
    lesson="16_gradients",
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


# ---- grad_predict_tied: ten times larger scores when the top two are tied -------------------
TIED_SCORES = np.array([9.0, 9.0, 3.0]) / np.sqrt(2)  # like birds' row, with two keys tied
TIED_OPTIONS = ("vanishes", "stays", "grows")


def _jacobian_norm(scores):
    return float(np.linalg.norm(softmax_jacobian(softmax(scores))))


_BEFORE, _AFTER = _jacobian_norm(TIED_SCORES), _jacobian_norm(10 * TIED_SCORES)
TIED_ANSWER = (  # the prompt's thresholds: below 0.01, within 10%, or more than 10% larger
    "vanishes" if _AFTER < 0.01 else "stays" if abs(_AFTER / _BEFORE - 1) <= 0.1 else "grows"
)


GRAD_PREDICT_TIED = Exercise(
    id="grad_predict_tied",
    lesson="16_gradients",
    kind="choice",
    answer="prediction",
    hints=[
        "Multiplying every score by 10 keeps a tie a tie: what do the two tied weights go to?",
        "The weights go to (1/2, 1/2, 0). Put them into p_i (delta_ij - p_j).",
    ],
    solution=f"prediction = {TIED_ANSWER!r}  # the weights go to (1/2, 1/2, 0), not one-hot",
    expected=TIED_ANSWER,
    options=TIED_OPTIONS,
    mistakes={o: "tied_scores_keep_gradient" for o in TIED_OPTIONS if o != TIED_ANSWER},
)


# ---- grad_fix_backward: repair a backward pass ----------------------------------------------
def _variant(mistake):
    def backward(Q, K, V, dOutput):
        _, A = attention(Q, K, V)
        d_k = Q.shape[-1]
        dV = A.T @ dOutput
        dA = dOutput @ V.T
        dS = {
            "jacobian_missing_outer": A * dA,
            "softmax_skipped": dA,
        }.get(mistake, A * (dA - (A * dA).sum(axis=-1, keepdims=True)))
        if mistake == "backward_unscaled":
            return dS @ K, dS.T @ Q, dV
        if mistake == "wrong_d":
            d_k = V.shape[-1]  # the mistake: d_v's width
        return dS @ K / np.sqrt(d_k), dS.T @ Q / np.sqrt(d_k), dV

    return backward


_rng = np.random.default_rng(13)
_Q, _K, _V = ex.Q, ex.K, ex.V  # the worked example
BACKWARD_CASES = [
    # n_q = 3, n_k = 5, d_k = 4, d_v = 2
    tuple(_rng.normal(size=s) for s in [(3, 4), (5, 4), (5, 2), (3, 2)]),
    (_Q, _K, _V, np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])),  # the lesson's example
    # n_q = 4, n_k = 2, d_k = 3, d_v = 5
    tuple(_rng.normal(size=s) for s in [(4, 3), (2, 3), (2, 5), (4, 5)]),
]


GRAD_FIX_BACKWARD = Exercise(
    id="grad_fix_backward",
    lesson="16_gradients",
    kind="function",
    answer="attention_backward",
    hints=[
        "Compare the broken function's dQ with central differences: which of dQ, dK, dV agree?",
        "dV is right, so the bug is between dA and dS: the softmax step.",
        "Each row of dS is (diag(a) - a a^T) dA_i = a * (dA_i - a . dA_i): the broken code "
        "keeps only the diag(a) part.",
    ],
    solution="def attention_backward(Q, K, V, dOutput):\n"
    "    d_k = Q.shape[-1]\n"
    "    A = softmax_rows(Q @ K.T / np.sqrt(d_k))  # (n_q, n_k)\n"
    "    dV = A.T @ dOutput  # (n_k, d_v)\n"
    "    dA = dOutput @ V.T  # (n_q, n_k)\n"
    "    dS = A * (dA - (A * dA).sum(axis=1, keepdims=True))  # through softmax, row by row\n"
    "    dQ = dS @ K / np.sqrt(d_k)  # (n_q, d_k)\n"
    "    dK = dS.T @ Q / np.sqrt(d_k)  # (n_k, d_k)\n"
    "    return dQ, dK, dV",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[*BACKWARD_CASES, widened(BACKWARD_CASES[0], 0, 400)],
    reference=attention_backward,
    mistakes=[
        (code, _variant(code))
        for code in (
            "jacobian_missing_outer",
            "softmax_skipped",
            "backward_unscaled",
            "wrong_d",
        )
    ],
    arg_names=("Q", "K", "V", "dOutput"),
    result_names=("dQ", "dK", "dV"),
)


# ---- grad_masked_backward: the backward pass when a mask hides keys ------------------------
def masked_backward(Q, K, V, dOutput, mask):
    """The reference: attnlib's backward pass with the forward pass's mask."""
    return attention_backward(Q, K, V, dOutput, mask=mask)


def _masked_variant(weights_of, through_softmax=True, root=True):
    def backward(Q, K, V, dOutput, mask):
        d = np.sqrt(Q.shape[-1]) if root else 1.0
        A = weights_of(Q @ K.T / np.sqrt(Q.shape[-1]), mask)  # (n_q, n_k)
        dV = A.T @ dOutput
        dA = dOutput @ V.T
        dS = A * (dA - (A * dA).sum(axis=-1, keepdims=True)) if through_softmax else A * dA
        return dS @ K / d, dS.T @ Q / d, dV

    return backward


def _hide(S, mask):
    return softmax(np.where(mask, S, -np.inf))


_rng = np.random.default_rng(110)
_PATTERN = np.array([[1, 0, 1, 1, 0], [0, 1, 1, 0, 1], [1, 1, 0, 0, 0]], dtype=bool)
MASKED_BACKWARD_CASES = [
    # n_q = 3, n_k = 5, d_k = 4, d_v = 2
    (*(_rng.normal(size=s) for s in [(3, 4), (5, 4), (5, 2), (3, 2)]), causal_mask(3, 5)),
    (*(_rng.normal(size=s) for s in [(3, 4), (5, 4), (5, 2), (3, 2)]), _PATTERN),
    (_Q, _K, _V, np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]), causal_mask(3)),
]


GRAD_MASKED_BACKWARD = Exercise(
    id="grad_masked_backward",
    lesson="16_gradients",
    kind="function",
    answer="attention_backward_masked",
    hints=[
        "Only the forward pass changes: hide the keys with -inf before softmax, as in lesson 09.",
        "A hidden key has weight 0, so a * (dA - a . dA) is 0 there: it gets no gradient.",
        "Build the masked scores with np.where and -np.inf, take their softmax row by row, "
        "and from there repeat attention_backward's steps unchanged.",
    ],
    solution="def attention_backward_masked(Q, K, V, dOutput, mask):\n"
    "    d_k = Q.shape[-1]\n"
    "    S = np.where(mask, Q @ K.T / np.sqrt(d_k), -np.inf)  # hide keys before softmax\n"
    "    A = softmax_rows(S)  # (n_q, n_k), 0 where the mask is False\n"
    "    dV = A.T @ dOutput  # (n_k, d_v)\n"
    "    dA = dOutput @ V.T  # (n_q, n_k)\n"
    "    dS = A * (dA - (A * dA).sum(axis=1, keepdims=True))  # 0 for every hidden key\n"
    "    dQ = dS @ K / np.sqrt(d_k)  # (n_q, d_k)\n"
    "    dK = dS.T @ Q / np.sqrt(d_k)  # (n_k, d_k)\n"
    "    return dQ, dK, dV",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[
        *MASKED_BACKWARD_CASES,
        widened(MASKED_BACKWARD_CASES[0], 0, 1000),
    ],
    reference=masked_backward,
    mistakes=[
        ("mask_ignored", _masked_variant(lambda S, mask: softmax(S))),
        ("mask_after_softmax", _masked_variant(lambda S, mask: softmax(S) * mask)),
        ("jacobian_missing_outer", _masked_variant(_hide, through_softmax=False)),
        ("backward_unscaled", _masked_variant(_hide, root=False)),
    ],
    arg_names=("Q", "K", "V", "dOutput", "mask"),
    result_names=("dQ", "dK", "dV"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    GRAD_BY_NUDGING,
    GRAD_JACOBIAN_BY_HAND,
    GRAD_PREDICT_TIED,
    GRAD_FIX_BACKWARD,
    GRAD_MASKED_BACKWARD,
)
