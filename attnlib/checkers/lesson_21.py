"""Checkers for lesson 21, decoding with a key-value cache.

Ids: ``kv_by_hand`` (by hand: "eat seeds" decoded in two steps), ``kv_decode`` (write a
decoder that appends to a cache and attends with one query per step), ``kv_predict_doubling``
(predict then check: the work of one cached step when n doubles), ``kv_fix_chunk`` (find the
bug: several new queries over a cache with a top-left mask), ``kv_cache_gib`` (transfer: the
cache of another public model, Mistral 7B). Expected answers come from ``attnlib.core``,
``attnlib.masks`` and ``attnlib.cache``; the mistakes are written out here.
"""

import numpy as np

from .. import example as ex
from ..cache import KVCache
from ..core import attention
from ..masks import causal_mask
from ..selfcheck.exercise import Exercise

LESSON = "21_decoding_with_a_kv_cache"


def _causal(Q, K, V, scaled=True):
    """Full causal attention, the rows every decoding step must give."""
    Q = np.asarray(Q, dtype=np.float64)
    factor = 1.0 if scaled else np.sqrt(Q.shape[-1])  # unscaled: undo the division
    return attention(Q * factor, K, V, mask=causal_mask(len(Q)))[0]


# ---- kv_by_hand: "eat seeds", two steps ------------------------------------------------------
_EAT, _SEEDS = 1, 2
_Q2, _K2, _V2 = ex.Q[[_EAT, _SEEDS]], ex.K[[_EAT, _SEEDS]], ex.V[[_EAT, _SEEDS]]
_out2, _A2 = attention(_Q2, _K2, _V2, mask=causal_mask(2))
_out2_unscaled, _A2_unscaled = attention(_Q2 * np.sqrt(2), _K2, _V2, mask=causal_mask(2))

KV_BY_HAND = Exercise(
    id="kv_by_hand",
    lesson=LESSON,
    kind="tuple",
    answer="(output_0, weights_1, output_1)",
    hints=[
        "Step 0: the cache holds eat's key and value only, so eat's query gets weight 1 on it.",
        "Step 1: seeds' query (2, 3) meets the cached keys of eat (1, 2) and seeds (2, 1): "
        "scores 8 and 7, each divided by sqrt(2).",
        "The weight on eat is 1 / (1 + e^(s_seeds - s_eat)) with the two divided scores; "
        "the output blends the two cached values with the two weights.",
    ],
    solution=lambda: (
        f"output_0 = ({_out2[0, 0]:.0f}, {_out2[0, 1]:.0f})  # one key: weight 1 on eat's value\n"
        f"weights_1 = ({_A2[1, 0]:.3f}, {_A2[1, 1]:.3f})  # softmax of (8, 7) / sqrt(2)\n"
        f"output_1 = ({_out2[1, 0]:.3f}, {_out2[1, 1]:.3f})  # 0.670 (4, 2) + 0.330 (2, 4)"
    ),
    expected=(_out2[0], _A2[1], _out2[1]),
    mistakes={
        1: {"unscaled": _A2_unscaled[1]},
        2: {"unscaled": _out2_unscaled[1]},
    },
    decimals=2,
    names=("output_0", "weights_1", "output_1"),
)


# ---- kv_decode: a decoder with a cache -------------------------------------------------------
def decode(Q, K, V):
    """Row t: token t's query over the keys and values of tokens 0 .. t, read from a cache."""
    Q = np.asarray(Q, dtype=np.float64)
    K, V = np.asarray(K, dtype=np.float64), np.asarray(V, dtype=np.float64)
    cache = KVCache(len(Q), K.shape[-1], V.shape[-1])
    rows = []
    for t in range(len(Q)):
        cache.append(K[t], V[t])
        rows.append(attention(Q[t : t + 1], cache.keys, cache.values)[0][0])
    return np.array(rows)  # (n, d_v)


def _append_after(Q, K, V):
    """The bug: attend first, append after, so token t sees only tokens 0 .. t - 1.

    Over an empty cache numpy's softmax is an empty row and the blend is a row of zeros.
    """
    Q, K, V = (np.asarray(M, dtype=np.float64) for M in (Q, K, V))
    rows = [np.zeros(V.shape[-1])]
    for t in range(1, len(Q)):
        rows.append(attention(Q[t : t + 1], K[:t], V[:t])[0][0])
    return np.array(rows)


_rng = np.random.default_rng(91)
_FAR_KEYS = np.array([[-40.0, 0.0], [0.0, 0.0], [40.0, 0.0], [10.0, 0.0]])  # q.k up to +-1200
DECODE_CASES = [
    (ex.Q, ex.K, ex.V),  # the worked example
    tuple(_rng.normal(size=s) for s in [(5, 3), (5, 3), (5, 2)]),  # n = 5, d_k = 3, d_v = 2
    tuple(_rng.normal(size=s) for s in [(4, 2), (4, 2), (4, 6)]),
    tuple(_rng.normal(size=s) for s in [(7, 4), (7, 4), (7, 3)]),
    # scores spread past 709 in a row: exp without subtracting the row max overflows
    (np.full((4, 2), [30.0, 0.0]), _FAR_KEYS, _rng.normal(size=(4, 3))),
]

KV_DECODE = Exercise(
    id="kv_decode",
    lesson=LESSON,
    kind="function",
    answer="decode",
    hints=[
        "Loop over t. Keep K_cache and V_cache, starting with 0 rows; each step first "
        "appends K[t] and V[t] (np.vstack), then attends with Q[t] alone.",
        "Step t: score every cached key against Q[t] (one dot product each, divided by "
        "sqrt(d_k)), take the softmax of those t + 1 numbers and blend the cached values "
        "with them. Collect one output row per step.",
        "attnlib.KVCache(n, d_k, d_v) with cache.append(K[t], V[t]) and "
        "attnlib.attention(Q[t:t + 1], cache.keys, cache.values) does the same.",
    ],
    solution="def decode(Q, K, V):\n"
    "    d_k = Q.shape[-1]\n"
    "    K_cache, V_cache = np.empty((0, d_k)), np.empty((0, V.shape[-1]))\n"
    "    rows = []\n"
    "    for t in range(len(Q)):\n"
    "        K_cache, V_cache = np.vstack([K_cache, K[t]]), np.vstack([V_cache, V[t]])  # append\n"
    "        scores = K_cache @ Q[t] / np.sqrt(d_k)  # (t + 1,)\n"
    "        weights = np.exp(scores - scores.max()) / np.exp(scores - scores.max()).sum()\n"
    "        rows.append(weights @ V_cache)  # (d_v,)\n"
    "    return np.array(rows)",
    cases=DECODE_CASES,
    reference=decode,
    mistakes=[
        ("kv_cache_append_after", _append_after),
        ("kv_cache_future_keys", lambda Q, K, V: attention(Q, K, V)[0]),
        ("unscaled", lambda Q, K, V: _causal(Q, K, V, scaled=False)),
    ],
    arg_names=("Q", "K", "V"),
)


# ---- kv_predict_doubling: the work of one cached step when n doubles --------------------------
KV_PREDICT_DOUBLING = Exercise(
    id="kv_predict_doubling",
    lesson=LESSON,
    kind="choice",
    answer="prediction",
    hints=[
        "A cached step has one query. How many keys does it meet when the cache holds n tokens?",
        "One dot product per cached key and one value row per weight: count the "
        "multiplications as a formula in n and d, leaving out the projection of the one "
        "new token, which does not depend on n.",
    ],
    solution="prediction = 'twice'  # one query meets n keys: the work grows like n",
    expected="twice",
    options=("the same", "twice", "four times"),
    mistakes={"four times": "kv_predict_quadratic", "the same": "kv_predict_constant"},
)


# ---- kv_fix_chunk: several new queries over the cache ----------------------------------------
def attend_new(Q_new, K_cache, V_cache):
    """The n_q new tokens (the last n_q rows of the cache) attend causally over the cache."""
    n_q, n_k = len(Q_new), len(K_cache)
    return attention(Q_new, K_cache, V_cache, mask=causal_mask(n_q, n_k, align="bottom_right"))[0]


def _attend_new_top_left(Q_new, K_cache, V_cache):
    n_q, n_k = len(Q_new), len(K_cache)
    return attention(Q_new, K_cache, V_cache, mask=causal_mask(n_q, n_k))[0]  # the bug


CHUNK_CASES = [
    tuple(_rng.normal(size=s) for s in [(2, 3), (5, 3), (5, 2)]),  # 2 new after 3 cached
    tuple(_rng.normal(size=s) for s in [(4, 2), (7, 2), (7, 3)]),
    tuple(_rng.normal(size=s) for s in [(3, 4), (3, 4), (3, 5)]),  # the whole prompt at once
    (ex.Q[1:], ex.K, ex.V),  # eat and seeds after birds (lesson 10)
    (np.full((2, 2), [30.0, 0.0]), _FAR_KEYS, _rng.normal(size=(4, 3))),  # rows spread past 709
]

KV_FIX_CHUNK = Exercise(
    id="kv_fix_chunk",
    lesson=LESSON,
    kind="function",
    answer="attend_new",
    hints=[
        "Print the broken mask for n_q = 2, n_k = 5: can the last new token see its own "
        "key, the last row of the cache?",
        "The new queries are the last n_q of n_k tokens: query i sits at place n_k - n_q + i.",
        "np.tril(M, k) keeps the diagonal shifted k places to the right and everything "
        "below it: which k lets query i see keys up to place n_k - n_q + i?",
    ],
    solution="def attend_new(Q_new, K_cache, V_cache):\n"
    "    n_q, n_k = len(Q_new), len(K_cache)\n"
    "    mask = np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)  # bottom-right\n"
    "    return attnlib.attention(Q_new, K_cache, V_cache, mask=mask)[0]",
    cases=CHUNK_CASES,
    reference=attend_new,
    mistakes=[
        ("top_left_with_cache", _attend_new_top_left),
        (
            "kv_cache_future_keys",
            lambda Q_new, K_cache, V_cache: attention(Q_new, K_cache, V_cache)[0],
        ),
    ],
    arg_names=("Q_new", "K_cache", "V_cache"),
)


# ---- kv_cache_gib: transfer, Mistral 7B's cache ---------------------------------------------
# Mistral-7B-v0.1's config.json: num_hidden_layers 32, num_attention_heads 32,
# num_key_value_heads 8, hidden_size 4096 (d_head = 128), torch_dtype bfloat16 (2 bytes)
MISTRAL = {"layers": 32, "n_heads": 32, "kv_heads": 8, "d_head": 4096 // 32, "bytes": 2}
N_TOKENS = 8192


def _gib(layers, n, kv_heads, d_head, nbytes, keys_and_values=2):
    return keys_and_values * layers * n * kv_heads * d_head * nbytes / 2**30


_m = MISTRAL
KV_CACHE_GIB = Exercise(
    id="kv_cache_gib",
    lesson=LESSON,
    kind="value",
    answer="cache_gib",
    hints=[
        "The lesson's formula: 2 x layers x n x kv_heads x d_head x bytes, then divide by 2**30.",
        "d_head = hidden_size / num_attention_heads = 4096 / 32; the cache keeps "
        "num_key_value_heads heads, and bfloat16 takes 2 bytes.",
    ],
    solution=lambda: (
        "cache_gib = 2 * 32 * 8192 * 8 * (4096 // 32) * 2 / 2**30  # = "
        f"{_gib(_m['layers'], N_TOKENS, _m['kv_heads'], _m['d_head'], _m['bytes']):.2f}"
    ),
    expected=_gib(_m["layers"], N_TOKENS, _m["kv_heads"], _m["d_head"], _m["bytes"]),
    mistakes={
        "kv_cache_no_two": _gib(
            _m["layers"], N_TOKENS, _m["kv_heads"], _m["d_head"], _m["bytes"], keys_and_values=1
        ),
        "kv_cache_query_heads": _gib(
            _m["layers"], N_TOKENS, _m["n_heads"], _m["d_head"], _m["bytes"]
        ),
        "kv_cache_float32": _gib(_m["layers"], N_TOKENS, _m["kv_heads"], _m["d_head"], 4),
    },
    decimals=2,
    name="cache_gib",
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    KV_BY_HAND,
    KV_DECODE,
    KV_PREDICT_DOUBLING,
    KV_FIX_CHUNK,
    KV_CACHE_GIB,
)
