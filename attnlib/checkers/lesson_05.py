"""Checkers for lesson 05, softmax: from scores to weights.

Ids: ``softmax_eat_row`` (one row by hand), ``float16_weights`` (transfer: half precision,
where exp overflows past about 11), ``softmax_predict_key_shift`` and
``softmax_predict_double`` (predict, then check), ``softmax_fix_axis`` (find the bug:
weights normalised down the columns). The required ``softmax`` lives in formula.py.
Expected answers come from ``attnlib.core``.
"""

import numpy as np

from .. import example as ex
from ..core import scale_scores, softmax
from ..selfcheck.exercise import Exercise
from . import formula, naive_softmax, widened

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
        "Check your weights: three positive numbers that sum to 1, the largest on the key "
        "with the largest score.",
    ],
    solution=lambda: (
        "e = np.exp(scaled_scores[1])\neat_weights = e / e.sum()\n"
        f"# {np.round(softmax(SCALED[EAT]), 3).tolist()}"
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


# ---- float16_weights: half precision overflows past exp(11.09) -------------------------------
# the third row is past float64's 709 too, and spread wider than 709: only the row max works in
# every dtype (a naive softmax, or one shifted by the row min, hidden by a wider dtype fails)
S16 = np.array(
    [[11.5, 9.0, 10.0, 8.5], [3.0, 12.0, 11.25, 0.5], [1000.0, 998.0, 250.0, 1001.0]],
    dtype=np.float16,
)  # (3, 4)
S16_AS_64 = S16.astype(np.float64)  # the same numbers, exactly
with np.errstate(over="ignore", invalid="ignore"):
    S16_NAIVE = naive_softmax(S16)  # exp(11.5) > 65504 is inf, and inf / inf is nan

FLOAT16_WEIGHTS = Exercise(
    id="float16_weights",
    lesson="05_softmax",
    kind="value",
    answer="weights16",
    hints=[
        "The largest float16 is 65504 and exp(11.5) is about 98700: np.exp(S16) holds inf.",
        "Softmax ignores a shift shared by a row: subtract each row's maximum first, then "
        "every exponent is at most 0.",
        "Stay in float16 (no cast): the row maxima need keepdims=True so that the "
        "subtraction, and later the division by each row's sum, line up with the rows.",
    ],
    solution=lambda: (
        "z = S16 - S16.max(axis=-1, keepdims=True)  # every exponent <= 0\n"
        "e = np.exp(z)\n"
        "weights16 = e / e.sum(axis=-1, keepdims=True)\n"
        f"# {np.round(softmax(S16_AS_64), 3).tolist()}"
    ),
    expected=softmax(S16_AS_64),
    mistakes=[
        ("overflow", S16_NAIVE),
        ("wrong_axis", softmax(S16_AS_64, axis=0)),
    ],
    decimals=3,  # float16 keeps about 3 decimal digits
    name="weights16",
    dtype="float16",  # the exercise is about half precision: a float64 answer is wrong
)


# ---- softmax_predict_key_shift / softmax_predict_double ------------------------------------------
SOFTMAX_PREDICT_KEY_SHIFT = Exercise(
    id="softmax_predict_key_shift",
    lesson="05_softmax",
    kind="choice",
    answer="seeds_plus_1",
    hints=[
        "Look at one row: which of its three scores changed, and which did not?",
        "Softmax only sees gaps: the ratio of two weights is e^(gap). Which gaps of a row "
        "change when only seeds' score goes up by 1, and which way?",
    ],
    solution="seeds_plus_1 = 'rises'  # in every row, seeds gains 1 on the other two keys",
    expected="rises",
    options=["unchanged", "rises", "falls"],
    mistakes={"unchanged": "shift_per_row"},
)


SOFTMAX_PREDICT_DOUBLE = Exercise(
    id="softmax_predict_double",
    lesson="05_softmax",
    kind="choice",
    answer="times_2",
    hints=[
        "Doubling every score doubles every gap between two scores.",
        "The ratio of two weights is e^(gap). What happens to the ratio between the top "
        "weight and another one when their gap doubles?",
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


def _sum_down_columns(S, d_k):
    z = S / np.sqrt(d_k)
    e = np.exp(z - z.max(axis=-1, keepdims=True))  # the row max is right ...
    return e / e.sum(axis=0, keepdims=True)  # ... the bug in the notebook: the column sums


FIX_AXIS_MISTAKES = [
    ("wrong_axis", _sum_down_columns),
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
        "One query's scores lie along the last axis: sum there, and keep that axis "
        "(keepdims=True) so that the division lines up row by row.",
    ],
    solution="def weights_from_scores(S, d_k):\n"
    "    z = S / np.sqrt(d_k)\n"
    "    z = z - z.max(axis=-1, keepdims=True)\n"
    "    e = np.exp(z)\n"
    "    return e / e.sum(axis=-1, keepdims=True)",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[*FIX_AXIS_CASES, widened(FIX_AXIS_CASES[1], 0, 500)],
    reference=_weights_from_scores,
    mistakes=FIX_AXIS_MISTAKES,
    arg_names=("S", "d_k"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    SOFTMAX_EAT_ROW,
    formula.SOFTMAX,
    FLOAT16_WEIGHTS,
    SOFTMAX_PREDICT_KEY_SHIFT,
    SOFTMAX_PREDICT_DOUBLE,
    SOFTMAX_FIX_AXIS,
)
