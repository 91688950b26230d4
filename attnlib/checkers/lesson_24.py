"""Checkers for lesson 24, FlashAttention forward and backward.

Ids: ``flash_lse_by_hand`` (by hand: birds' running max, running sum and log-sum-exp
over two blocks of keys), ``flash_backward`` (write the tiled backward from the saved
output and L), ``flash_predict_memory`` (predict: how the peak memory of the tiled and
of the full backward grows when n doubles), ``flash_fix_forward`` (find the bug: a tiled
forward that forgets to rescale the running output), ``flash_merge`` (transfer: merge two
halves of the keys, each with its output and L, into the whole row's). Expected answers
come from ``attnlib.core``, ``attnlib.grad``, ``attnlib.flash`` and numpy.
"""

import numpy as np

from .. import example as ex
from ..core import attention
from ..flash import flash_attention
from ..grad import attention_backward
from ..selfcheck.exercise import Exercise
from . import widened

# ---- flash_lse_by_hand: birds' row over the blocks {birds} and {eat, seeds} -----------------
BIRDS = ex.Q[0] @ ex.K.T / np.sqrt(ex.d_k)  # birds' scaled scores, (n_k,) = (3,)
_FIRST, _SECOND = BIRDS[:1], BIRDS[1:]
_M_OLD = float(_FIRST.max())
_L_OLD = float(np.exp(_FIRST - _M_OLD).sum())
M_NEW = float(max(_M_OLD, _SECOND.max()))
L_NEW = _L_OLD * float(np.exp(_M_OLD - M_NEW)) + float(np.exp(_SECOND - M_NEW).sum())
LSE = M_NEW + float(np.log(L_NEW))  # log sum_j exp(s_j)

FLASH_LSE_BY_HAND = Exercise(
    id="flash_lse_by_hand",
    lesson="24_flash_attention",
    kind="tuple",
    answer="(m, l_sum, L)",
    hints=[
        "After the first block m is birds' own score and l_sum = exp(0) = 1.",
        "eat's score raises the max: multiply l_sum by exp(m_old - m_new) before adding "
        "exp(s - m_new) for eat and seeds.",
        "L = m + log(l_sum): the log of sum_j exp(s_j), with the max taken out first.",
    ],
    solution=lambda: (
        "s = np.array([3, 9, 6]) / np.sqrt(2)\n"
        "m = s[1]  # eat's score is the largest\n"
        "l_sum = 1 * np.exp(s[0] - m) + np.exp(s[1] - m) + np.exp(s[2] - m)\n"
        "L = m + np.log(l_sum)\n"
        f"# m = {M_NEW:.3f}, l_sum = {L_NEW:.3f}, L = {LSE:.3f}"
    ),
    expected=(M_NEW, L_NEW, LSE),
    mistakes={
        1: {"no_rescale": _L_OLD + float(np.exp(_SECOND - M_NEW).sum())},
        2: {"lse_without_max": float(np.log(L_NEW))},
    },
    decimals=3,
    names=("m", "l_sum", "L"),
)


# ---- flash_backward: the tiled backward from the saved output and L -------------------------
def _with_forward(Q, K, V, dOutput, block_size):
    """One case: the inputs, the forward pass's output and L, dOutput and the block size."""
    output, L = flash_attention(Q, K, V, block_size=block_size)
    return Q, K, V, output, L, dOutput, block_size


def tiled_backward(
    Q,
    K,
    V,
    output,
    L,
    dOutput,
    block_size,
    D_from="output",
    D_per_tile=False,
    use_L=True,
    with_D=True,
):
    """The tiled backward over blocks of keys, with switches that make each named mistake."""
    d_k = Q.shape[-1]
    dQ, dK, dV = np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)
    D = (dOutput * {"output": output, "dOutput": dOutput}[D_from]).sum(axis=1, keepdims=True)
    for start in range(0, K.shape[0], block_size):
        keys = slice(start, start + block_size)
        S_b = Q @ K[keys].T / np.sqrt(d_k)  # (n_q, b)
        if use_L:
            P_b = np.exp(S_b - L[:, None])  # (n_q, b)
        else:  # normalised over the tile alone
            P_b = np.exp(S_b - S_b.max(axis=1, keepdims=True))
            P_b /= P_b.sum(axis=1, keepdims=True)
        dV[keys] = P_b.T @ dOutput
        dP_b = dOutput @ V[keys].T  # (n_q, b)
        D_b = (P_b * dP_b).sum(axis=1, keepdims=True) if D_per_tile else D
        D_b = D_b if with_D else 0.0  # dS = P * dP: the Jacobian's diagonal only
        dS_b = P_b * (dP_b - D_b)
        dQ += dS_b @ K[keys] / np.sqrt(d_k)
        dK[keys] = dS_b.T @ Q / np.sqrt(d_k)
    return dQ, dK, dV


def _backward_reference(Q, K, V, output, L, dOutput, block_size):
    """The reference: attnlib's full backward pass (it never reads output, L or the blocks)."""
    return attention_backward(Q, K, V, dOutput)


def _unscaled(Q, K, V, output, L, dOutput, block_size):
    dQ, dK, dV = tiled_backward(Q, K, V, output, L, dOutput, block_size)
    return dQ * np.sqrt(Q.shape[-1]), dK * np.sqrt(Q.shape[-1]), dV


def _overflowing(Q, K, V, output, L, dOutput, block_size):
    """Weights as exp(S) / exp(L): right on paper, inf / inf past 709."""
    d_k = Q.shape[-1]
    with np.errstate(all="ignore"):
        P = np.exp(Q @ K.T / np.sqrt(d_k)) / np.exp(L)[:, None]
        dV = P.T @ dOutput
        dP = dOutput @ V.T
        dS = P * (dP - (dOutput * output).sum(axis=1, keepdims=True))
        return dS @ K / np.sqrt(d_k), dS.T @ Q / np.sqrt(d_k), dV


_rng = np.random.default_rng(930)
BACKWARD_CASES = [
    # n_q = 5, n_k = 7, d_k = 4, d_v = 3, blocks of 3 keys (3 + 3 + 1)
    _with_forward(*(_rng.normal(size=s) for s in [(5, 4), (7, 4), (7, 3), (5, 3)]), 3),
    # the worked example, blocks {birds, eat} and {seeds}; dOutput asks for column 1
    _with_forward(ex.Q, ex.K, ex.V, np.array([[1.0, 0.0], [1.0, 0.0], [1.0, 0.0]]), 2),
    # n_q = 6, n_k = 4, d_k = 2, d_v = 5, one key at a time
    _with_forward(*(_rng.normal(size=s) for s in [(6, 2), (4, 2), (4, 5), (6, 5)]), 1),
]
# scores spread past 709 (see widened): Q made wide, its output and L recomputed
_WIDE = widened(BACKWARD_CASES[0], 0, 1000)
BACKWARD_CASES.append(_with_forward(_WIDE[0], _WIDE[1], _WIDE[2], _WIDE[5], _WIDE[6]))

FLASH_BACKWARD = Exercise(
    id="flash_backward",
    lesson="24_flash_attention",
    kind="function",
    answer="flash_backward",
    hints=[
        "Loop over blocks of keys. For each block rebuild the weights from L: P_b = "
        "np.exp(Q @ K_b.T / np.sqrt(d_k) - L[:, None]).",
        "Compute the row term D once, before the loop, from dOutput and output alone (it "
        "equals the row sums of P * dP, but needs no (n_q, n_k) table). In the loop dP_b "
        "comes from dOutput and V_b, and dS_b is P_b times (dP_b minus D).",
        "Each block adds its own dV_b and dK_b, and dQ collects a term from every block: "
        "write them as attention_backward does for the whole table, with the division by "
        "sqrt(d_k) where the scores had it.",
    ],
    solution="def flash_backward(Q, K, V, output, L, dOutput, block_size):\n"
    "    d_k = Q.shape[1]\n"
    "    dQ, dK, dV = np.zeros(Q.shape), np.zeros(K.shape), np.zeros(V.shape)\n"
    "    D = (dOutput * output).sum(axis=1, keepdims=True)  # (n_q, 1), the row term\n"
    "    for start in range(0, K.shape[0], block_size):\n"
    "        keys = slice(start, start + block_size)\n"
    "        P_b = np.exp(Q @ K[keys].T / np.sqrt(d_k) - L[:, None])  # (n_q, b), from L\n"
    "        dV[keys] = P_b.T @ dOutput  # (b, d_v)\n"
    "        dP_b = dOutput @ V[keys].T  # (n_q, b)\n"
    "        dS_b = P_b * (dP_b - D)  # (n_q, b), through softmax\n"
    "        dQ += dS_b @ K[keys] / np.sqrt(d_k)  # every block adds to every query\n"
    "        dK[keys] = dS_b.T @ Q / np.sqrt(d_k)  # (b, d_k)\n"
    "    return dQ, dK, dV",
    cases=BACKWARD_CASES,
    reference=_backward_reference,
    mistakes=[
        ("overflow", _overflowing),
        ("flash_D_per_tile", lambda *args: tiled_backward(*args, D_per_tile=True)),
        ("flash_D_wrong_arrays", lambda *args: tiled_backward(*args, D_from="dOutput")),
        ("jacobian_missing_outer", lambda *args: tiled_backward(*args, with_D=False)),
        ("flash_tile_max", lambda *args: tiled_backward(*args, use_L=False)),
        ("backward_unscaled", _unscaled),
    ],
    arg_names=("Q", "K", "V", "output", "L", "dOutput", "block_size"),
    result_names=("dQ", "dK", "dV"),
)


# ---- flash_predict_memory: doubling n, the tiled and the full backward ----------------------
def _growth(memory_of_n, n=1024):
    return memory_of_n(2 * n) / memory_of_n(n)


TILED_GROWTH = _growth(lambda n: 8 * n * 128)  # (n, block_size) tiles and n-row arrays
FULL_GROWTH = _growth(lambda n: 8 * n * n)  # attention_backward holds n x n weights

FLASH_PREDICT_MEMORY = Exercise(
    id="flash_predict_memory",
    lesson="24_flash_attention",
    kind="tuple",
    answer="(growth_flash, growth_full)",
    hints=[
        "Which arrays does each backward pass hold? The tiled one: (n, block_size) tiles "
        "and arrays with n rows. attention_backward: the (n, n) weights and their "
        "gradient.",
        "Replace n by 2n in n * block_size (the block size stays) and in n * n, and divide "
        "each new size by the old one.",
    ],
    solution=lambda: f"growth_flash = {TILED_GROWTH:g}\ngrowth_full = {FULL_GROWTH:g}",
    expected=(TILED_GROWTH, FULL_GROWTH),
    mistakes={
        0: {"flash_backward_quadratic": FULL_GROWTH},
        1: {"linear_in_n": TILED_GROWTH},
    },
    names=("growth_flash", "growth_full"),
)


# ---- flash_fix_forward: the tiled forward, the running output rescaled ----------------------
def _lse(Q, K):
    """log sum_j exp(q_i . k_j / sqrt(d_k)) for every row, the row max taken out first."""
    S = Q @ K.T / np.sqrt(Q.shape[-1])  # (n_q, n_k)
    m = S.max(axis=1)
    return m + np.log(np.exp(S - m[:, None]).sum(axis=1))


def _forward_reference(Q, K, V, block_size):
    """The reference: full attention's output and each row's log-sum-exp."""
    return attention(Q, K, V)[0], _lse(Q, K)


def tiled_forward(Q, K, V, block_size, rescale_acc=True, rescale_l=True, max_in_L=True):
    """The tiled forward over blocks of keys, with switches that make each named mistake."""
    d_k = Q.shape[1]
    m = np.full((Q.shape[0], 1), -np.inf)
    l_sum = np.zeros((Q.shape[0], 1))
    acc = np.zeros((Q.shape[0], V.shape[1]))
    for start in range(0, K.shape[0], block_size):
        S_b = Q @ K[start : start + block_size].T / np.sqrt(d_k)
        m_new = np.maximum(m, S_b.max(axis=1, keepdims=True))
        P_b = np.exp(S_b - m_new)
        old_to_new = np.exp(m - m_new)
        l_sum = (l_sum * old_to_new if rescale_l else l_sum) + P_b.sum(axis=1, keepdims=True)
        acc = (acc * old_to_new if rescale_acc else acc) + P_b @ V[start : start + block_size]
        m = m_new
    L = (m + np.log(l_sum)) if max_in_L else np.log(l_sum)
    return acc / l_sum, L[:, 0]


_rng = np.random.default_rng(931)
FORWARD_CASES = [
    (*(_rng.normal(size=s) for s in [(5, 4), (7, 4), (7, 3)]), 3),  # 7 keys = 3 + 3 + 1
    (ex.Q, ex.K, ex.V, 1),  # the worked example, one key at a time: eat raises the max
    (*(_rng.normal(size=s) for s in [(4, 2), (6, 2), (6, 5)]), 4),
]
FORWARD_CASES.append(widened(FORWARD_CASES[0], 0, 1000))  # a row spread past 709

FLASH_FIX_FORWARD = Exercise(
    id="flash_fix_forward",
    lesson="24_flash_attention",
    kind="function",
    answer="flash_forward",
    hints=[
        "Compare the broken function's output with attnlib.attention on a case where a "
        "later block holds a row's largest score.",
        "When the max rises, everything summed so far was measured from the old max: both "
        "running sums must be re-measured.",
        "Look at the line that updates acc: l_sum is multiplied by exp(m - m_new) before "
        "the new block is added; does acc get the same factor?",
    ],
    solution="def flash_forward(Q, K, V, block_size):\n"
    "    d_k = Q.shape[1]\n"
    "    m = np.full((Q.shape[0], 1), -np.inf)  # running max\n"
    "    l_sum = np.zeros((Q.shape[0], 1))  # running sum of exp(s - m)\n"
    "    acc = np.zeros((Q.shape[0], V.shape[1]))  # running sum of exp(s - m) v\n"
    "    for start in range(0, K.shape[0], block_size):\n"
    "        S_b = Q @ K[start : start + block_size].T / np.sqrt(d_k)  # (n_q, b)\n"
    "        m_new = np.maximum(m, S_b.max(axis=1, keepdims=True))\n"
    "        P_b = np.exp(S_b - m_new)\n"
    "        l_sum = l_sum * np.exp(m - m_new) + P_b.sum(axis=1, keepdims=True)\n"
    "        acc = acc * np.exp(m - m_new) + P_b @ V[start : start + block_size]  # the fix\n"
    "        m = m_new\n"
    "    L = m + np.log(l_sum)  # (n_q, 1)\n"
    "    return acc / l_sum, L[:, 0]",
    cases=FORWARD_CASES,
    reference=_forward_reference,
    mistakes=[
        ("overflow", None),
        ("no_rescale", lambda *args: tiled_forward(*args, rescale_acc=False, rescale_l=False)),
        ("values_not_rescaled", lambda *args: tiled_forward(*args, rescale_acc=False)),
        ("lse_without_max", lambda *args: tiled_forward(*args, max_in_L=False)),
    ],
    arg_names=("Q", "K", "V", "block_size"),
    result_names=("output", "L"),
)


# ---- flash_merge: two halves of the keys, each with its output and L, merged ---------------
def _merge_reference(output_a, L_a, output_b, L_b):
    """The reference, written from the sums: l = exp(L_a) + exp(L_b), measured from the max."""
    top = np.maximum(L_a, L_b)  # (n_q,)
    share_a, share_b = np.exp(L_a - top), np.exp(L_b - top)  # each at most 1
    total = share_a + share_b
    output = (share_a[:, None] * output_a + share_b[:, None] * output_b) / total[:, None]
    return output, top + np.log(total)


def _merge_unweighted(output_a, L_a, output_b, L_b):
    return (output_a + output_b) / 2, np.logaddexp(L_a, L_b)


def _merge_l_added(output_a, L_a, output_b, L_b):
    return _merge_reference(output_a, L_a, output_b, L_b)[0], L_a + L_b


def _halves(Q, K, V, split):
    """The output and L of each half of the keys, as two workers would return them."""
    a = flash_attention(Q, K[:split], V[:split])
    b = flash_attention(Q, K[split:], V[split:])
    return (*a, *b)


_rng = np.random.default_rng(932)
_QM, _KM, _VM = (_rng.normal(size=s) for s in [(4, 3), (9, 3), (9, 2)])
MERGE_CASES = [
    _halves(_QM, _KM, _VM, 5),  # n_q = 4, keys 5 + 4, d_v = 2
    _halves(ex.Q, ex.K, ex.V, 1),  # the worked example: {birds} and {eat, seeds}
    # one query whose halves differ by more than 709 in L: exp(L) overflows unless the max
    # is taken out first
    _halves(_QM * 60, _KM * 60, _VM, 4),
]

FLASH_MERGE = Exercise(
    id="flash_merge",
    lesson="24_flash_attention",
    kind="function",
    answer="merge",
    hints=[
        "exp(L_a) and exp(L_b) are the two halves' sums of exp(s_j); the whole row's sum "
        "is their total.",
        "Each half's output is its own weighted average: weight it by its share of the "
        "total, exp(L_a - L).",
        "np.logaddexp(L_a, L_b) is log(exp(L_a) + exp(L_b)) without overflow. Each share "
        "is one number per row: give it a column axis so it broadcasts over that half's "
        "output columns.",
    ],
    solution="def merge(output_a, L_a, output_b, L_b):\n"
    "    L = np.maximum(L_a, L_b) + np.log(\n"
    "        np.exp(L_a - np.maximum(L_a, L_b)) + np.exp(L_b - np.maximum(L_a, L_b))\n"
    "    )  # log(exp(L_a) + exp(L_b)), the larger one taken out; np.logaddexp does the same\n"
    "    share_a = np.exp(L_a - L)[:, None]  # (n_q, 1), each half's share of the row's sum\n"
    "    share_b = np.exp(L_b - L)[:, None]\n"
    "    return share_a * output_a + share_b * output_b, L",
    cases=MERGE_CASES,
    reference=_merge_reference,
    mistakes=[
        ("overflow", None),
        ("merge_unweighted", _merge_unweighted),
        ("merge_l_added", _merge_l_added),
    ],
    arg_names=("output_a", "L_a", "output_b", "L_b"),
    result_names=("output", "L"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    FLASH_LSE_BY_HAND,
    FLASH_BACKWARD,
    FLASH_PREDICT_MEMORY,
    FLASH_FIX_FORWARD,
    FLASH_MERGE,
)
