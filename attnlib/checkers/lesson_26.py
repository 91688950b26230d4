"""Checkers for lesson 26, grouped-query attention.

Ids: ``gqa_by_hand`` (by hand: the key-value head each of 8 query heads reads when there are
2), ``gqa_decode_step`` (write one decoding step: every query head over its group's cache),
``gqa_predict_weights`` (predict then check: do the heads of multi-query attention share their
weights?), ``gqa_fix_repeat`` (find the bug: key-value heads repeated in cycled order),
``gqa_batch`` (transfer: how many sequences' caches fit in memory with and without sharing),
``mla_cache`` (transfer: the cache per token of multi-head latent attention against multi-head
attention).
Expected answers come from ``attnlib.core``; the mistakes are written out here.
"""

import numpy as np

from ..core import attention
from ..selfcheck.contract import Exact
from ..selfcheck.exercise import Exercise

LESSON = "26_grouped_query_attention"

# ---- gqa_by_hand: which key-value head each query head reads ---------------------------------
N_HEADS, N_KV = 8, 2
_group = N_HEADS // N_KV

GQA_BY_HAND = Exercise(
    id="gqa_by_hand",
    lesson=LESSON,
    kind="value",
    answer="kv_head",
    hints=[
        "8 query heads share 2 key-value heads: each key-value head serves a group of 4 "
        "neighbouring query heads.",
        "Query head h reads key-value head h // 4 (whole-number division): work it out for "
        "h = 0 .. 7.",
    ],
    solution="kv_head = [0, 0, 0, 0, 1, 1, 1, 1]  # h // (8 // 2)",
    expected=np.arange(N_HEADS) // _group,
    mistakes={"gqa_cycled": np.arange(N_HEADS) % N_KV},
    name="kv_head",
)


# ---- gqa_decode_step: one new token, every query head over its group's cache ------------------
def decode_step(q, K_cache, V_cache):
    """q (n_heads, d_k); K_cache (n_kv, n, d_k); V_cache (n_kv, n, d_v) -> (n_heads, d_v)."""
    q = np.asarray(q, dtype=np.float64)
    g = q.shape[0] // np.shape(K_cache)[0]
    K = np.repeat(np.asarray(K_cache, dtype=np.float64), g, axis=0)  # (n_heads, n, d_k)
    V = np.repeat(np.asarray(V_cache, dtype=np.float64), g, axis=0)  # (n_heads, n, d_v)
    return attention(q[:, None, :], K, V)[0][:, 0, :]  # (n_heads, 1, d_v) -> (n_heads, d_v)


def _decode_step_cycled(q, K_cache, V_cache):
    g = q.shape[0] // K_cache.shape[0]
    K, V = np.concatenate([K_cache] * g), np.concatenate([V_cache] * g)  # 0, 1, 0, 1, ...
    return attention(q[:, None, :], K, V)[0][:, 0, :]


def _decode_step_unscaled(q, K_cache, V_cache):
    return decode_step(np.asarray(q) * np.sqrt(np.shape(q)[-1]), K_cache, V_cache)


_rng = np.random.default_rng(92)
STEP_CASES = [
    tuple(_rng.normal(size=s) for s in [(4, 3), (2, 5, 3), (2, 5, 2)]),  # 4 heads, 2 kv heads
    tuple(_rng.normal(size=s) for s in [(6, 2), (3, 4, 2), (3, 4, 5)]),
    tuple(_rng.normal(size=s) for s in [(8, 4), (2, 7, 4), (2, 7, 3)]),
    tuple(_rng.normal(size=s) for s in [(3, 2), (1, 6, 2), (1, 6, 2)]),  # multi-query
    (  # scores spread past 709 in a row: exp without subtracting the row max overflows
        np.full((4, 2), [30.0, 0.0]),
        np.array(
            [[[-40.0, 0.0], [0.0, 0.0], [40.0, 0.0]], [[40.0, 0.0], [0.0, 0.0], [-40.0, 0.0]]]
        ),
        _rng.normal(size=(2, 3, 2)),
    ),
]

GQA_DECODE_STEP = Exercise(
    id="gqa_decode_step",
    lesson=LESSON,
    kind="function",
    answer="decode_step",
    hints=[
        "g = n_heads // n_kv query heads share each cache; query head h reads cache h // g.",
        "For each h: scores = K_cache[h // g] @ q[h] / np.sqrt(d_k), their softmax, then "
        "weights @ V_cache[h // g]. Stack the n_heads rows.",
        "Vectorised: np.repeat(K_cache, g, axis=0) and the same for V_cache, then one batched "
        "attention with q[:, None, :].",
    ],
    solution="def decode_step(q, K_cache, V_cache):\n"
    "    g = len(q) // len(K_cache)  # query heads per key-value head\n"
    "    rows = []\n"
    "    for h in range(len(q)):\n"
    "        scores = K_cache[h // g] @ q[h] / np.sqrt(q.shape[-1])  # (n,)\n"
    "        weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()\n"
    "        rows.append(weights @ V_cache[h // g])  # (d_v,)\n"
    "    return np.array(rows)",
    cases=STEP_CASES,
    reference=decode_step,
    mistakes=[("gqa_cycled", _decode_step_cycled), ("unscaled", _decode_step_unscaled)],
    arg_names=("q", "K_cache", "V_cache"),
)


# ---- gqa_predict_weights: one key-value head for 8 query heads --------------------------------
GQA_PREDICT_WEIGHTS = Exercise(
    id="gqa_predict_weights",
    lesson=LESSON,
    kind="choice",
    answer="prediction",
    hints=[
        "The weights of head h are softmax(Q_h K^T / sqrt(d_k)). Which of Q_h and K is shared?",
        "The keys are shared. Where do head h's queries come from: the same columns of W_Q "
        "for every head, or columns of its own?",
    ],
    solution="prediction = 'different'  # shared keys, but each head asks with its own queries",
    expected="different",
    options=("the same", "different"),
    mistakes={"the same": "gqa_predict_same"},
)


# ---- gqa_fix_repeat: the key-value heads repeated in the wrong order ----------------------------
def repeat_kv(K, n_heads):
    """(n_kv, n, d) -> (n_heads, n, d): key-value head j serves query heads j g to j g + g - 1."""
    K = np.asarray(K, dtype=np.float64)
    return np.repeat(K, n_heads // K.shape[0], axis=0)


REPEAT_CASES = [
    (_rng.normal(size=(2, 3, 2)), 4),
    (_rng.normal(size=(3, 2, 4)), 6),
    (_rng.normal(size=(2, 5, 3)), 8),
    (_rng.normal(size=(1, 4, 2)), 3),
    (_rng.normal(size=(4, 2, 2)), 4),  # no sharing: each head its own
]

GQA_FIX_REPEAT = Exercise(
    id="gqa_fix_repeat",
    lesson=LESSON,
    kind="function",
    answer="repeat_kv",
    hints=[
        "Print which key-value head each of the outputs' heads comes from for n_kv = 2, "
        "n_heads = 4: should heads 0 and 1 share, or heads 0 and 2?",
        "Query heads h = 0 .. g - 1 read key-value head 0: each head must appear g times "
        "in a row, not the whole stack g times.",
        "np.repeat repeats each entry in place (0, 0, 1, 1); np.tile repeats the whole "
        "stack (0, 1, 0, 1). Which order does g = n_heads // n_kv need, and along which "
        "axis?",
    ],
    solution="def repeat_kv(K, n_heads):\n"
    "    return np.repeat(K, n_heads // len(K), axis=0)  # 0, 0, .., 1, 1, ..",
    cases=REPEAT_CASES,
    reference=repeat_kv,
    mistakes=[("gqa_cycled", lambda K, n_heads: np.concatenate([K] * (n_heads // len(K))))],
    arg_names=("K", "n_heads"),
)


# ---- gqa_batch: how many sequences' caches fit -------------------------------------------------
# Llama 2 70B (lesson 25): 80 layers, 64 query heads, 8 key-value heads, d_head 128, float16
FREE_GIB, N_TOKENS = 44, 4096  # 44 / 1.25 and 44 / 10 are not whole: / is not //


def _sequences(kv_heads, keys_and_values=2, whole=True):
    per_sequence = keys_and_values * 80 * N_TOKENS * kv_heads * 128 * 2 / 2**30  # GiB
    return int(FREE_GIB // per_sequence) if whole else FREE_GIB / per_sequence


GQA_BATCH = Exercise(
    id="gqa_batch",
    lesson=LESSON,
    kind="tuple",
    answer="(with_8, with_64)",
    hints=[
        "One sequence of 4096 tokens: 2 x 80 x 4096 x n_kv x 128 x 2 bytes (lesson 25's formula).",
        "Work out one sequence's bytes for each number of key-value heads. A sequence "
        "either fits whole or not at all: round the count down (//), never to the nearest.",
    ],
    solution=lambda: (
        f"with_8 = {_sequences(8)}  # {FREE_GIB} // 1.25\n"
        f"with_64 = {_sequences(64)}  # {FREE_GIB} // 10"
    ),
    expected=(_sequences(8), _sequences(64)),
    mistakes={
        0: {
            "kv_cache_no_two": _sequences(8, keys_and_values=1),
            "partial_sequence": _sequences(8, whole=False),
        },
        1: {
            "kv_cache_no_two": _sequences(64, keys_and_values=1),
            "partial_sequence": _sequences(64, whole=False),
        },
    },
    names=("with_8", "with_64"),
    exactness=Exact(
        "a whole number of sequences each",
        lambda got: np.abs(got - np.array([_sequences(8), _sequences(64)])).max(),
        tol=0.0,
    ),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    GQA_BY_HAND,
    GQA_DECODE_STEP,
    GQA_PREDICT_WEIGHTS,
    GQA_FIX_REPEAT,
    GQA_BATCH,
)
