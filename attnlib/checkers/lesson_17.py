"""Checkers for lesson 17, training an attention head.

Ids: ``dw_by_hand`` (dW_Q = X^T dQ by hand), ``self_attention_grads`` (write the backward
pass of self-attention), ``predict_untouched_rows`` (predict then check: which rows of
W_Q a loss on eat's output leaves alone), ``fix_train_step`` (find the bug: a training
step on the copy-the-marked-value task that climbs), ``nudge_one_weight`` (transfer: one
entry of a gradient measured by nudging the weight and watching the loss).
Expected answers come from ``attnlib.grad`` and ``attnlib.core``.
"""

import numpy as np

from .. import example as ex
from ..core import attention
from ..grad import attention_backward, self_attention_backward
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
        "Start from lesson 16's attention_backward on the three projections of X: it gives "
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
    lesson="17_training_an_attention_head",
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
        "rows 1 and 3": "off_by_one",
        "none": "dw_zero_input",
        "all four": "dw_zero_input",
    },
)


# ---- fix_train_step: repair a gradient step on a loss on the outputs --------------------------
def _step(X, targets, W_Q, W_K, W_V, learning_rate, mistake=None):
    """One gradient-descent step on W_Q, W_K for the mean squared error of the outputs."""
    output, _ = attention(X @ W_Q, X @ W_K, X @ W_V)  # (..., n, d_v)
    dOutput = 2 * (output - targets)  # (..., n, d_v)
    if mistake != "mse_not_averaged":
        dOutput = dOutput / output.size  # the slope of a mean: divided by how many it averages
    _, dW_Q, dW_K, _ = self_attention_backward(X, W_Q, W_K, W_V, dOutput)
    sign = 1 if mistake == "gradient_ascent" else -1
    return W_Q + sign * learning_rate * dW_Q, W_K + sign * learning_rate * dW_K


def _train_step(X, targets, W_Q, W_K, W_V, learning_rate):
    return _step(X, targets, W_Q, W_K, W_V, learning_rate)


def _ascent_step(X, targets, W_Q, W_K, W_V, learning_rate):
    return _step(X, targets, W_Q, W_K, W_V, learning_rate, "gradient_ascent")


def _summed_step(X, targets, W_Q, W_K, W_V, learning_rate):
    return _step(X, targets, W_Q, W_K, W_V, learning_rate, "mse_not_averaged")


# the exercise notebook's copy task: 2 sequences of 3 tokens, columns value, marker, 1
X_COPY = np.array(
    [[[1.0, 0, 1], [-2, 1, 1], [0, 0, 1]], [[2.0, 0, 1], [1, 0, 1], [-1, 1, 1]]]
)  # (B, n, d_model) = (2, 3, 3)
TARGETS_COPY = np.repeat(
    (X_COPY[..., 0] * X_COPY[..., 1]).sum(axis=1)[:, None, None], 3, axis=1
)  # (2, 3, 1): the marked value at every position
W_V_COPY = np.array([[1.0], [0.0], [0.0]])  # reads the value column

_rng = np.random.default_rng(162)
STEP_CASES = [
    (X_COPY, TARGETS_COPY, *(0.1 * _rng.normal(size=(3, 2)) for _ in range(2)), W_V_COPY, 0.5),
    # two sequences of n = 5, d_model = 3, d_k = 4, d_v = 2
    (*(_rng.normal(size=s) for s in [(2, 5, 3), (2, 5, 2), (3, 4), (3, 4), (3, 2)]), 0.1),
    # one sequence of n = 4, d_model = 6, d_k = 2, d_v = 3
    (*(_rng.normal(size=s) for s in [(4, 6), (4, 3), (6, 2), (6, 2), (6, 3)]), 0.5),
]

FIX_TRAIN_STEP = Exercise(
    id="fix_train_step",
    lesson="17_training_an_attention_head",
    kind="function",
    answer="train_step",
    hints=[
        "Print the loss before and after one broken step: which way does it move?",
        "The loss is the mean of the squared errors, so its slope for one output entry is "
        "2 (output - target) divided by the number of entries. A descent step subtracts "
        "learning_rate times the gradient.",
    ],
    solution="def train_step(X, targets, W_Q, W_K, W_V, learning_rate):\n"
    "    output, _ = attnlib.attention(X @ W_Q, X @ W_K, X @ W_V)  # (..., n, d_v)\n"
    "    dOutput = 2 * (output - targets) / output.size  # slope of the mean squared error\n"
    "    _, dW_Q, dW_K, _ = attnlib.self_attention_backward(X, W_Q, W_K, W_V, dOutput)\n"
    "    return W_Q - learning_rate * dW_Q, W_K - learning_rate * dW_K",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[*STEP_CASES, widened(STEP_CASES[1], 2, 200)],
    reference=_train_step,
    mistakes=[("gradient_ascent", _ascent_step), ("mse_not_averaged", _summed_step)],
    arg_names=("X", "targets", "W_Q", "W_K", "W_V", "learning_rate"),
    result_names=("W_Q", "W_K"),
)


# ---- nudge_one_weight: one gradient entry by nudging ------------------------------------------
_V = ex.X @ ex.W_V  # (n, d_v): the worked example's values
_TARGETS = np.repeat(_V[ex.TOKENS.index("seeds")][None, :], 3, axis=0)  # seeds' value, each row
_OUTPUT = attention(ex.X @ ex.W_Q, ex.X @ ex.W_K, _V)[0]  # (3, 2)
_D_OUTPUT = 2 * (_OUTPUT - _TARGETS) / _OUTPUT.size  # slope of the mean squared error
_SLOPE = self_attention_backward(ex.X, ex.W_Q, ex.W_K, ex.W_V, _D_OUTPUT)[2][1, 1]  # dW_K[1, 1]

NUDGE_ONE_WEIGHT = Exercise(
    id="nudge_one_weight",
    lesson="17_training_an_attention_head",
    kind="value",
    answer="slope",
    hints=[
        "Copy W_K twice, add h to entry [1, 1] of one copy and subtract h from the other, and "
        "compute the loss with each.",
        "The slope is (loss with the entry raised - loss with it lowered) / (2 * h): the two "
        "nudges are 2h apart.",
    ],
    solution=lambda: (
        "up, down = W_K.copy(), W_K.copy()\n"
        "up[1, 1] += h\n"
        "down[1, 1] -= h\n"
        "slope = (loss(up) - loss(down)) / (2 * h)  # " + f"{_SLOPE:.4f}"
    ),
    expected=_SLOPE,
    mistakes={"slope_not_halved": 2 * _SLOPE, "slope_sign": -_SLOPE},
    decimals=4,
    name="slope",
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    DW_BY_HAND,
    SELF_ATTENTION_GRADS,
    PREDICT_UNTOUCHED_ROWS,
    FIX_TRAIN_STEP,
    NUDGE_ONE_WEIGHT,
)
