"""Checkers for lesson 13, rotary positions.

Ids: ``rope_by_hand`` (birds' query turned to place 2 and its score with seeds' key at
place 0), ``rope_rotate`` (write the interleaved rotation), ``rope_predict_swap`` (does
swapping the places of a query and a key keep the score?), ``rope_fix_halves`` (find the
bug: the half layout with angles laid out for the interleaved one), ``alibi_bias`` (the
ALiBi bias for cached keys, a transfer). Expected answers come from ``attnlib.rotary``
and ``attnlib.masks``; the mistakes are written out here.
"""

import numpy as np

from .. import example as ex
from ..masks import causal_mask
from ..rotary import apply_rotary
from ..selfcheck.exercise import Exercise

LESSON = "13_rotary_positions"


def _turn(x, angle):
    """One pair (x_1, x_2) turned counterclockwise by ``angle``."""
    c, s = np.cos(angle), np.sin(angle)
    return np.array([x[0] * c - x[1] * s, x[0] * s + x[1] * c])


# ---- rope_by_hand: "seeds eat birds", birds' query at place 2, seeds' key at place 0 --------
Q_BIRDS, K_SEEDS = ex.Q[0], ex.K[2]  # (1, 4) and (2, 1)
P_BIRDS, R_SEEDS = 2, 0  # places in "seeds eat birds"; d_k = 2, so theta_0 = 1
_q_turned = apply_rotary(Q_BIRDS[None], [P_BIRDS])[0]
_k_turned = apply_rotary(K_SEEDS[None], [R_SEEDS])[0]  # place 0: not turned
_q_clockwise = _turn(Q_BIRDS, -P_BIRDS)

ROPE_BY_HAND = Exercise(
    id="rope_by_hand",
    lesson=LESSON,
    kind="tuple",
    answer="(q_birds, score)",
    hints=[
        "d_k = 2: one pair, theta_0 = 1, so birds' query at place 2 turns by 2 radians and "
        "seeds' key at place 0 does not turn.",
        "cos 2 = -0.416 and sin 2 = 0.909; the turned query is "
        "(1 cos 2 - 4 sin 2, 1 sin 2 + 4 cos 2).",
        "score = the turned query . (2, 1).",
    ],
    solution=lambda: (
        f"q_birds = ({_q_turned[0]:.3f}, {_q_turned[1]:.3f})"
        "  # (1 cos 2 - 4 sin 2, 1 sin 2 + 4 cos 2)\n"
        f"score = {float(_q_turned @ _k_turned):.3f}  # q_birds . (2, 1): seeds' key is at place 0"
    ),
    expected=(_q_turned, float(_q_turned @ _k_turned)),
    mistakes={
        0: {"rope_clockwise": _q_clockwise, "rope_not_rotated": Q_BIRDS},
        1: {
            "rope_clockwise": float(_q_clockwise @ K_SEEDS),
            "rope_not_rotated": float(Q_BIRDS @ K_SEEDS),
        },
    },
    decimals=2,
    names=("q_birds", "score"),
)


# ---- rope_rotate: write the interleaved rotation -------------------------------------------
def _rotate(X, positions, base=10000.0, exponent=2, direction=1, layout="interleaved"):
    """The rotation with switches that make each mistake."""
    X = np.asarray(X, dtype=np.float64)
    d = X.shape[-1]
    theta = base ** (-exponent * np.arange(d // 2) / d)  # (d / 2,)
    angles = direction * np.asarray(positions, dtype=np.float64)[:, None] * theta  # (n, d / 2)
    cos, sin = np.cos(angles), np.sin(angles)
    if layout == "interleaved":
        columns_a, columns_b = slice(0, None, 2), slice(1, None, 2)
    else:
        columns_a, columns_b = slice(0, d // 2), slice(d // 2, None)
    a, b = X[..., columns_a], X[..., columns_b]
    Y = np.empty_like(X)
    Y[..., columns_a], Y[..., columns_b] = a * cos - b * sin, a * sin + b * cos
    return Y


def rotate(X, positions):
    """Row j of X turned by places[j] theta_i in each pair of neighbouring columns."""
    return apply_rotary(X, positions)


_rng = np.random.default_rng(200)
ROTATE_CASES = [
    (ex.K, np.array([0, 1, 2])),  # the worked example's keys: one pair
    (_rng.normal(size=(5, 6)), np.array([4, 0, 9, 1, 30])),  # n = 5, d = 6
    (_rng.normal(size=(2, 8)), np.array([100.0, 7.5])),  # places need not be whole
    (_rng.normal(size=(4, 4)), np.array([3, 3, 0, 1])),
]

ROPE_ROTATE = Exercise(
    id="rope_rotate",
    lesson=LESSON,
    kind="function",
    answer="rotate",
    hints=[
        "One angle per row and pair: the places as a column (n, 1) times theta_i as a row "
        "(d / 2,) gives an (n, d / 2) table of angles.",
        "theta_i = 10000 ** (-2 i / d); the pairs are the columns X[:, 0::2] and X[:, 1::2].",
        "Turn each pair: a cos - b sin goes to the even columns, a sin + b cos to the odd ones.",
    ],
    solution="def rotate(X, positions):\n"
    "    d = X.shape[-1]\n"
    "    theta = 10000.0 ** (-2 * np.arange(d // 2) / d)  # (d / 2,)\n"
    "    angles = np.asarray(positions)[:, None] * theta  # (n, d / 2)\n"
    "    cos, sin = np.cos(angles), np.sin(angles)\n"
    "    a, b = X[:, 0::2], X[:, 1::2]  # (n, d / 2): columns 2i and 2i + 1\n"
    "    Y = np.empty(X.shape)\n"
    "    Y[:, 0::2], Y[:, 1::2] = a * cos - b * sin, a * sin + b * cos\n"
    "    return Y",
    cases=ROTATE_CASES,
    reference=rotate,
    mistakes=[
        ("rope_clockwise", lambda X, positions: _rotate(X, positions, direction=-1)),
        ("rope_exponent", lambda X, positions: _rotate(X, positions, exponent=1)),
        ("rope_pairs_halves", lambda X, positions: _rotate(X, positions, layout="half")),
    ],
    arg_names=("X", "positions"),
)


# ---- rope_predict_swap: birds' query one place after eat's key instead of one before -------
ROPE_PREDICT_SWAP = Exercise(
    id="rope_predict_swap",
    lesson=LESSON,
    kind="choice",
    answer="prediction",
    hints=[
        "The score is q^T R((r - p) theta) k: what changes when p - r goes from -1 to +1?",
        "R(1) and R(-1) differ in the sign of sin 1. Does the sine term of birds and eat "
        "vanish? It holds q_1 k_2 - q_2 k_1 = 1 x 2 - 4 x 1.",
    ],
    solution="prediction = 'different'  # the sin term q_1 k_2 - q_2 k_1 = -2 changes sign",
    expected="different",
    options=("same", "different"),
    mistakes={"same": "rope_offset_unsigned"},
)


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
    ROPE_BY_HAND,
    ROPE_ROTATE,
    ROPE_PREDICT_SWAP,
    ROPE_FIX_HALVES,
    ALIBI_BIAS,
)
