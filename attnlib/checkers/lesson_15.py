"""Checkers for lesson 15, rotary in practice: layouts, long context and ALiBi.

Ids: ``rope_fix_halves`` (find the bug: the half layout with angles laid out for the
interleaved one), ``alibi_slopes_by_hand`` (by hand: the slopes of heads 0 and 2 of 4),
``alibi_bias`` (the ALiBi bias for cached keys, a transfer). Expected answers come from
``attnlib.rotary`` and ``attnlib.masks``; the mistakes are written out here.
"""

import numpy as np

from ..masks import causal_mask
from ..rotary import apply_rotary
from ..selfcheck.exercise import Exercise
from .lesson_14 import _rotate  # the rotation with switches that make each mistake

LESSON = "15_rotary_in_practice"


_rng = np.random.default_rng(201)  # the cases of this lesson's exercises


# ---- rope_fix_halves: find the bug -------------------------------------------------------
def rotate_halves(X, positions):
    """The half layout: column i turns with column i + d / 2 by places[j] theta_i."""
    return apply_rotary(X, positions, layout="half")


def _rotate_halves_mixed(X, positions):
    d = X.shape[-1]
    theta = 10000.0 ** (-2 * np.arange(d // 2) / d)
    angles = np.asarray(positions, dtype=np.float64)[:, None] * theta  # (n, d / 2)
    cos = np.repeat(np.cos(angles), 2, axis=-1)  # the bug: c0 c0 c1 c1 ..., interleaved order
    sin = np.repeat(np.sin(angles), 2, axis=-1)
    x1, x2 = X[:, : d // 2], X[:, d // 2 :]
    return X * cos + np.concatenate([-x2, x1], axis=-1) * sin


HALVES_CASES = [
    (_rng.normal(size=(3, 4)), np.array([0, 1, 2])),
    (_rng.normal(size=(5, 8)), np.array([7, 2, 0, 11, 3])),
    (_rng.normal(size=(2, 6)), np.array([40, 1])),
]

ROPE_FIX_HALVES = Exercise(
    id="rope_fix_halves",
    lesson=LESSON,
    kind="function",
    answer="rotate_halves",
    hints=[
        "Print cos for d = 8: which angle meets column 1, and which column is column 1's "
        "partner in the half layout?",
        "Column i and column i + d / 2 must turn by the same angle p theta_i, so the "
        "angles repeat as a block: theta_0 .. theta_3, theta_0 .. theta_3.",
        "Build the (n, d) tables from the (n, d / 2) ones by putting a copy of the whole "
        "table beside itself along the last axis, not by repeating each column in place.",
    ],
    solution="def rotate_halves(X, positions):\n"
    "    d = X.shape[-1]\n"
    "    theta = 10000.0 ** (-2 * np.arange(d // 2) / d)  # (d / 2,)\n"
    "    angles = np.asarray(positions)[:, None] * theta  # (n, d / 2)\n"
    "    cos = np.concatenate([np.cos(angles)] * 2, axis=-1)  # (n, d): both halves alike\n"
    "    sin = np.concatenate([np.sin(angles)] * 2, axis=-1)\n"
    "    x1, x2 = X[:, : d // 2], X[:, d // 2 :]\n"
    "    return X * cos + np.concatenate([-x2, x1], axis=-1) * sin",
    cases=HALVES_CASES,
    reference=rotate_halves,
    mistakes=[
        ("rope_mixed_layout", _rotate_halves_mixed),
        ("rope_pairs_neighbours", lambda X, positions: _rotate(X, positions)),
    ],
    arg_names=("X", "positions"),
)


# ---- alibi_slopes_by_hand: the slopes of heads 0 and 2 of 4 ------------------------------
# 4 heads, not the lesson's 8: the lesson prints 8 heads' slopes, which would give the answer
ALIBI_H, ALIBI_HEADS = 4, (0, 2)
SLOPES = tuple(2 ** (-8 * (h + 1) / ALIBI_H) for h in ALIBI_HEADS)  # heads counted from 0

ALIBI_SLOPES_BY_HAND = Exercise(
    id="alibi_slopes_by_hand",
    lesson=LESSON,
    kind="tuple",
    answer="(slope_0, slope_2)",
    hints=[
        "Heads are counted from 0: head h has the slope 2^(-8 (h + 1) / H) when H is a power "
        "of 2, as 4 is.",
        "With H = 4 the exponent is -8 (h + 1) / 4 = -2 (h + 1). Put in h = 0, then h = 2.",
    ],
    solution="slope_0 = 2 ** (-8 * 1 / 4)  # 1/4\nslope_2 = 2 ** (-8 * 3 / 4)  # 1/64",
    expected=SLOPES,
    mistakes={
        0: {"alibi_heads_from_0": 2 ** (-8 * ALIBI_HEADS[0] / ALIBI_H)},
        1: {"alibi_heads_from_0": 2 ** (-8 * ALIBI_HEADS[1] / ALIBI_H)},
    },
    decimals=4,
    names=("slope_0", "slope_2"),
)


# ---- alibi_bias: transfer, the bias for n_q new queries after n_k - n_q cached keys -------
def alibi_bias(n_q, n_k, slope):
    """B[i, j] = -slope (n_k - n_q + i - j) for keys at or before the query, else -inf."""
    place = n_k - n_q + np.arange(n_q)[:, None]  # (n_q, 1): the queries' places
    distance = place - np.arange(n_k)[None, :]  # (n_q, n_k): how far back key j is
    allowed = causal_mask(n_q, n_k, align="bottom_right")
    return np.where(allowed, -slope * distance, -np.inf)


def _alibi(n_q, n_k, slope, sign=-1, offset=True, masked=True):
    place = (n_k - n_q if offset else 0) + np.arange(n_q)[:, None]
    distance = place - np.arange(n_k)[None, :]
    B = sign * slope * distance
    return np.where(distance >= 0, B, -np.inf) if masked else B


ALIBI_BIAS = Exercise(
    id="alibi_bias",
    lesson=LESSON,
    kind="function",
    answer="alibi_bias",
    hints=[
        "Query i is the newest of n_q, after n_k - n_q cached keys: its place is n_k - n_q "
        "+ i, and key j sits at place j.",
        "The bias is -slope times how far back the key is, (n_k - n_q + i) - j; keys with "
        "a negative distance are in the future.",
        "Build the distance table by broadcasting: the queries' places as a column (n_q, "
        "1) minus the keys' places as a row (1, n_k). A key in the future is hidden, as a "
        "causal mask hides it.",
    ],
    solution="def alibi_bias(n_q, n_k, slope):\n"
    "    place = n_k - n_q + np.arange(n_q)[:, None]  # (n_q, 1): the queries' places\n"
    "    distance = place - np.arange(n_k)[None, :]  # (n_q, n_k): how far back key j is\n"
    "    return np.where(distance >= 0, -slope * distance, -np.inf)",
    cases=[(3, 3, 0.5), (2, 5, 0.25), (4, 6, 1.0), (1, 4, 0.125)],
    reference=alibi_bias,
    mistakes=[
        ("alibi_sign", lambda n_q, n_k, slope: _alibi(n_q, n_k, slope, sign=1)),
        ("alibi_top_left", lambda n_q, n_k, slope: _alibi(n_q, n_k, slope, offset=False)),
        ("alibi_future_unmasked", lambda n_q, n_k, slope: _alibi(n_q, n_k, slope, masked=False)),
    ],
    arg_names=("n_q", "n_k", "slope"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    ROPE_FIX_HALVES,
    ALIBI_SLOPES_BY_HAND,
    ALIBI_BIAS,
)
