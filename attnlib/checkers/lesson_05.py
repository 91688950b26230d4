"""Checkers for lesson 05, softmax: from scores to weights.

Ids: ``softmax_eat_row`` (one row by hand), ``softmax_predict_shift`` and
``softmax_predict_double`` (predict, then check), ``softmax_fix_axis`` (find the bug:
weights normalised down the columns). The required ``softmax`` and ``weights`` live in
formula.py. Expected answers come from ``attnlib.core``.
"""

import numpy as np

from .. import example as ex
from ..core import project, qk_scores, scale_scores, softmax
from ..selfcheck import add_mistake, check_array, check_choice, check_function, exercise
from . import naive_softmax

add_mistake(  # the same wording as lesson 04's file: registering it twice is harmless
    "score_gaps",
    "softmax only sees the gaps between a row's scores: adding the same number to all of them "
    "changes nothing, multiplying them widens the gaps (sharper weights) and dividing them "
    "narrows the gaps (flatter weights).",
)

Q, K = project(ex.X, ex.W_Q), project(ex.X, ex.W_K)  # (3, 2) each
S = qk_scores(Q, K)  # (n_q, n_k) = (3, 3)
d_k = ex.d_k
SCALED = scale_scores(S, d_k)  # (3, 3)
EAT = ex.TOKENS.index("eat")
PREDICT_OPTIONS = ["same", "sharper", "flatter"]


# ---- softmax_eat_row: one row by hand --------------------------------------------------------
@exercise(
    "softmax_eat_row",
    hints=[
        "Eat's row is scaled_scores[1]. Start with np.exp of it: three positive numbers.",
        "Add the three exponentials; each weight is one exponential divided by that total.",
        "e = np.exp(scaled_scores[1]); eat_weights = e / e.sum()",
    ],
    solution=lambda: (
        f"e = np.exp(scaled_scores[1])\neat_weights = e / e.sum()\n{softmax(SCALED[EAT])}"
    ),
)
def _softmax_eat_row(answer):
    return check_array(
        answer,
        softmax(SCALED[EAT]),
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
@exercise(
    "softmax_predict_shift",
    hints=[
        "e^(x + 100) = e^100 e^x: every exponential in the row gets the same factor.",
        "A factor shared by every term of a fraction's top and bottom cancels.",
    ],
    solution="add_100 = 'same'  # softmax(x + c) = softmax(x)",
)
def _softmax_predict_shift(answer):
    return check_choice(
        answer,
        "same",
        options=PREDICT_OPTIONS,
        mistakes={"sharper": "score_gaps", "flatter": "score_gaps"},
    )


@exercise(
    "softmax_predict_double",
    hints=[
        "Doubling every score doubles every gap between two scores.",
        "The ratio of two weights is e^(gap): a bigger gap makes the winner win by more.",
    ],
    solution="times_2 = 'sharper'  # the gaps double, so the biggest weight grows",
)
def _softmax_predict_double(answer):
    return check_choice(
        answer,
        "sharper",
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


@exercise(
    "softmax_fix_axis",
    hints=[
        "Print the row sums of the broken result: which axis does sum to 1?",
        "The sum runs over axis=0, down the columns. Each query's row must sum to 1.",
        "Subtract each row's own max and sum with axis=-1, keepdims=True.",
    ],
    solution=(
        "def weights_from_scores(S, d_k):\n"
        "    z = S / np.sqrt(d_k)\n"
        "    z = z - z.max(axis=-1, keepdims=True)\n"
        "    e = np.exp(z)\n"
        "    return e / e.sum(axis=-1, keepdims=True)"
    ),
)
def _softmax_fix_axis(answer):
    return check_function(
        answer,
        FIX_AXIS_CASES,
        reference=_weights_from_scores,
        mistakes=FIX_AXIS_MISTAKES,
        arg_names=("S", "d_k"),
    )
