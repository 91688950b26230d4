"""Checkers for lesson 14, multi-head and cross-attention.

Ids: ``heads_by_hand`` (one head of a split, by hand), ``heads_multi_query`` (transfer:
multi-query attention, every query head sharing one key head and one value head),
``heads_cross_shape`` (predict then check: the shape of cross-attention weights),
``heads_fix_merge`` (find the bug: a merge without its transpose). Expected answers come
from ``attnlib.heads`` and ``attnlib.core``.
"""

import numpy as np

from ..core import softmax
from ..heads import merge_heads, multi_head_attention, split_heads
from ..selfcheck.exercise import Exercise
from . import widened


def _split_no_transpose(X, n_heads):
    n, width = np.shape(X)
    return np.reshape(X, (n_heads, n, width // n_heads))


def _split_interleaved(X, n_heads):
    n, width = np.shape(X)
    return np.reshape(X, (n, width // n_heads, n_heads)).transpose(2, 0, 1)


# ---- heads_by_hand: head 1 of a 2 x 6 matrix split into 3 heads ------------------------------
Z = np.arange(1.0, 13.0).reshape(2, 6)  # rows 1..6 and 7..12


HEADS_BY_HAND = Exercise(
    id="heads_by_hand",
    lesson="14_multi_head_and_cross_attention",
    kind="value",
    answer="head_1",
    hints=[
        "6 columns and 3 heads: each head owns 2 neighbouring columns of every row.",
        "Head 0 owns columns 0 and 1, head 1 columns 2 and 3, head 2 columns 4 and 5.",
    ],
    solution="head_1 = [[3, 4], [9, 10]]  # columns 2 and 3 of each row",
    expected=split_heads(Z, 3)[1],
    mistakes={
        "reshape_no_transpose": _split_no_transpose(Z, 3)[1],
        "heads_interleaved": _split_interleaved(Z, 3)[1],
    },
    name="head 1",
)


# ---- heads_multi_query: n_heads query heads share one key head and one value head -----------
def multi_query_attention(X, W_Q, W_K, W_V, W_O, n_heads, split=split_heads, root=None):
    """The reference (and, with another split or root, a mistake): multi-query attention."""
    Q = split(X @ W_Q, n_heads)  # (n_heads, n, d_k)
    K, V = X @ W_K, X @ W_V  # (n, d_k) and (n, d_v): one head each, shared by every query head
    d = Q.shape[-1] if root is None else root(Q)
    heads = softmax(Q @ K.T / np.sqrt(d)) @ V  # (n_heads, n, n) @ (n, d_v) -> (n_heads, n, d_v)
    return merge_heads(heads) @ W_O  # (n, n_heads * d_v) @ (n_heads * d_v, d_out)


def _multi_query_merged_by(merge, project=True):
    def layer(X, W_Q, W_K, W_V, W_O, n_heads):
        Q = split_heads(X @ W_Q, n_heads)
        K, V = X @ W_K, X @ W_V
        merged = merge(softmax(Q @ K.T / np.sqrt(Q.shape[-1])) @ V)
        return merged @ W_O if project else merged

    return layer


_rng = np.random.default_rng(100)
MULTI_QUERY_CASES = [
    # n = 5, d_model = 6, 3 query heads of d_k = 2; shared d_k = 2, d_v = 3; output width 4
    (_rng.normal(size=(5, 6)), *(_rng.normal(size=s) for s in [(6, 6), (6, 2), (6, 3), (9, 4)]), 3),
    # n = 4, d_model = 8, 2 query heads of d_k = 3; shared d_v = 2; output width 5
    (_rng.normal(size=(4, 8)), *(_rng.normal(size=s) for s in [(8, 6), (8, 3), (8, 2), (4, 5)]), 2),
]


HEADS_MULTI_QUERY = Exercise(
    id="heads_multi_query",
    lesson="14_multi_head_and_cross_attention",
    kind="function",
    answer="multi_query",
    hints=[
        "Only the queries are split: X @ W_Q has n_heads * d_k columns, X @ W_K only d_k.",
        "Q of shape (n_heads, n, d_k) times K.T of shape (d_k, n) broadcasts over the heads.",
        "Split only the queries into heads; the one key head and the one value head are "
        "shared with every query head by broadcasting; merge the heads back before the "
        "output projection W_O.",
    ],
    solution="def multi_query(X, W_Q, W_K, W_V, W_O, n_heads):\n"
    "    Q = attnlib.split_heads(X @ W_Q, n_heads)  # (n_heads, n, d_k)\n"
    "    K = X @ W_K  # (n, d_k): one key head for every query head\n"
    "    V = X @ W_V  # (n, d_v): one value head\n"
    "    S = Q @ K.T / np.sqrt(Q.shape[-1])  # (n_heads, n, n), d_k of one head\n"
    "    heads = attnlib.softmax(S) @ V  # (n_heads, n, d_v)\n"
    "    return attnlib.merge_heads(heads) @ W_O  # (n, n_heads * d_v) @ W_O",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[*MULTI_QUERY_CASES, widened(MULTI_QUERY_CASES[0], 1, 100)],
    reference=multi_query_attention,
    mistakes=[
        ("reshape_no_transpose", lambda *a: multi_query_attention(*a, split=_split_no_transpose)),
        ("heads_interleaved", lambda *a: multi_query_attention(*a, split=_split_interleaved)),
        ("merge_no_transpose", _multi_query_merged_by(lambda H: H.reshape(H.shape[1], -1))),
        ("no_output_projection", _multi_query_merged_by(merge_heads, project=False)),
        # sqrt of every query head's width, n_heads * d_k, instead of one head's d_k
        ("wrong_d", lambda *a: multi_query_attention(*a, root=lambda Q: Q.shape[0] * Q.shape[-1])),
        ("unscaled", lambda *a: multi_query_attention(*a, root=lambda Q: 1)),
    ],
    arg_names=("X", "W_Q", "W_K", "W_V", "W_O", "n_heads"),
)


# ---- heads_cross_shape: predict the shape of the cross-attention weights ---------------------
CROSS_OPTIONS = ((4, 6, 9), (4, 9, 6), (4, 6, 6), (6, 9))


HEADS_CROSS_SHAPE = Exercise(
    id="heads_cross_shape",
    lesson="14_multi_head_and_cross_attention",
    kind="choice",
    answer="prediction",
    hints=[
        "One weight table per head; each table has one row per query and one column per key.",
        "The tokens being written ask (queries); the source tokens answer (keys). The "
        "heads come first.",
    ],
    solution="prediction = (4, 6, 9)  # (n_heads, n_q, n_k)",
    expected=(4, 6, 9),
    options=CROSS_OPTIONS,
    mistakes={(4, 9, 6): "transposed", (4, 6, 6): "cross_keys_from_queries"},
)


# ---- heads_fix_merge: repair a multi-head attention whose merge forgot the transpose ---------
def _reference(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads):
    return multi_head_attention(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads)[0]


def _softmax_rows(S):
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def _layer(split, merge, root=None, project=True):
    """A multi-head layer built from the given split and merge, for the mistakes."""

    def layer(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads):
        Q, K, V = split(X_q @ W_Q, n_heads), split(X_kv @ W_K, n_heads), split(X_kv @ W_V, n_heads)
        d = Q.shape[-1] if root is None else root(Q)
        heads = _softmax_rows(Q @ np.swapaxes(K, -1, -2) / np.sqrt(d)) @ V
        merged = merge(heads)
        return merged @ W_O if project else merged

    return layer


def _merge_right(H):
    return H.transpose(1, 0, 2).reshape(H.shape[1], -1)


def _merge_no_transpose(H):
    return H.reshape(H.shape[1], -1)


_rng = np.random.default_rng(11)
_X = _rng.normal(size=(5, 6))  # self-attention: n = 5, d_model = 6, 3 heads of width 2
_SELF = (_X, _X, *(_rng.normal(size=s) for s in [(6, 6), (6, 6), (6, 6), (6, 4)]), 3)
# cross-attention: n_q = 3, n_k = 7, d_model 4 and 5, 2 heads with d_k = 2 and d_v = 3
_CROSS = (
    _rng.normal(size=(3, 4)),
    _rng.normal(size=(7, 5)),
    *(_rng.normal(size=s) for s in [(4, 4), (5, 4), (5, 6), (6, 2)]),
    2,
)
FIX_CASES = [_SELF, _CROSS]
FIX_MISTAKES = [
    ("merge_no_transpose", _layer(split_heads, _merge_no_transpose)),
    ("reshape_no_transpose", _layer(_split_no_transpose, _merge_right)),
    ("heads_interleaved", _layer(_split_interleaved, _merge_right)),
    ("no_output_projection", _layer(split_heads, _merge_right, project=False)),
    # sqrt of all heads' width (d_model in most layers) instead of one head's d_k
    ("wrong_d", _layer(split_heads, _merge_right, root=lambda Q: Q.shape[0] * Q.shape[-1])),
    ("unscaled", _layer(split_heads, _merge_right, root=lambda Q: 1)),
]


HEADS_FIX_MERGE = Exercise(
    id="heads_fix_merge",
    lesson="14_multi_head_and_cross_attention",
    kind="function",
    answer="multi_head",
    hints=[
        "Print the broken layer's output next to attnlib's: are the shapes equal? The values?",
        "Split and attention are right. Look at how the heads are put back together.",
        "After attention, heads has shape (n_heads, n_q, d_v). A reshape to (n_q, n_heads "
        "* d_v) reads the entries in memory order: which axis must come first so that one "
        "query's heads end up side by side?",
    ],
    solution="def multi_head(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads):\n"
    "    Q = split(X_q @ W_Q, n_heads)  # (n_heads, n_q, d_k)\n"
    "    K = split(X_kv @ W_K, n_heads)  # (n_heads, n_k, d_k)\n"
    "    V = split(X_kv @ W_V, n_heads)  # (n_heads, n_k, d_v)\n"
    "    S = Q @ K.transpose(0, 2, 1) / np.sqrt(Q.shape[-1])  # d_k of one head\n"
    "    heads = softmax_rows(S) @ V  # (n_heads, n_q, d_v)\n"
    "    merged = heads.transpose(1, 0, 2).reshape(X_q.shape[0], -1)  # (n_q, n_heads * d_v)\n"
    "    return merged @ W_O",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[*FIX_CASES, widened(FIX_CASES[0], 2, 50)],
    reference=_reference,
    mistakes=FIX_MISTAKES,
    arg_names=("X_q", "X_kv", "W_Q", "W_K", "W_V", "W_O", "n_heads"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    HEADS_BY_HAND,
    HEADS_MULTI_QUERY,
    HEADS_CROSS_SHAPE,
    HEADS_FIX_MERGE,
)
