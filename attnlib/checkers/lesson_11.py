"""Checkers for lesson 11, gradients through attention.

Ids: ``grad_jacobian_by_hand`` (the softmax Jacobian of p = (1/2, 1/4, 1/4) by hand),
``grad_softmax_jacobian`` (write softmax_jacobian), ``grad_predict_saturation``
(predict then check: multiply the scores by 10), ``grad_fix_backward`` (find the bug:
a backward pass whose Jacobian misses the outer product). Expected answers come from
``attnlib.grad`` and ``attnlib.core``.
"""

import numpy as np

from .. import example as ex
from ..core import attention, softmax
from ..grad import attention_backward, softmax_jacobian
from ..selfcheck.exercise import Exercise

# ---- grad_jacobian_by_hand ------------------------------------------------------------------
P_HAND = np.array([0.5, 0.25, 0.25])


J_HAND = softmax_jacobian(P_HAND)

GRAD_JACOBIAN_BY_HAND = Exercise(
    id="grad_jacobian_by_hand",
    lesson="11_gradients",
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


# ---- grad_softmax_jacobian: write the function ----------------------------------------------
_rng = np.random.default_rng(12)
JACOBIAN_CASES = [
    (softmax(_rng.normal(size=5)),),
    (softmax(np.array([3.0, 9.0, 6.0]) / np.sqrt(2)),),  # birds' weights
    (softmax(_rng.normal(size=2)),),
]


GRAD_SOFTMAX_JACOBIAN = Exercise(
    id="grad_softmax_jacobian",
    lesson="11_gradients",
    kind="function",
    answer="softmax_jacobian",
    hints=[
        "Build the diagonal part with np.diag(p) and the outer product with np.outer(p, p).",
        "J = np.diag(p) - np.outer(p, p).",
    ],
    solution="def softmax_jacobian(p):\n    return np.diag(p) - np.outer(p, p)  # (n, n)",
    cases=JACOBIAN_CASES,
    reference=softmax_jacobian,
    mistakes=[
        ("jacobian_missing_outer", np.diag),
        ("jacobian_sign", lambda p: np.outer(p, p) - np.diag(p)),
    ],
    arg_names=("p",),
)


# ---- grad_predict_saturation ----------------------------------------------------------------
SATURATION_OPTIONS = ("grows", "shrinks", "unchanged")


GRAD_PREDICT_SATURATION = Exercise(
    id="grad_predict_saturation",
    lesson="11_gradients",
    kind="choice",
    answer="prediction",
    hints=[
        "Multiplying the scores by 10 makes the gaps between them 10 times larger.",
        "With large gaps one weight goes to 1 and the others to 0. What is p_i (1 - p_i) then?",
    ],
    solution="prediction = 'shrinks'  # the weights saturate, and p_i (delta_ij - p_j) -> 0",
    expected="shrinks",
    options=SATURATION_OPTIONS,
    mistakes={"grows": "saturated_gradients", "unchanged": "saturated_gradients"},
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
    lesson="11_gradients",
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
    cases=BACKWARD_CASES,
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


# the exercises in the order of the notebook's check cells
EXERCISES = (
    GRAD_JACOBIAN_BY_HAND,
    GRAD_SOFTMAX_JACOBIAN,
    GRAD_PREDICT_SATURATION,
    GRAD_FIX_BACKWARD,
)
