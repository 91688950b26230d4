"""Checkers for lesson 14, rotary positions.

Ids: ``rope_by_hand`` (birds' query turned to place 2 and its score with seeds' key at
place 0), ``rope_rotate`` (write the interleaved rotation), ``rope_predict_swap`` (does
swapping the places of a query and a key keep the score?), ``rope_fix_halves`` (find the
bug: the half layout with angles laid out for the interleaved one), ``alibi_bias`` (the
ALiBi bias for cached keys, a transfer). Expected answers come from ``attnlib.rotary``
and ``attnlib.masks``; the mistakes are written out here.
"""

import numpy as np

from .. import example as ex
from ..rotary import apply_rotary
from ..selfcheck.exercise import Exercise

LESSON = "14_rotary_positions"


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


# the exercises in the order of the notebook's check cells
EXERCISES = (
    ROPE_BY_HAND,
    ROPE_ROTATE,
    ROPE_PREDICT_SWAP,
)
