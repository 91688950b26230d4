"""Checkers for lesson 12, order and positions.

Ids: ``order_by_hand`` (the outputs of "seeds eat birds" from those of "birds eat seeds"),
``order_positions`` (the sinusoidal table in the half layout: every sine, then every
cosine), ``order_predict_eat`` (predict whether eat's output changes between the two orders
once positions are added), ``order_fix_add`` (find the bug: encodings that travel with the
words), ``order_shift_map`` (the matrix M(k) with PE[p + k] = M(k) PE[p], in the half
layout). Expected answers come from ``attnlib.core`` and
``attnlib.positions``.
"""

import numpy as np

from .. import example as ex
from ..core import attention
from ..positions import sinusoidal_positions
from ..selfcheck.exercise import Exercise

X, W_Q, W_K, W_V = ex.X, ex.W_Q, ex.W_K, ex.W_V  # the worked example
SEB = np.array([2, 1, 0])  # "seeds eat birds": row i is token SEB[i]


def _self_attention(X):
    return attention(X @ W_Q, X @ W_K, X @ W_V)[0]  # (n, d_v)


# ---- order_by_hand --------------------------------------------------------------------------
ORDER_BY_HAND = Exercise(
    id="order_by_hand",
    lesson="12_order_and_positions",
    kind="value",
    answer="output_seb",
    hints=[
        "Shuffling the input rows shuffles the output rows the same way: no new arithmetic.",
        "Row 0 of the new output belongs to seeds, so it is seeds' row of the old output.",
    ],
    solution=lambda: (
        "output_seb = [\n"
        + "".join(f"    [{a:.2f}, {b:.2f}],\n" for a, b in _self_attention(X[SEB]))
        + "]  # seeds, eat, birds: the old rows in the new order"
    ),
    expected=_self_attention(X[SEB]),
    mistakes={"rows_out_of_order": _self_attention(X)},
    decimals=2,
    name="the output",
)


# ---- order_positions: the encodings in the half layout (sines first, then cosines) ---------
def _angles(n, d_model, exponent=2):
    p = np.arange(n)[:, None]  # (n, 1)
    i = np.arange(d_model // 2)[None, :]  # (1, d_model / 2)
    return p * 10000.0 ** (-exponent * i / d_model)  # (n, d_model / 2): p w_i


def positions_halves(n, d_model, swap=False, exponent=2):
    """The sinusoidal table with pair i in columns i (sin) and i + d_model / 2 (cos)."""
    angles = _angles(n, d_model, exponent)
    first, second = (np.cos, np.sin) if swap else (np.sin, np.cos)
    return np.concatenate([first(angles), second(angles)], axis=-1)  # (n, d_model)


ORDER_POSITIONS = Exercise(
    id="order_positions",
    lesson="12_order_and_positions",
    kind="function",
    answer="positions_halves",
    hints=[
        "Build the positions as a column, shape (n, 1), and the frequencies as a row, one per "
        "pair of columns, so p * w has shape (n, d_model / 2): one angle per position and pair.",
        "The lesson's table puts pair i in columns 2i and 2i + 1; this one puts the sine in "
        "column i and the cosine in column i + d_model / 2: all the sines first, as one block.",
        "np.concatenate joins two arrays along an axis: which two (n, d_model / 2) tables, in "
        "which order, along which axis?",
    ],
    solution="def positions_halves(n, d_model):\n"
    "    p = np.arange(n)[:, None]  # (n, 1)\n"
    "    w = 10000.0 ** (-2 * np.arange(d_model // 2) / d_model)  # (d_model / 2,)\n"
    "    return np.concatenate([np.sin(p * w), np.cos(p * w)], axis=-1)  # (n, d_model)",
    cases=[(3, 4), (6, 8), (5, 2), (4, 6)],
    reference=positions_halves,
    mistakes=[
        ("pe_interleaved", sinusoidal_positions),
        ("sin_cos_swapped", lambda n, d_model: positions_halves(n, d_model, swap=True)),
        ("pe_exponent", lambda n, d_model: positions_halves(n, d_model, exponent=1)),
    ],
    arg_names=("n", "d_model"),
)


# ---- order_predict_eat ----------------------------------------------------------------------
ORDER_PREDICT_EAT = Exercise(
    id="order_predict_eat",
    lesson="12_order_and_positions",
    kind="choice",
    answer="prediction",
    hints=[
        "eat keeps place 1 and its own encoding. What else goes into eat's output?",
        "eat's output blends every token's value; birds and seeds swap places, so they carry "
        "each other's encodings in the two sentences.",
    ],
    solution="prediction = 'different'  # birds and seeds change places, and eat blends them",
    expected="different",
    options=("same", "different"),
    mistakes={"same": "own_position_only"},
)


# ---- order_fix_add: find the bug ------------------------------------------------------------
def add_positions(X, sentence):
    """The input rows of a sentence (word indices into X) with each place's encoding added."""
    X_sentence = X[sentence]  # (n, d_model): row p is the word in place p
    return X_sentence + sinusoidal_positions(*X_sentence.shape)  # row p gets PE[p]


def _positions_follow_words(X, sentence):
    PE = sinusoidal_positions(*X.shape)  # one encoding per word of X
    return (X + PE)[sentence]  # the encodings move with the words


_rng = np.random.default_rng(141)
ADD_CASES = [
    (X, SEB),  # the worked example, "seeds eat birds"
    (_rng.normal(size=(5, 4)), np.array([3, 0, 4, 1, 2])),  # 5 words, d_model = 4
    (_rng.normal(size=(4, 6)), np.array([1, 0, 3, 2])),
]

ORDER_FIX_ADD = Exercise(
    id="order_fix_add",
    lesson="12_order_and_positions",
    kind="function",
    answer="add_positions",
    hints=[
        "Run both sentences through the broken function: are the outputs per word still "
        "identical? Then the encodings carry no information about order.",
        "Reorder the words first, then add PE[p] to the row in place p.",
    ],
    solution="def add_positions(X, sentence):\n"
    "    X_sentence = X[sentence]  # (n, d_model): row p is the word in place p\n"
    "    return X_sentence + attnlib.sinusoidal_positions(*X_sentence.shape)",
    cases=ADD_CASES,
    reference=add_positions,
    mistakes=[("positions_follow_words", _positions_follow_words)],
    arg_names=("X", "sentence"),
)


# ---- order_shift_map: transfer, the shift as a matrix in the half layout --------------------
def shift_map(k, d_model):
    """M(k), block-diagonal, with PE[p + k] = M(k) @ PE[p] (the lesson's interleaved layout)."""
    M = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        angle = k * 10000.0 ** (-2 * i / d_model)
        c, s = np.cos(angle), np.sin(angle)
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[c, s], [-s, c]]
    return M


def shift_map_halves(k, d_model, exponent=2):
    """M(k) with positions_halves(...)[p + k] = M(k) @ positions_halves(...)[p] for every p."""
    h = d_model // 2
    M = np.zeros((d_model, d_model))
    for i in range(h):
        angle = k * 10000.0 ** (-exponent * i / d_model)
        c, s = np.cos(angle), np.sin(angle)
        M[i, i], M[i, i + h] = c, s  # sin((p + k) w) = sin(p w) cos(k w) + cos(p w) sin(k w)
        M[i + h, i], M[i + h, i + h] = -s, c  # cos((p + k) w) = cos cos - sin sin
    return M


ORDER_SHIFT_MAP = Exercise(
    id="order_shift_map",
    lesson="12_order_and_positions",
    kind="function",
    answer="shift_map_halves",
    hints=[
        "sin((p + k) w) = sin(p w) cos(k w) + cos(p w) sin(k w), and "
        "cos((p + k) w) = cos(p w) cos(k w) - sin(p w) sin(k w): each new entry of a pair is "
        "made from the pair's two old entries.",
        "In the half layout pair i sits in columns i (sine) and i + d_model / 2 (cosine), so "
        "its 2 x 2 rotation is spread over rows and columns i and i + d_model / 2, not over "
        "two neighbours.",
        "Test it: M(k) @ PE[p] must equal PE[p + k] for several p, with your positions_halves "
        "of exercise 2 (or PE[:-k] @ M.T against PE[k:] for all of them at once).",
    ],
    solution="def shift_map_halves(k, d_model):\n"
    "    h = d_model // 2\n"
    "    M = np.zeros((d_model, d_model))\n"
    "    for i in range(h):\n"
    "        angle = k * 10000.0 ** (-2 * i / d_model)  # k w_i\n"
    "        c, s = np.cos(angle), np.sin(angle)\n"
    "        M[i, i], M[i, i + h] = c, s  # the sine's row\n"
    "        M[i + h, i], M[i + h, i + h] = -s, c  # the cosine's row\n"
    "    return M",
    cases=[(1, 4), (3, 6), (5, 2), (2, 8)],
    reference=shift_map_halves,
    mistakes=[
        ("pe_interleaved", shift_map),
        ("rotation_transposed", lambda k, d_model: shift_map_halves(k, d_model).T),
        ("pe_exponent", lambda k, d_model: shift_map_halves(k, d_model, exponent=1)),
    ],
    arg_names=("k", "d_model"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    ORDER_BY_HAND,
    ORDER_POSITIONS,
    ORDER_PREDICT_EAT,
    ORDER_FIX_ADD,
    ORDER_SHIFT_MAP,
)
