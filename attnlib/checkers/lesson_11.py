"""Checkers for lesson 11, attention with no weights, and attention as lookup.

Ids: ``noweights_scores`` (X X^T / sqrt(d_model) by hand), ``noweights_attention``
(write softmax(X X^T / sqrt(d_model)) X), ``noweights_predict_mirror`` (predict which of
a_01 and a_10 is larger, then check), ``noweights_fix_smoother`` (find the bug in a
Nadaraya-Watson kernel smoother), ``noweights_gaussian_term`` (which term of a Gaussian
kernel softmax ignores). Expected answers come from ``attnlib.core``.
"""

import numpy as np

from .. import example as ex
from ..core import attention, qk_scores, scale_scores, softmax
from ..selfcheck.exercise import Exercise
from . import widened

X = ex.X  # (n, d_model) = (3, 4), the worked example's tokens
D_MODEL = X.shape[1]

# ---- noweights_scores: by hand --------------------------------------------------------------
S_SELF = qk_scores(X, X)  # (n, n) = X X^T

NOWEIGHTS_SCORES = Exercise(
    id="noweights_scores",
    lesson="11_attention_without_weights",
    kind="value",
    answer="scores_by_hand",
    hints=[
        "Entry [i, j] is token i's vector dotted with token j's, then divided by sqrt(4).",
        "birds . birds = 1 + 0 + 4 + 0 = 5, and sqrt(4) = 2: divide every dot product by that.",
    ],
    solution=lambda: (
        "scores_by_hand = [\n"
        + "".join(
            f"    [{', '.join(f'{v:g}' for v in row)}],\n" for row in scale_scores(S_SELF, D_MODEL)
        )
        + "]  # X X^T / sqrt(4): the dot products, halved"
    ),
    expected=scale_scores(S_SELF, D_MODEL),
    mistakes={
        "unscaled": S_SELF,
        "divided_by_d_k": S_SELF / D_MODEL,
        "counted_tokens": scale_scores(S_SELF, X.shape[0]),
    },
    decimals=2,
    name="the scores",
)


# ---- noweights_attention: write the function ------------------------------------------------
def _no_weights(X, divide_by=None, axis=-1):
    d_model = X.shape[-1]
    S = X @ X.T / np.sqrt(d_model if divide_by is None else divide_by(X))
    return softmax(S, axis=axis) @ X


_rng = np.random.default_rng(131)
NOWEIGHTS_CASES = [
    (_rng.normal(size=(3, 4)),),  # n = 3, d_model = 4
    (X,),  # the worked example
    (_rng.normal(size=(5, 2)),),  # more tokens than columns
    (_rng.normal(size=(2, 6)),),
]

NOWEIGHTS_ATTENTION = Exercise(
    id="noweights_attention",
    lesson="11_attention_without_weights",
    kind="function",
    answer="attention_no_weights",
    hints=[
        "Queries, keys and values are all X: the scores are X @ X.T, shape (n, n).",
        "Divide by sqrt(d_model) = sqrt(X.shape[1]), softmax each row, then multiply by X.",
    ],
    solution="def attention_no_weights(X):\n"
    "    d_model = X.shape[1]\n"
    "    A = softmax_rows(X @ X.T / np.sqrt(d_model))  # (n, n)\n"
    "    return A @ X  # (n, d_model)",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[*NOWEIGHTS_CASES, widened(NOWEIGHTS_CASES[2], 0, 15)],
    reference=lambda X: attention(X, X, X)[0],
    mistakes=[
        ("unscaled", lambda X: _no_weights(X, divide_by=lambda X: 1.0)),
        ("divided_by_d_k", lambda X: _no_weights(X, divide_by=lambda X: X.shape[1] ** 2)),
        ("counted_tokens", lambda X: _no_weights(X, divide_by=lambda X: X.shape[0])),
        ("wrong_axis", lambda X: _no_weights(X, axis=0)),
    ],
    arg_names=("X",),
)


# ---- noweights_predict_mirror: predict, then check ------------------------------------------
X_MIRROR = np.array([[2.0, 0.0], [1.0, 1.0], [0.0, 1.0]])  # three tokens, d_model = 2
A_MIRROR = attention(X_MIRROR, X_MIRROR, X_MIRROR)[1]
MIRROR_OPTIONS = ("a_01", "a_10", "equal")

NOWEIGHTS_PREDICT_MIRROR = Exercise(
    id="noweights_predict_mirror",
    lesson="11_attention_without_weights",
    kind="choice",
    answer="prediction",
    hints=[
        "The scores are symmetric, s_01 = s_10. What does softmax divide row 0 and row 1 by?",
        "The two weights share their numerator, exp(s_01) = exp(s_10), and each is divided "
        "by its own row's sum Z: the row with the smaller sum gives the larger weight. "
        "Token 0 is the longest vector, so its own score is the largest in the table; work "
        "out Z_0 and Z_1 to see which sum is larger.",
    ],
    solution=lambda: (
        f"prediction = '{MIRROR_OPTIONS[int(A_MIRROR[1, 0] > A_MIRROR[0, 1])]}'  "
        f"# a_01 = {A_MIRROR[0, 1]:.3f}, a_10 = {A_MIRROR[1, 0]:.3f}: row 0's sum is larger"
    ),
    expected=MIRROR_OPTIONS[int(A_MIRROR[1, 0] > A_MIRROR[0, 1])],
    options=MIRROR_OPTIONS,
    mistakes={
        MIRROR_OPTIONS[int(A_MIRROR[1, 0] < A_MIRROR[0, 1])]: "row_sums_differ",
        "equal": "row_sums_differ",
    },
)


# ---- noweights_fix_smoother: find the bug ---------------------------------------------------
def kernel_smoother(x_query, x_data, y_data, sigma):
    """Nadaraya-Watson with a Gaussian kernel: a softmax over the data points per query."""
    scores = -((x_query[:, None] - x_data[None, :]) ** 2) / (2 * sigma**2)  # (n_q, n_k)
    return softmax(scores) @ y_data  # (n_q,)


def _smoother_columns(x_query, x_data, y_data, sigma):
    scores = -((x_query[:, None] - x_data[None, :]) ** 2) / (2 * sigma**2)
    return softmax(scores, axis=0) @ y_data  # normalised over the queries


def _smoother_unnormalised(x_query, x_data, y_data, sigma):
    scores = -((x_query[:, None] - x_data[None, :]) ** 2) / (2 * sigma**2)
    return np.exp(scores) @ y_data  # kernel values, never divided by their sum


_rng = np.random.default_rng(132)
SMOOTHER_CASES = [
    # n_q = 7 queries, n_k = 5 data points
    (np.linspace(0, 4, 7), np.sort(_rng.uniform(0, 4, 5)), _rng.normal(size=5), 0.8),
    (np.linspace(-1, 1, 3), np.linspace(-1, 1, 6), np.arange(6.0), 0.5),
    (np.array([0.3, 2.0]), np.sort(_rng.uniform(0, 3, 9)), _rng.normal(size=9), 1.5),
]

NOWEIGHTS_FIX_SMOOTHER = Exercise(
    id="noweights_fix_smoother",
    lesson="11_attention_without_weights",
    kind="function",
    answer="kernel_smoother",
    hints=[
        "Each estimate is a weighted average of y_data: which weights must sum to 1?",
        "One query's weights run over the data points, along the last axis of the "
        "(n_q, n_k) table, as a row of attention weights does.",
    ],
    solution="def kernel_smoother(x_query, x_data, y_data, sigma):\n"
    "    scores = -((x_query[:, None] - x_data[None, :]) ** 2) / (2 * sigma**2)  # (n_q, n_k)\n"
    "    weights = softmax_rows(scores)  # each query's weights sum to 1\n"
    "    return weights @ y_data  # (n_q,)",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[*SMOOTHER_CASES, widened(SMOOTHER_CASES[0], 3, 0.02)],
    reference=kernel_smoother,
    mistakes=[
        ("wrong_axis", _smoother_columns),
        ("not_normalised", _smoother_unnormalised),
        ("overflow", None),  # np.exp without the row max: every kernel value underflows to 0
    ],
    arg_names=("x_query", "x_data", "y_data", "sigma"),
)


# ---- noweights_gaussian_term: which term can softmax drop? ----------------------------------
GAUSSIAN_OPTIONS = ("x_squared", "x_j_squared", "cross_term", "none")

NOWEIGHTS_GAUSSIAN_TERM = Exercise(
    id="noweights_gaussian_term",
    lesson="11_attention_without_weights",
    kind="choice",
    answer="droppable",
    hints=[
        "Expand -(x - x_j)^2 / (2 sigma^2) into three terms. Which of them is the same for "
        "every data point x_j in one query's row?",
        "Softmax ignores a number added to every score of a row (lesson 05).",
    ],
    solution="droppable = 'x_squared'  # -x^2 / (2 sigma^2) is shared by the whole row",
    expected="x_squared",
    options=GAUSSIAN_OPTIONS,
    mistakes={
        "x_j_squared": "dropped_key_term",
        "cross_term": "dropped_key_term",
        "none": "score_gaps",
    },
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    NOWEIGHTS_SCORES,
    NOWEIGHTS_ATTENTION,
    NOWEIGHTS_PREDICT_MIRROR,
    NOWEIGHTS_FIX_SMOOTHER,
    NOWEIGHTS_GAUSSIAN_TERM,
)
