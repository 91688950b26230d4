"""Checkers for lesson 21, training an attention head.

Ids: ``fix_train_step`` (find the bug: a training step on the copy-the-marked-value task
that climbs), ``nudge_one_weight`` (transfer: one entry of a gradient measured by nudging
the weight and watching the loss), ``untrained_key_row`` (predict then check: which row of
W_K training on the copy task never moves).
Expected answers come from ``attnlib.grad`` and ``attnlib.core``.
"""

import numpy as np

from .. import example as ex
from ..core import attention
from ..grad import self_attention_backward
from ..selfcheck.exercise import Exercise
from . import widened


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
    lesson="21_training_an_attention_head",
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
    lesson="21_training_an_attention_head",
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


# ---- untrained_key_row: which row of W_K training never moves -----------------------------
# X's columns on the copy task: value, marker, constant 1; row a of W_K reads column a
KEY_ROWS = ("row 0", "row 1", "row 2", "none")


def _unmoved_key_rows(n_steps=100, learning_rate=0.5):
    """Train the lesson's copy task (16 sequences of 4 tokens) and name the rows of W_K that
    end where they started (to 1e-12: a gradient of 0 is a sum that rounds to about 1e-17)."""
    rng = np.random.default_rng(17)
    X = np.zeros((16, 4, 3))  # (B, n, d_model)
    X[..., 0] = rng.integers(-2, 3, size=(16, 4))
    marked = rng.integers(0, 4, size=16)
    X[np.arange(16), marked, 1] = 1.0
    X[..., 2] = 1.0
    targets = np.repeat(X[np.arange(16), marked, 0][:, None, None], 4, axis=1)  # (16, 4, 1)
    W_Q, W_K = 0.1 * rng.normal(size=(3, 2)), 0.1 * rng.normal(size=(3, 2))
    W_K_start = W_K.copy()
    for _ in range(n_steps):
        W_Q, W_K = _train_step(X, targets, W_Q, W_K, W_V_COPY, learning_rate)
    still = np.abs(W_K - W_K_start).max(axis=1) < 1e-12
    return [KEY_ROWS[a] for a in np.flatnonzero(still)] or ["none"]


(UNMOVED_KEY_ROW,) = _unmoved_key_rows()  # the constant row: it shifts every score equally

UNTRAINED_KEY_ROW = Exercise(
    id="untrained_key_row",
    lesson="21_training_an_attention_head",
    kind="choice",
    answer="prediction",
    hints=[
        "Softmax ignores a shift: adding the same amount to every one of a query's scores "
        "leaves its weights as they were (lesson 05), so a weight that only does that gets "
        "gradient 0.",
        "Row a of W_K adds X[j, a] times that row to key j. It shifts every key's score by the "
        "same amount only if column a of X is the same for every token.",
    ],
    solution=f"prediction = {UNMOVED_KEY_ROW!r}  # X's constant 1: the same shift for every key",
    expected=UNMOVED_KEY_ROW,
    options=KEY_ROWS,
    mistakes={
        "row 0": "key_row_reads_value",
        "row 1": "key_row_reads_marker",
        "none": "score_shift_has_gradient",
    },
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    FIX_TRAIN_STEP,
    NUDGE_ONE_WEIGHT,
    UNTRAINED_KEY_ROW,
)
