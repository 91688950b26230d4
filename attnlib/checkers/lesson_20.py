"""Checkers for lesson 20, the weights' gradients.

Ids: ``dw_by_hand`` (dW_Q = X^T dQ by hand), ``self_attention_grads`` (write the backward
pass of self-attention), ``predict_untouched_rows`` (predict then check: which rows of
W_Q a loss on eat's output leaves alone).
Expected answers come from ``attnlib.grad``.
"""

import numpy as np

from .. import example as ex
from ..grad import attention_backward, self_attention_backward
from ..selfcheck.exercise import Exercise
from . import widened

# ---- dw_by_hand -------------------------------------------------------------------------------
X_HAND = np.array([[1.0, 0.0], [2.0, 1.0], [0.0, 3.0]])  # (n, d_model) = (3, 2)
DQ_HAND = np.array([[1.0, -1.0], [0.0, 2.0], [2.0, 0.0]])  # (n, d_k) = (3, 2)

DW_BY_HAND = Exercise(
    id="dw_by_hand",
    lesson="20_weight_gradients",
    kind="value",
    answer="dW_Q",
    hints=[
        "dW_Q = X^T dQ has the shape of W_Q, (d_model, d_k) = (2, 2).",
        "Entry [a, c] is the sum over the three tokens of X[i, a] * dQ[i, c].",
    ],
    solution=lambda: f"dW_Q = np.array({(X_HAND.T @ DQ_HAND).tolist()})  # X.T @ dQ, by hand",
    expected=X_HAND.T @ DQ_HAND,
    mistakes={"dw_transposed": DQ_HAND.T @ X_HAND},
    name="dW_Q",
)


# ---- self_attention_grads: write the backward pass ---------------------------------------------
def _grads_variant(mistake):
    def backward(X, W_Q, W_K, W_V, dOutput):
        Q, K, V = X @ W_Q, X @ W_K, X @ W_V
        dQ, dK, dV = attention_backward(Q, K, V, dOutput)
        if mistake == "backward_unscaled":
            dQ, dK = dQ * np.sqrt(Q.shape[-1]), dK * np.sqrt(Q.shape[-1])
        paths = {"Q": dQ @ W_Q.T, "K": dK @ W_K.T, "V": dV @ W_V.T}
        dX = sum(paths.values())
        if mistake == "V only":
            dX = paths["V"]
        elif mistake == "Q and K only":
            dX = paths["Q"] + paths["K"]
        return dX, X.T @ dQ, X.T @ dK, X.T @ dV

    return backward


_rng = np.random.default_rng(161)
GRADS_CASES = [
    # n = 5, d_model = 3, d_k = 4, d_v = 2
    tuple(_rng.normal(size=s) for s in [(5, 3), (3, 4), (3, 4), (3, 2), (5, 2)]),
    (ex.X, ex.W_Q, ex.W_K, ex.W_V, np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]])),  # lesson's
    # n = 4, d_model = 6, d_k = 2, d_v = 3
    tuple(_rng.normal(size=s) for s in [(4, 6), (6, 2), (6, 2), (6, 3), (4, 3)]),
]

SELF_ATTENTION_GRADS = Exercise(
    id="self_attention_grads",
    lesson="20_weight_gradients",
    kind="function",
    answer="self_attention_backward",
    hints=[
        "Start from lesson 19's attention_backward on the three projections of X: it gives "
        "dQ, dK and dV.",
        "Each weight: dW = X.T @ (its dQ, dK or dV). X: one path through each projection.",
    ],
    solution="def self_attention_backward(X, W_Q, W_K, W_V, dOutput):\n"
    "    dQ, dK, dV = attnlib.attention_backward(X @ W_Q, X @ W_K, X @ W_V, dOutput)\n"
    "    dX = dQ @ W_Q.T + dK @ W_K.T + dV @ W_V.T  # three paths, each (n, d_model)\n"
    "    return dX, X.T @ dQ, X.T @ dK, X.T @ dV  # dW: (d_model, d_k or d_v)",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[*GRADS_CASES, widened(GRADS_CASES[2], 1, 80)],
    reference=self_attention_backward,
    mistakes=[
        ("dx_missing_path", _grads_variant("V only")),
        ("dx_missing_path", _grads_variant("Q and K only")),
        ("backward_unscaled", _grads_variant("backward_unscaled")),
    ],
    arg_names=("X", "W_Q", "W_K", "W_V", "dOutput"),
    result_names=("dX", "dW_Q", "dW_K", "dW_V"),
)


# ---- predict_untouched_rows -------------------------------------------------------------------
PREDICT_UNTOUCHED_ROWS = Exercise(
    id="predict_untouched_rows",
    lesson="20_weight_gradients",
    kind="choice",
    answer="prediction",
    hints=[
        "Only eat's output is in the loss, so only eat's row of dA, of dS and of dQ is non-zero.",
        "Row a of dW_Q = X^T dQ is eat's input X[eat, a] times eat's dQ row; eat is (0, 2, 0, 1).",
    ],
    solution="prediction = 'rows 0 and 2'  # eat's input is 0 at indices 0 and 2",
    expected="rows 0 and 2",
    options=("rows 0 and 2", "rows 1 and 3", "none", "all four"),
    mistakes={
        "rows 1 and 3": "rows_counted_from_1",
        "none": "dw_zero_input",
        "all four": "dw_zero_input",
    },
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    DW_BY_HAND,
    SELF_ATTENTION_GRADS,
    PREDICT_UNTOUCHED_ROWS,
)
