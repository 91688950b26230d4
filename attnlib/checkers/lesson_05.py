"""Checkers for lesson 05, softmax: from scores to weights.

Ids: ``softmax_eat_row`` (one row by hand), ``softmax_predict_shift`` and
``softmax_predict_double`` (predict, then check), ``softmax_fix_axis`` (find the bug:
weights normalised down the columns). The required ``softmax`` and ``weights`` live in
formula.py. Expected answers come from ``attnlib.core``.
"""

import numpy as np

from .. import example as ex
from ..core import scale_scores, softmax
from ..selfcheck.exercise import Exercise
from . import formula, naive_softmax

Q, K, S = ex.Q, ex.K, ex.S  # the worked example: (3, 2), (3, 2), (n_q, n_k) = (3, 3)
d_k = ex.d_k
SCALED = scale_scores(S, d_k)  # (3, 3)
EAT = ex.TOKENS.index("eat")
PREDICT_OPTIONS = ["same", "sharper", "flatter"]


# ---- softmax_eat_row: one row by hand --------------------------------------------------------
SOFTMAX_EAT_ROW = Exercise(
    id="softmax_eat_row",
    lesson="05_softmax",
    kind="value",
    answer="eat_weights",
    hints=[
        "Eat's row is scaled_scores[1]. Start with np.exp of it: three positive numbers.",
        "Add the three exponentials; each weight is one exponential divided by that total.",
        "e = np.exp(scaled_scores[1]); eat_weights = e / e.sum()",
    ],
    solution=lambda: (
        f"e = np.exp(scaled_scores[1])\neat_weights = e / e.sum()\n{softmax(SCALED[EAT])}"
    ),
    expected=softmax(SCALED[EAT]),
    mistakes={
        "unscaled": softmax(S[EAT]),
        "divided_by_d_k": softmax(S[EAT] / d_k),
        "multiplied": softmax(S[EAT] * np.sqrt(d_k)),
        "wrong_axis": softmax(SCALED[:, EAT]),  # eat's column, not its row
    },
    decimals=3,
    name="eat_weights",
)


# ---- softmax_predict_shift / softmax_predict_double ------------------------------------------
SOFTMAX_PREDICT_SHIFT = Exercise(
    id="softmax_predict_shift",
    lesson="05_softmax",
    kind="choice",
    answer="add_100",
    hints=[
        "e^(x + 100) = e^100 e^x: every exponential in the row gets the same factor.",
        "A factor shared by every term of a fraction's top and bottom cancels.",
    ],
    solution="add_100 = 'same'  # softmax(x + c) = softmax(x)",
    expected="same",
    options=PREDICT_OPTIONS,
    mistakes={"sharper": "score_gaps", "flatter": "score_gaps"},
)


SOFTMAX_PREDICT_DOUBLE = Exercise(
    id="softmax_predict_double",
    lesson="05_softmax",
    kind="choice",
    answer="times_2",
    hints=[
        "Doubling every score doubles every gap between two scores.",
        "The ratio of two weights is e^(gap): a bigger gap makes the winner win by more.",
    ],
    solution="times_2 = 'sharper'  # the gaps double, so the biggest weight grows",
    expected="sharper",
    options=PREDICT_OPTIONS,
    mistakes={"same": "score_gaps", "flatter": "score_gaps"},
)


# ---- softmax_fix_axis: repair weights normalised down the columns ---------------------------
_rng = np.random.default_rng(5)
FIX_AXIS_CASES = [
    (S, d_k),  # the worked example
    (_rng.normal(size=(3, 5)) * 3, 4),  # n_q = 3, n_k = 5, d_k = 4
    (2000 + _rng.normal(size=(4, 2)) * 10, 16),  # scores around 2000: scaled around 500
    (3000 + _rng.normal(size=(3, 5)) * 20, 4),  # scaled around 1500: a naive exp overflows
]


def _weights_from_scores(S, d_k):
    return softmax(scale_scores(S, d_k), axis=-1)


def _global_max_columns(S, d_k):
    z = S / np.sqrt(d_k)
    e = np.exp(z - z.max())  # the bug in the notebook: sums down the columns
    return e / e.sum(axis=0, keepdims=True)


FIX_AXIS_MISTAKES = [
    ("wrong_axis", _global_max_columns),
    ("wrong_axis", lambda S, d_k: softmax(scale_scores(S, d_k), axis=0)),
    ("transposed", lambda S, d_k: softmax(scale_scores(S, d_k), axis=-1).T),
    ("unscaled", lambda S, d_k: softmax(S)),
    ("divided_by_d_k", lambda S, d_k: softmax(S / d_k)),
    ("multiplied", lambda S, d_k: softmax(S * np.sqrt(d_k))),
    ("overflow", lambda S, d_k: naive_softmax(S / np.sqrt(d_k))),
]


SOFTMAX_FIX_AXIS = Exercise(
    id="softmax_fix_axis",
    lesson="05_softmax",
    kind="function",
    answer="weights_from_scores",
    hints=[
        "Print the row sums of the broken result: which axis does sum to 1?",
        "The sum runs over axis=0, down the columns. Each query's row must sum to 1.",
        "Subtract each row's own max and sum with axis=-1, keepdims=True.",
    ],
    solution="def weights_from_scores(S, d_k):\n"
    "    z = S / np.sqrt(d_k)\n"
    "    z = z - z.max(axis=-1, keepdims=True)\n"
    "    e = np.exp(z)\n"
    "    return e / e.sum(axis=-1, keepdims=True)",
    cases=FIX_AXIS_CASES,
    reference=_weights_from_scores,
    mistakes=FIX_AXIS_MISTAKES,
    arg_names=("S", "d_k"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    SOFTMAX_EAT_ROW,
    formula.SOFTMAX,
    formula.WEIGHTS,
    SOFTMAX_PREDICT_SHIFT,
    SOFTMAX_PREDICT_DOUBLE,
    SOFTMAX_FIX_AXIS,
)
