"""Checkers for lesson 17, training an attention head.

Ids: ``dw_by_hand`` (dW_Q = X^T dQ by hand), ``self_attention_grads`` (write the backward
pass of self-attention), ``predict_untouched_rows`` (predict then check: which rows of
W_Q a loss on eat's row leaves alone), ``fix_train_step`` (find the bug: a step that
climbs), ``ce_gradient_eat`` (transfer: the cross-entropy gradient for another target).
Expected answers come from ``attnlib.grad`` and ``attnlib.core``.
"""

import numpy as np

from .. import example as ex
from ..core import attention, softmax
from ..grad import attention_backward, self_attention_backward, softmax_jacobian
from ..selfcheck.exercise import Exercise
from . import widened

# ---- dw_by_hand -------------------------------------------------------------------------------
X_HAND = np.array([[1.0, 0.0], [2.0, 1.0], [0.0, 3.0]])  # (n, d_model) = (3, 2)
DQ_HAND = np.array([[1.0, -1.0], [0.0, 2.0], [2.0, 0.0]])  # (n, d_k) = (3, 2)

DW_BY_HAND = Exercise(
    id="dw_by_hand",
    lesson="17_training_an_attention_head",
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
    lesson="17_training_an_attention_head",
    kind="function",
    answer="self_attention_backward",
    hints=[
        "Start from dQ, dK, dV = attnlib.attention_backward(X @ W_Q, X @ W_K, X @ W_V, dOutput).",
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
    lesson="17_training_an_attention_head",
    kind="choice",
    answer="prediction",
    hints=[
        "Only eat's row of the scores is in the loss, so only eat's row of dQ is non-zero.",
        "Row a of dW_Q = X^T dQ is eat's input X[eat, a] times eat's dQ row; eat is (0, 2, 0, 1).",
    ],
    solution="prediction = 'rows 1 and 3'  # eat's input is 0 in dims 1 and 3",
    expected="rows 1 and 3",
    options=("rows 1 and 3", "rows 2 and 4", "none", "all four"),
    mistakes={
        "rows 2 and 4": "dw_zero_input",
        "none": "dw_zero_input",
        "all four": "dw_zero_input",
    },
)


# ---- fix_train_step: repair a gradient step ---------------------------------------------------
def _loss_gradients(X, W_Q, W_K, W_V):
    """dW_Q, dW_K of L = -log A[0, -1]: the first token should attend to the last."""
    _, A = attention(X @ W_Q, X @ W_K, X @ W_V)
    dWeights = np.zeros_like(A)
    dWeights[0, -1] = -1 / A[0, -1]
    dOutput = np.zeros((X.shape[0], W_V.shape[1]))
    _, dW_Q, dW_K, _ = self_attention_backward(X, W_Q, W_K, W_V, dOutput, dWeights=dWeights)
    return dW_Q, dW_K


def _train_step(X, W_Q, W_K, W_V, learning_rate):
    dW_Q, dW_K = _loss_gradients(X, W_Q, W_K, W_V)
    return W_Q - learning_rate * dW_Q, W_K - learning_rate * dW_K


def _ascent_step(X, W_Q, W_K, W_V, learning_rate):
    dW_Q, dW_K = _loss_gradients(X, W_Q, W_K, W_V)
    return W_Q + learning_rate * dW_Q, W_K + learning_rate * dW_K


_rng = np.random.default_rng(162)
STEP_CASES = [
    (ex.X, ex.W_Q, ex.W_K, ex.W_V, 0.05),  # the lesson's: birds -> seeds
    (*(_rng.normal(size=s) for s in [(5, 3), (3, 4), (3, 4), (3, 2)]), 0.1),
    (*(_rng.normal(size=s) for s in [(4, 6), (6, 2), (6, 2), (6, 3)]), 0.5),
]

FIX_TRAIN_STEP = Exercise(
    id="fix_train_step",
    lesson="17_training_an_attention_head",
    kind="function",
    answer="train_step",
    hints=[
        "Print the loss before and after one broken step: which way does it move?",
        "A descent step moves against the gradient: W - learning_rate * dW.",
    ],
    solution="def train_step(X, W_Q, W_K, W_V, learning_rate):\n"
    "    _, A = attnlib.attention(X @ W_Q, X @ W_K, X @ W_V)  # (n, n)\n"
    "    dWeights = np.zeros_like(A)\n"
    "    dWeights[0, -1] = -1 / A[0, -1]  # d(-log a) / da\n"
    "    dOutput = np.zeros((X.shape[0], W_V.shape[1]))  # the output is not in the loss\n"
    "    _, dW_Q, dW_K, _ = attnlib.self_attention_backward(\n"
    "        X, W_Q, W_K, W_V, dOutput, dWeights=dWeights\n"
    "    )\n"
    "    return W_Q - learning_rate * dW_Q, W_K - learning_rate * dW_K",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[*STEP_CASES, widened(STEP_CASES[1], 1, 200)],
    reference=_train_step,
    mistakes=[("gradient_ascent", _ascent_step)],
    arg_names=("X", "W_Q", "W_K", "W_V", "learning_rate"),
    result_names=("W_Q", "W_K"),
)


# ---- ce_gradient_eat: the cross-entropy gradient for another target ---------------------------
_P = softmax(ex.SCALED[0])  # birds' weights, (n_k,)
_EAT = ex.TOKENS.index("eat")
_D_WEIGHTS = np.zeros(3)
_D_WEIGHTS[_EAT] = -1 / _P[_EAT]  # d(-log p_eat) / dp
_D_SCORES = softmax_jacobian(_P) @ _D_WEIGHTS  # through the Jacobian: p - e_eat

CE_GRADIENT_EAT = Exercise(
    id="ce_gradient_eat",
    lesson="17_training_an_attention_head",
    kind="value",
    answer="dL_ds",
    hints=[
        "The lesson derived d(-log p_t) / ds = p - e_t for target t; here t is eat.",
        "Birds' weights are (0.013, 0.882, 0.106): subtract 1 from eat's entry.",
    ],
    solution=lambda: f"dL_ds = np.array({np.round(_D_SCORES, 3).tolist()})  # weights - [0, 1, 0]",
    expected=_D_SCORES,
    mistakes={"ce_sign": -_D_SCORES, "ce_weights_not_scores": _D_WEIGHTS},
    decimals=3,
    name="dL/ds",
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    DW_BY_HAND,
    SELF_ATTENTION_GRADS,
    PREDICT_UNTOUCHED_ROWS,
    FIX_TRAIN_STEP,
    CE_GRADIENT_EAT,
)
