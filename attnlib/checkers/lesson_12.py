"""Checkers for lesson 12, the cost of attention and blocked attention.

Ids: ``cost_matrix_mib`` (by hand: the memory of one n x n matrix),
``cost_doubling`` (predict: how memory grows when n doubles, full and blocked),
``online_rescale`` (by hand: one step of the running max and rescaled running sum),
``blocked_fix`` (find the bug: a blocked attention that forgets to rescale its
running sum of values). Expected answers come from ``attnlib.core`` and numpy.
"""

import numpy as np

from .. import example as ex
from ..core import attention, softmax
from ..selfcheck.exercise import Exercise

# ---- cost_matrix_mib: one n x n float64 matrix at n = 4096 ----------------------------------
N_MIB = 4096
MATRIX_BYTES = np.zeros((N_MIB, N_MIB), dtype=np.float64).nbytes  # n * n * 8


COST_MATRIX_MIB = Exercise(
    id="cost_matrix_mib",
    lesson="12_cost_and_memory",
    kind="value",
    answer="mib",
    hints=[
        "The score matrix has one entry per (query, key) pair.",
        "n x n entries, 8 bytes each for float64.",
        "mib = 4096 * 4096 * 8 / 2**20",
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
    lesson="12_cost_and_memory",
    kind="tuple",
    answer="(growth_full, growth_blocked)",
    hints=[
        "Full attention holds n x n arrays; blocked attention holds (n, block_size) ones.",
        "Replace n by 2n in n^2 and in n, and divide.",
        "growth_full = 4, growth_blocked = 2",
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
    lesson="12_cost_and_memory",
    kind="tuple",
    answer="(m_new, l_new)",
    hints=[
        "The new max is the larger of m_old and the new block's largest score.",
        "The old sum was measured from m_old; re-measure it from m_new by multiplying it by "
        "exp(m_old - m_new), then add exp(s - m_new) for the new block's scores.",
        "l_new = l_old * exp(m_old - m_new) + exp(3 - m_new) + exp(0.5 - m_new)",
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


# ---- blocked_fix: repair a blocked attention ------------------------------------------------
def _blocked(Q, K, V, block_size, rescale_l=True, rescale_a=True, inverted=False, root=True):
    """Blocked attention with switches that make each named mistake."""
    d_k = Q.shape[-1]
    m = np.full((Q.shape[0], 1), -np.inf)
    l_sum = np.zeros((Q.shape[0], 1))
    a_sum = np.zeros((Q.shape[0], V.shape[1]))
    for start in range(0, K.shape[0], block_size):
        S_b = Q @ K[start : start + block_size].T  # (n_q, b)
        S_b = S_b / np.sqrt(d_k) if root else S_b
        m_new = np.maximum(m, S_b.max(axis=1, keepdims=True))
        old_to_new = np.exp(m_new - m) if inverted else np.exp(m - m_new)
        old_to_new = np.where(np.isfinite(m), old_to_new, 0.0)  # nothing summed yet
        P_b = np.exp(S_b - m_new)
        l_sum = (l_sum * old_to_new if rescale_l else l_sum) + P_b.sum(axis=1, keepdims=True)
        a_sum = (a_sum * old_to_new if rescale_a else a_sum) + P_b @ V[start : start + block_size]
        m = m_new
    return a_sum / l_sum


def _per_block_softmax(Q, K, V, block_size):
    d_k, n_k = Q.shape[-1], K.shape[0]
    starts = range(0, n_k, block_size)
    parts = [
        softmax(Q @ K[s : s + block_size].T / np.sqrt(d_k)) @ V[s : s + block_size] for s in starts
    ]
    return sum(parts) / len(parts)


def _no_max(Q, K, V, block_size):
    # exp of the raw scores, no running max: inf on large scores
    l_sum, a_sum = 0.0, 0.0
    for s in range(0, K.shape[0], block_size):
        P_b = np.exp(Q @ K[s : s + block_size].T / np.sqrt(Q.shape[-1]))
        l_sum = l_sum + P_b.sum(axis=1, keepdims=True)
        a_sum = a_sum + P_b @ V[s : s + block_size]
    return a_sum / l_sum


_rng = np.random.default_rng(12)
_Q34, _K54, _V52 = (_rng.normal(size=s) for s in [(3, 4), (5, 4), (5, 2)])
_DOC = (ex.Q, ex.K, ex.V)  # the worked example, (3, 2) each
BLOCKED_CASES = [
    (*_DOC, 1),  # birds, then eat (its score raises the max), then seeds
    (_Q34, _K54, _V52, 2),  # n_q = 3, n_k = 5 = 2 + 2 + 1: a short last block
    (_Q34, _K54, _V52, 3),
    (_Q34 * 25, _K54 * 25, _V52, 2),  # scores around 1e3
]


BLOCKED_FIX = Exercise(
    id="blocked_fix",
    lesson="12_cost_and_memory",
    kind="function",
    answer="blocked_attention",
    hints=[
        "Follow m, l and a through the loop when a later block holds the largest score.",
        "When the max rises, everything summed so far was measured from the old max.",
        "Multiply a by exp(m_old - m_new) too, exactly as l is.",
    ],
    solution="def blocked_attention(Q, K, V, block_size):\n"
    "    n_q, d_k = Q.shape\n"
    "    m = np.full((n_q, 1), -np.inf)\n"
    "    l_sum = np.zeros((n_q, 1))\n"
    "    a_sum = np.zeros((n_q, V.shape[1]))\n"
    "    for start in range(0, K.shape[0], block_size):\n"
    "        S_b = Q @ K[start : start + block_size].T / np.sqrt(d_k)\n"
    "        m_new = np.maximum(m, S_b.max(axis=1, keepdims=True))\n"
    "        P_b = np.exp(S_b - m_new)\n"
    "        l_sum = l_sum * np.exp(m - m_new) + P_b.sum(axis=1, keepdims=True)\n"
    "        a_sum = a_sum * np.exp(m - m_new) + P_b @ V[start : start + block_size]\n"
    "        m = m_new\n"
    "    return a_sum / l_sum",
    cases=BLOCKED_CASES,
    reference=lambda Q, K, V, block_size: attention(Q, K, V)[0],
    mistakes=[
        ("overflow", _no_max),  # inf or nan on large scores, whatever else went wrong
        ("values_not_rescaled", lambda *args: _blocked(*args, rescale_a=False)),
        ("no_rescale", lambda *args: _blocked(*args, rescale_l=False, rescale_a=False)),
        ("rescale_inverted", lambda *args: _blocked(*args, inverted=True)),
        ("per_block_softmax", _per_block_softmax),
        ("unscaled", lambda *args: _blocked(*args, root=False)),
    ],
    arg_names=("Q", "K", "V", "block_size"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    COST_MATRIX_MIB,
    COST_DOUBLING,
    ONLINE_RESCALE,
    BLOCKED_FIX,
)
