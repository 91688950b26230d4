"""Checkers for lesson 28, sliding-window attention.

Ids: ``window_by_hand`` (by hand: the window alone, w = 2, on birds, eat, seeds, and birds'
weights), ``window_ring_decode`` (write a decoder that keeps a ring of w slots, its tokens
handed over one step at a time), ``window_ring_slots`` (predict then check: which token sits
in each slot after ten tokens),
``window_fix_alignment`` (find the bug: a window over a cache aligned top-left),
``window_count_alone`` (transfer, with sympy: the count of allowed entries of the window
without causality). Expected answers come from ``attnlib.core``, ``attnlib.masks`` and
``attnlib.cache``; the mistakes are written out here.
"""

import numpy as np
import sympy as sp

from .. import example as ex
from ..cache import RingKVCache
from ..core import attention
from ..masks import sliding_window_mask
from ..selfcheck.contract import PeakMemory, Stream
from ..selfcheck.exercise import Exercise
from ..selfcheck.run import with_instructions

LESSON = "28_sliding_window_attention"


# ---- window_by_hand: the window alone, w = 2, and birds' weights -----------------------------
def _birds_weights(mask, scaled=True):
    Q = ex.Q * (1.0 if scaled else np.sqrt(ex.Q.shape[-1]))  # unscaled: undo the division
    return attention(Q, ex.K, ex.V, mask=mask)[1][0]  # (n_k,): birds' row


_ALONE2 = sliding_window_mask(3, w=2, causal=False)  # (3, 3)
_OFF_BY_ONE2 = sliding_window_mask(3, w=3, causal=False)  # |i - j| <= 2: every key
_CAUSAL2 = sliding_window_mask(3, w=2)

WINDOW_BY_HAND = Exercise(
    id="window_by_hand",
    lesson=LESSON,
    kind="tuple",
    answer="(mask, weights_birds)",
    hints=[
        "Without causality, query i may attend to key j when |i - j| < w: with w = 2, the "
        "token itself and its neighbours one place away on either side.",
        "Birds (row 0) sees birds and eat. Its scores are 3 and 9, divided by sqrt(2); seeds "
        "gets weight 0.",
        "The weight on eat is 1 / (1 + e^((3 - 9) / sqrt(2))).",
    ],
    solution=lambda: (
        "mask = [[1, 1, 0], [1, 1, 1], [0, 1, 1]]  # |i - j| < 2\n"
        f"weights_birds = ({_birds_weights(_ALONE2)[0]:.3f}, "
        f"{_birds_weights(_ALONE2)[1]:.3f}, 0)  # softmax of (3, 9) / sqrt(2), seeds hidden"
    ),
    expected=(_ALONE2.astype(float), _birds_weights(_ALONE2)),
    mistakes={
        0: {
            "window_off_by_one": _OFF_BY_ONE2.astype(float),
            "window_made_causal": _CAUSAL2.astype(float),
        },
        1: {
            "window_off_by_one": _birds_weights(_OFF_BY_ONE2),
            "window_made_causal": _birds_weights(_CAUSAL2),
            "unscaled": _birds_weights(_ALONE2, scaled=False),
        },
    },
    decimals=2,
    names=("mask", "weights_birds"),
)


# ---- window_ring_decode: a decoder with a ring of w slots -----------------------------------
def ring_decode(Q, K, V, w, d_k=None, d_v=None):
    """Row t: token t's query over the keys and values of tokens t - w + 1 .. t, from a ring.

    The learner's function takes ``(steps, w, d_k, d_v)``, where ``steps`` yields the rows
    ``(q, k, v)`` of one token at a time; the judge computes the same from the arrays.
    """
    Q = np.asarray(Q, dtype=np.float64)
    K, V = np.asarray(K, dtype=np.float64), np.asarray(V, dtype=np.float64)
    ring = RingKVCache(w, K.shape[-1], V.shape[-1])
    rows = []
    for t in range(len(Q)):
        ring.append(K[t], V[t])
        rows.append(attention(Q[t : t + 1], ring.keys, ring.values)[0][0])
    return np.array(rows)  # (n, d_v)


def _slots_decode(Q, K, V, w, slot_of, attend_first=False, scaled=True):
    """A ring decoder whose slot for token t is ``slot_of(t, w)``; the switches make slips."""
    Q, K, V = (np.asarray(M, dtype=np.float64) for M in (Q, K, V))
    size = w + 1 if slot_of is _one_more_slot else w
    K_slots, V_slots, used = np.zeros((size, K.shape[1])), np.zeros((size, V.shape[1])), []
    d_k = Q.shape[-1]
    rows = []
    for t in range(len(Q)):
        if not attend_first:
            slot = slot_of(t, w)
            K_slots[slot], V_slots[slot] = K[t], V[t]
            used = sorted(set(used) | {slot})
        if used:
            scores = K_slots[used] @ Q[t] / (np.sqrt(d_k) if scaled else 1.0)
            weights = np.exp(scores - scores.max())
            rows.append(weights / weights.sum() @ V_slots[used])
        else:  # nothing in the ring yet: an empty blend
            rows.append(np.zeros(V.shape[1]))
        if attend_first:
            slot = slot_of(t, w)
            K_slots[slot], V_slots[slot] = K[t], V[t]
            used = sorted(set(used) | {slot})
    return np.array(rows)


def _oldest_slot(t, w):
    return t % w


def _newest_slot(t, w):
    return min(t, w - 1)  # once full, always the last slot: tokens 0 .. w - 2 never leave


def _one_more_slot(t, w):
    return t % (w + 1)  # a ring of w + 1: the window holds one key too many


def _sized(Q, K, V, w):
    """A case as the learner's function sees it: the stream's arrays, w, d_k and d_v."""
    return (Q, K, V, w, np.shape(K)[-1], np.shape(V)[-1])


_rng = np.random.default_rng(94)
_FAR_KEYS = np.array([[-40.0, 0.0], [0.0, 0.0], [40.0, 0.0], [10.0, 0.0], [25.0, 0.0]])
RING_CASES = [
    _sized(*case)
    for case in [
        # n = 7, d_k = 3, d_v = 2; first, since here a window of w + 1 and no window differ
        (*(_rng.normal(size=s) for s in [(7, 3), (7, 3), (7, 2)]), 3),
        (ex.Q, ex.K, ex.V, 2),  # the worked example: seeds no longer sees birds
        (*(_rng.normal(size=s) for s in [(9, 4), (9, 4), (9, 5)]), 4),
        (*(_rng.normal(size=s) for s in [(5, 2), (5, 2), (5, 3)]), 1),  # each token sees itself
        (*(_rng.normal(size=s) for s in [(4, 3), (4, 3), (4, 2)]), 6),  # w > n: plain causal
        # scores spread past 709 in a row: exp without subtracting the row max overflows
        (np.full((5, 2), [30.0, 0.0]), _FAR_KEYS, _rng.normal(size=(5, 3)), 3),
    ]
]


def ring_memory_bound(Q, K, V, w, d_k, d_v):
    """Bytes a ring decoder may use: 512 KiB, n-row results, w slots; never the n keys."""
    return 2**19 + 16 * 8 * len(Q) * d_v + 4 * 8 * w * (d_k + d_v)


# n = 256 tokens, d_k = 1024, w = 8: the keys of every step take 2 MiB, the bound 0.79 MiB;
# stored as (256, 16) queries and keys widened 64 times over (see run.split_case)
_LARGE = [
    with_instructions(
        (*(_rng.normal(size=(256, d)) for d in (16, 16, 1)), 8, 1024, 1), widen=[[0, 64], [1, 64]]
    )
]


def _slip(**how):
    return lambda Q, K, V, w, d_k, d_v: _slots_decode(Q, K, V, w, **how)


WINDOW_RING_DECODE = Exercise(
    id="window_ring_decode",
    lesson=LESSON,
    kind="function",
    answer="ring_decode",
    hints=[
        "Keep K_slots of shape (w, d_k) and V_slots of shape (w, d_v). At step t write "
        "k and v into slot t % w first, then attend with q alone.",
        "Until the ring is full, only the slots written so far hold tokens: attend over "
        "those, never over the zeros of unwritten slots.",
        "Score the live keys against q (divided by sqrt(d_k)), take their softmax, "
        "blend the live values. The order of the slots does not matter: softmax and the "
        "blend are sums over keys.",
    ],
    solution="def ring_decode(steps, w, d_k, d_v):\n"
    "    K_slots, V_slots = np.zeros((w, d_k)), np.zeros((w, d_v))  # (w, d_k), (w, d_v)\n"
    "    rows = []\n"
    "    for t, (q, k, v) in enumerate(steps):\n"
    "        K_slots[t % w], V_slots[t % w] = k, v  # overwrite the oldest\n"
    "        live = min(t + 1, w)  # slots written so far\n"
    "        scores = K_slots[:live] @ q / np.sqrt(d_k)  # (live,)\n"
    "        weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()\n"
    "        rows.append(weights @ V_slots[:live])  # (d_v,)\n"
    "    return np.array(rows)",
    cases=RING_CASES,
    constraints=(
        Stream(3, "the queries, keys and values arrive one step at a time"),
        PeakMemory("keep no more than w keys, never every key seen", ring_memory_bound, _LARGE),
    ),
    reference=ring_decode,
    mistakes=[
        ("ring_overwrites_newest", _slip(slot_of=_newest_slot)),
        ("window_off_by_one", _slip(slot_of=_one_more_slot)),
        (
            "window_forgotten",
            lambda Q, K, V, w, d_k, d_v: _slots_decode(Q, K, V, len(Q), _oldest_slot),
        ),
        ("kv_cache_append_after", _slip(slot_of=_oldest_slot, attend_first=True)),
        ("unscaled", _slip(slot_of=_oldest_slot, scaled=False)),
    ],
    arg_names=("Q", "K", "V", "w", "d_k", "d_v"),
)


# ---- window_ring_slots: which token sits in each slot ---------------------------------------
_W_SLOTS, _N_SEEN = 4, 10
_ring = RingKVCache(_W_SLOTS, 1, 1)
_ring.append(np.zeros((_N_SEEN, 1)), np.zeros((_N_SEEN, 1)))
_SLOTS = np.array(_ring.slot_positions, dtype=float)  # [8, 9, 6, 7]

WINDOW_RING_SLOTS = Exercise(
    id="window_ring_slots",
    lesson=LESSON,
    kind="value",
    answer="slots",
    hints=[
        "Token t goes into slot t % w. Which tokens of 0 .. 9 have t % 4 == 0? The last of "
        "them is the one slot 0 still holds.",
        "Do the same for slots 1, 2 and 3: each holds the last token t with t % 4 equal to "
        "its number. Not every slot was overwritten the same number of times.",
    ],
    solution=lambda: (
        f"slots = {[int(s) for s in _SLOTS]}  # slot s holds the last token t with t % 4 == s"
    ),
    expected=_SLOTS,
    mistakes={
        "ring_overwrites_newest": [0.0, 1.0, 2.0, 9.0],  # slot w - 1 rewritten every time
        "ring_listed_by_age": [6.0, 7.0, 8.0, 9.0],  # the live tokens, not where they sit
        "ring_slot_shifted": [7.0, 8.0, 9.0, 6.0],  # token t in slot (t + 1) % w
    },
    name="slots",
)


# ---- window_fix_alignment: a window over a cache ---------------------------------------------
def window_mask(n_q, n_k, w):
    """The n_q new tokens (the last n_q of n_k) each see their own key and the w - 1 before."""
    return sliding_window_mask(n_q, n_k, w=w, align="bottom_right")


def _window_loop(n_q, n_k, w, offset=True, reach=0, causal=True):
    mask = np.zeros((n_q, n_k), dtype=bool)
    for i in range(n_q):
        p = i + (n_k - n_q if offset else 0)
        for j in range(n_k):
            near = p - j < w + reach and j - p < w
            mask[i, j] = near and (j <= p or not causal)
    return mask


ALIGN_CASES = [(2, 5, 2), (3, 8, 3), (4, 4, 2), (1, 6, 4), (3, 7, 10), (5, 9, 1)]

WINDOW_FIX_ALIGNMENT = Exercise(
    id="window_fix_alignment",
    lesson=LESSON,
    kind="function",
    answer="window_mask",
    hints=[
        "Print the broken mask for n_q = 2, n_k = 5, w = 2: which keys does the last new "
        "token see? It is token 4 of 0 .. 4.",
        "The new queries are the last n_q of n_k tokens: query i sits at position p = n_k "
        "- n_q + i, and sees keys p - w + 1 .. p.",
        "Compare by broadcasting: the positions p as a column (n_q, 1), the key positions "
        "j as a row (1, n_k); key j is visible when it is one of the w positions ending at "
        "p.",
    ],
    solution="def window_mask(n_q, n_k, w):\n"
    "    p = np.arange(n_q)[:, None] + n_k - n_q  # (n_q, 1): the new tokens' positions\n"
    "    j = np.arange(n_k)[None, :]  # (1, n_k)\n"
    "    return (j > p - w) & (j <= p)  # (n_q, n_k)",
    cases=ALIGN_CASES,
    reference=window_mask,
    mistakes=[
        ("window_top_left", lambda n_q, n_k, w: _window_loop(n_q, n_k, w, offset=False)),
        ("window_off_by_one", lambda n_q, n_k, w: _window_loop(n_q, n_k, w, reach=1)),
        ("window_not_causal", lambda n_q, n_k, w: _window_loop(n_q, n_k, w, causal=False)),
    ],
    arg_names=("n_q", "n_k", "w"),
)


# ---- window_count_alone: the count of the window without causality ---------------------------
COUNT_NAMES = ("n", "w")
_n, _w = sp.symbols(COUNT_NAMES, integer=True, positive=True)
COUNT_ALONE = _n * (2 * _w - 1) - _w * (_w - 1)  # n >= w: 2 w - 1 per row, less the two edges
COUNT_POINTS = [(10, 3), (7, 7), (100, 9), (5, 1), (12, 4), (40, 17)]

WINDOW_COUNT_ALONE = Exercise(
    id="window_count_alone",
    lesson=LESSON,
    kind="proof",
    answer="count",
    hints=[
        "Row i sees itself, min(i, w - 1) keys before it and min(n - 1 - i, w - 1) after it.",
        "By symmetry the keys after add up to the same as the keys before. The keys before "
        "are the causal count less the diagonal: sum over rows of min(i, w - 1).",
        "Split that sum at i = w - 1: rows 0 .. w - 1 add i each, rows w .. n - 1 add w - "
        "1 each. sp.summation adds each part; the count is the diagonal n plus twice the "
        "keys before.",
    ],
    solution=(
        'n, w = sp.symbols("n w", integer=True, positive=True)  # as in the exercise cell\n'
        'i = sp.Symbol("i", integer=True)\n'
        "before = sp.summation(i, (i, 0, w - 1)) + sp.summation(w - 1, (i, w, n - 1))\n"
        "count = sp.expand(n + 2 * before)  # 2 n w - n - w**2 + w = n (2 w - 1) - w (w - 1)"
    ),
    expected=COUNT_ALONE,
    mistakes={
        "window_count_no_edges": _n * (2 * _w - 1),
        "window_off_by_one": _n * (2 * _w + 1) - _w * (_w + 1),
        "window_count_causal": _n * _w - _w * (_w - 1) / 2,
    },
    cases=COUNT_POINTS,
    arg_names=COUNT_NAMES,
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    WINDOW_BY_HAND,
    WINDOW_RING_DECODE,
    WINDOW_RING_SLOTS,
    WINDOW_FIX_ALIGNMENT,
    WINDOW_COUNT_ALONE,
)
