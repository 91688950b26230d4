"""Checkers for lesson 18, the cost of attention and blocked attention.

Ids: ``cost_matrix_mib`` (by hand: the memory of one n x n matrix),
``cost_doubling`` (predict: how memory grows when n doubles, full and blocked),
``online_rescale`` (by hand: one step of the running max and rescaled running sum),
``blocked_causal`` (transfer: causal blocked attention that skips the tiles above the
diagonal). Expected answers come from ``attnlib.core``, ``attnlib.masks`` and numpy.
"""

import numpy as np

from .. import example as ex
from ..core import attention, attention_weights, softmax
from ..masks import causal_mask
from ..selfcheck.exercise import Exercise

# ---- cost_matrix_mib: one n x n float64 matrix at n = 4096 ----------------------------------
N_MIB = 4096
MATRIX_BYTES = np.zeros((N_MIB, N_MIB), dtype=np.float64).nbytes  # n * n * 8


COST_MATRIX_MIB = Exercise(
    id="cost_matrix_mib",
    lesson="18_cost_and_memory",
    kind="value",
    answer="mib",
    hints=[
        "The score matrix has one entry per (query, key) pair.",
        "n x n entries, 8 bytes each for float64.",
        "One MiB is 2**20 bytes: divide the bytes by that.",
    ],
    solution=lambda: f"mib = 4096 * 4096 * 8 / 2**20  # = {MATRIX_BYTES / 2**20:g}",
    expected=MATRIX_BYTES / 2**20,
    mistakes={
        "linear_in_n": N_MIB * 8 / 2**20,
        "float32_bytes": MATRIX_BYTES / 2 / 2**20,
        "decimal_megabytes": MATRIX_BYTES / 1e6,
    },
    decimals=1,
    name="mib",
)


# ---- cost_doubling: memory growth when n doubles, full and blocked --------------------------
def _growth(memory_of_n, n=1024):
    return memory_of_n(2 * n) / memory_of_n(n)


FULL_GROWTH = _growth(lambda n: 8 * n * n)  # full attention holds n x n arrays
BLOCKED_GROWTH = _growth(lambda n: 8 * n * 128)  # an (n, block_size) slice and n-row sums


COST_DOUBLING = Exercise(
    id="cost_doubling",
    lesson="18_cost_and_memory",
    kind="tuple",
    answer="(growth_full, growth_blocked)",
    hints=[
        "Full attention holds n x n arrays; blocked attention holds (n, block_size) ones.",
        "Replace n by 2n in n^2 and in n * block_size (the block size stays), and divide "
        "each new size by the old one.",
    ],
    solution=lambda: f"growth_full = {FULL_GROWTH:g}\ngrowth_blocked = {BLOCKED_GROWTH:g}",
    expected=(FULL_GROWTH, BLOCKED_GROWTH),
    mistakes={
        0: {"linear_in_n": BLOCKED_GROWTH},
        1: {"blocked_memory_quadratic": FULL_GROWTH},
    },
    names=("growth_full", "growth_blocked"),
)


# ---- online_rescale: one update of the running max and running sum --------------------------
BLOCK_1 = np.array([1.0, 2.0])  # one query's scores, first block of keys
BLOCK_2 = np.array([3.0, 0.5])  # the next block: its 3 raises the max
M_OLD = float(BLOCK_1.max())
L_OLD = float(np.exp(BLOCK_1 - M_OLD).sum())
ROW = np.concatenate([BLOCK_1, BLOCK_2])
M_NEW = float(ROW.max())
L_NEW = float(np.exp(ROW - M_NEW).sum())  # the sum over all four keys, measured from M_NEW
_NEW_PART = float(np.exp(BLOCK_2 - M_NEW).sum())


ONLINE_RESCALE = Exercise(
    id="online_rescale",
    lesson="18_cost_and_memory",
    kind="tuple",
    answer="(m_new, l_new)",
    hints=[
        "The new max is the larger of m_old and the new block's largest score.",
        "The old sum was measured from m_old; re-measure it from m_new by multiplying it "
        "by exp(m_old - m_new), then add exp(s - m_new) for the new block's scores.",
        "Check your numbers: measured from the max, every term exp(s - m_new) is at most "
        "1, and the term of the max itself is exactly 1, so l_new is at least 1.",
    ],
    solution=lambda: (
        "m_new = max(m_old, 3.0, 0.5)\n"
        "l_new = l_old * np.exp(m_old - m_new) + np.exp(3.0 - m_new) + np.exp(0.5 - m_new)\n"
        f"# m_new = {M_NEW:g}, l_new = {L_NEW:.4f}"
    ),
    expected=(M_NEW, L_NEW),
    mistakes={
        1: {
            "no_rescale": L_OLD + _NEW_PART,
            "rescale_inverted": L_OLD * np.exp(M_NEW - M_OLD) + _NEW_PART,
        }
    },
    decimals=3,
    names=("m_new", "l_new"),
)


# ---- blocked_causal: causal blocked attention, tiles above the diagonal skipped ------------
def causal_attention(Q, K, V, block_size, flipped=False):
    """The reference: full attention under the causal mask (block_size changes nothing);
    ``flipped`` uses the upper triangle instead, a mistake."""
    mask = causal_mask(Q.shape[0], K.shape[0])
    return attention(Q, K, V, mask=mask.T if flipped else mask)[0]


def visible_prefix_attention(Q, K, V, block_size):
    """The reference: query i reads keys 0..i and their values, and nothing after them.

    Equal to full attention under the causal mask for finite inputs; where a value row
    holds nan, only the queries that may see that key get nan (a weight of 0 times nan is
    still nan, so a function that reads a hidden block spreads it to earlier queries).
    """
    d_k = Q.shape[-1]
    rows = [softmax(Q[i] @ K[: i + 1].T / np.sqrt(d_k)) @ V[: i + 1] for i in range(len(Q))]
    return np.array(rows)  # (n, d_v)


def _full_masked(Q, K, V, block_size):
    """Every score computed, the hidden ones masked: right, but reads every block."""
    return attention_weights(Q, K, mask=causal_mask(Q.shape[0], K.shape[0])) @ V


def _tiled(
    Q, K, V, block_size, mask_inside=True, rescale_l=True, rescale_a=True, root=True, skip=True
):
    """Causal blocked attention in square tiles, with switches that make each named mistake."""
    n, d_k = Q.shape
    output = np.zeros((n, V.shape[1]))
    for q_start in range(0, n, block_size):
        Q_b = Q[q_start : q_start + block_size]  # (b_q, d_k)
        rows = np.arange(q_start, q_start + len(Q_b))[:, None]  # (b_q, 1) query positions
        m = np.full((len(Q_b), 1), -np.inf)
        l_sum = np.zeros((len(Q_b), 1))
        a_sum = np.zeros((len(Q_b), V.shape[1]))
        last = q_start + len(Q_b) if skip else n  # up to the diagonal tile, or every block
        for k_start in range(0, last, block_size):
            S_b = Q_b @ K[k_start : k_start + block_size].T  # (b_q, b_k)
            S_b = S_b / np.sqrt(d_k) if root else S_b
            cols = np.arange(k_start, k_start + S_b.shape[1])[None, :]  # (1, b_k)
            S_b = np.where(cols <= rows, S_b, -np.inf) if mask_inside else S_b
            m_new = np.maximum(m, S_b.max(axis=1, keepdims=True))
            old_to_new = np.where(np.isfinite(m), np.exp(m - m_new), 0.0)
            P_b = np.exp(S_b - m_new)
            l_sum = (l_sum * old_to_new if rescale_l else l_sum) + P_b.sum(axis=1, keepdims=True)
            a_sum = a_sum * old_to_new if rescale_a else a_sum
            a_sum = a_sum + P_b @ V[k_start : k_start + block_size]
            m = m_new
        output[q_start : q_start + len(Q_b)] = a_sum / l_sum
    return output


_rng = np.random.default_rng(120)
_Q64, _K64, _V63 = (_rng.normal(size=s) for s in [(6, 4), (6, 4), (6, 3)])
_Q73, _K73, _V72 = (_rng.normal(size=s) for s in [(7, 3), (7, 3), (7, 2)])
BLOCKED_CAUSAL_CASES = [
    (_Q64, _K64, _V63, 2),  # n = 6, d_k = 4, d_v = 3: tiles of 2 x 2
    (_Q73, _K73, _V72, 3),  # n = 7 = 3 + 3 + 1: a short last tile
    (ex.Q, ex.K, ex.V, 2),  # the worked example: birds, eat | seeds
    (_Q64 * 40, _K64 * 40, _V63, 4),  # scores up to about 2e3: exp overflows without the max
    # value row 2, the first key of the second block, is nan: queries 0 and 1 may not see key
    # 2, so a function that skips their hidden block keeps their rows finite; one that reads
    # it (even masked: 0 * nan is nan) does not
    (_Q64, _K64, np.where(np.arange(6)[:, None] == 2, np.nan, _V63), 2),
]


BLOCKED_CAUSAL = Exercise(
    id="blocked_causal",
    lesson="18_cost_and_memory",
    kind="function",
    answer="causal_blocked_attention",
    hints=[
        "Take block_size queries at a time. Query i may see keys 0..i, so key blocks that "
        "start after the tile's last query can be skipped.",
        "The key block on the diagonal is only partly visible: inside it, hide key j from "
        "query i when j > i, with both counted over the whole table (global positions), "
        "not inside the block.",
        "For each query tile: m, l_sum, a_sum as in blocked_by_hand, over the key blocks "
        "range(0, q_start + len(Q_b), block_size), masking each S_b before its max.",
    ],
    solution="def causal_blocked_attention(Q, K, V, block_size):\n"
    "    n, d_k = Q.shape\n"
    "    output = np.zeros((n, V.shape[1]))  # (n, d_v)\n"
    "    for q_start in range(0, n, block_size):\n"
    "        Q_b = Q[q_start : q_start + block_size]  # (b_q, d_k)\n"
    "        rows = np.arange(q_start, q_start + len(Q_b))[:, None]  # query positions\n"
    "        m = np.full((len(Q_b), 1), -np.inf)\n"
    "        l_sum = np.zeros((len(Q_b), 1))\n"
    "        a_sum = np.zeros((len(Q_b), V.shape[1]))\n"
    "        for k_start in range(0, q_start + len(Q_b), block_size):  # to the diagonal\n"
    "            S_b = Q_b @ K[k_start : k_start + block_size].T / np.sqrt(d_k)  # (b_q, b_k)\n"
    "            cols = np.arange(k_start, k_start + S_b.shape[1])[None, :]  # key positions\n"
    "            S_b = np.where(cols <= rows, S_b, -np.inf)  # the diagonal tile is half hidden\n"
    "            m_new = np.maximum(m, S_b.max(axis=1, keepdims=True))\n"
    "            P_b = np.exp(S_b - m_new)\n"
    "            l_sum = l_sum * np.exp(m - m_new) + P_b.sum(axis=1, keepdims=True)\n"
    "            a_sum = a_sum * np.exp(m - m_new) + P_b @ V[k_start : k_start + block_size]\n"
    "            m = m_new\n"
    "        output[q_start : q_start + len(Q_b)] = a_sum / l_sum\n"
    "    return output",
    cases=BLOCKED_CAUSAL_CASES,
    reference=visible_prefix_attention,
    mistakes=[
        ("overflow", None),  # inf or nan on large scores, whatever else went wrong
        ("blocks_not_skipped", _full_masked),
        ("blocks_not_skipped", lambda *args: _tiled(*args, skip=False)),
        ("mask_ignored", lambda Q, K, V, b: attention(Q, K, V)[0]),
        ("diagonal_block_unmasked", lambda *args: _tiled(*args, mask_inside=False)),
        ("causal_sees_future", lambda Q, K, V, b: causal_attention(Q, K, V, b, flipped=True)),
        ("values_not_rescaled", lambda *args: _tiled(*args, rescale_a=False)),
        ("no_rescale", lambda *args: _tiled(*args, rescale_l=False, rescale_a=False)),
        ("unscaled", lambda *args: _tiled(*args, root=False)),
    ],
    arg_names=("Q", "K", "V", "block_size"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    COST_MATRIX_MIB,
    COST_DOUBLING,
    ONLINE_RESCALE,
    BLOCKED_CAUSAL,
)
