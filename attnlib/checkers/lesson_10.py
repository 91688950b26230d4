"""Checkers for lesson 10, masks in practice: empty rows, masked attention, the key-value cache.

Ids: ``mask_predict_finite_fill`` (predict then check: hide keys with -1e9 instead of -inf in
a row with nothing to see), ``mask_fix_attention`` (find the bug: a mask applied after
softmax), ``mask_kv_cache`` (transfer: the mask of new queries over cached keys).
Expected answers come from ``attnlib.core`` and ``attnlib.masks``; the worked example's
scaled scores and the naive softmax are lesson 09's.
"""

import numpy as np

from ..core import attention, softmax
from ..masks import causal_mask
from ..selfcheck.exercise import Exercise
from . import widened
from .lesson_09 import CAUSAL_3, S_SCALED, K, Q, V, _masked_weights, _naive_softmax

# ---- mask_fix_attention: repair a masked attention that masks after softmax ----------------
_rng = np.random.default_rng(9)
_Q34, _K54, _V52 = (_rng.normal(size=s) for s in [(3, 4), (5, 4), (5, 2)])
_PATTERN = np.array(  # every row hides some keys and shows others, in no simple order
    [[0, 1, 1, 0, 1], [1, 0, 0, 1, 0], [0, 0, 1, 1, 1]], dtype=bool
)
_QBIG, _KBIG = 20 + _rng.normal(size=(3, 4)), 20 + _rng.normal(size=(5, 4))  # scores ~ 800
MASKED_ATTENTION_CASES = [
    (_Q34, _K54, _V52, causal_mask(3, 5)),  # unequal shapes, causal
    (_Q34, _K54, _V52, _PATTERN),
    (Q, K, V, CAUSAL_3),  # the worked example
    (_QBIG, _KBIG, _V52, causal_mask(3, 5)),  # large scores
]
_EMPTY_ROW = (_Q34, _K54, _V52, _PATTERN & np.array([[1], [0], [1]], dtype=bool))  # row 1: none


def _masked_attention(Q, K, V, mask):
    """attnlib's masked attention, with a row of zeros for a query that sees no key."""
    mask = np.broadcast_to(np.asarray(mask, dtype=bool), (len(Q), len(K)))
    seen = mask.any(axis=-1)  # (n_q,): the queries with a key to read
    output = np.zeros((len(Q), V.shape[-1]))  # (n_q, d_v)
    output[seen] = attention(Q[seen], K, V, mask=mask[seen])[0]
    return output


def _nan_for_an_empty_row(Q, K, V, mask):
    """The -inf repair that leaves an empty row as NaN (-inf - (-inf)), as naive code does."""
    S = np.where(mask, Q @ K.T / np.sqrt(K.shape[-1]), -np.inf)
    with np.errstate(invalid="ignore"):
        return _naive_softmax(S) @ V


def _masked_variant(weights_of):
    def variant(Q, K, V, mask):
        S_scaled = Q @ K.T / np.sqrt(K.shape[-1])
        return weights_of(S_scaled, mask) @ V

    return variant


def _unscaled_masked(Q, K, V, mask):
    return _masked_weights(Q @ K.T, mask) @ V


def _renormalised(S, mask):
    A = softmax(S) * mask  # the row max was taken over hidden keys too
    with np.errstate(invalid="ignore"):
        return A / A.sum(axis=-1, keepdims=True)  # 0 / 0 where every visible weight underflowed


MASKED_ATTENTION_MISTAKES = [
    ("empty_row_nan", _nan_for_an_empty_row),
    ("mask_after_softmax", _masked_variant(lambda S, m: softmax(S) * m)),
    ("renormalised_after_softmax", _masked_variant(_renormalised)),
    ("mask_ignored", _masked_variant(lambda S, m: softmax(S))),
    ("inverted_mask", _masked_variant(lambda S, m: _masked_weights(S, ~m))),
    ("unscaled", _unscaled_masked),
    ("overflow", None),
]


MASK_FIX_ATTENTION = Exercise(
    id="mask_fix_attention",
    lesson="10_masks_in_practice",
    kind="function",
    answer="masked_attention",
    hints=[
        "Print the row sums of the broken function's weights: do they add up to 1?",
        "Zeroing weights after softmax loses their share. Hide the keys before softmax.",
        "Move the hiding before the softmax: where the mask is False the score becomes "
        "-inf (exp(-inf) = 0); then drop the multiplication after it.",
        "A query whose mask row is all False has only -inf scores: find those rows first "
        "(np.any along the last axis), keep their scores finite through the softmax, and "
        "give them zeros at the end.",
    ],
    solution="def masked_attention(Q, K, V, mask):\n"
    "    S = Q @ K.T / np.sqrt(K.shape[-1])\n"
    "    seen = np.any(mask, axis=-1, keepdims=True)  # (n_q, 1): a query with a key to read\n"
    "    S = np.where(mask, S, -np.inf)  # hide keys before softmax\n"
    "    S = np.where(seen, S, 0.0)  # a query that sees nothing: finite scores, zeroed below\n"
    "    S = S - S.max(axis=-1, keepdims=True)\n"
    "    A = np.exp(S) / np.exp(S).sum(axis=-1, keepdims=True)\n"
    "    return np.where(seen, A, 0.0) @ V  # (n_q, d_v): zeros for a query that sees nothing",
    # the widened case has a row whose scores spread past 709 (see widened)
    cases=[
        *MASKED_ATTENTION_CASES,
        widened(MASKED_ATTENTION_CASES[0], 0, 500),
        _EMPTY_ROW,  # last: a mistake that differs elsewhere is named where it differs first
    ],
    reference=_masked_attention,
    mistakes=MASKED_ATTENTION_MISTAKES,
    arg_names=("Q", "K", "V", "mask"),
)


# ---- mask_predict_finite_fill: an all-hidden row filled with -1e9 instead of -inf ----------
FILL_OPTIONS = ("nan", "zeros", "uniform")
_LEFT = CAUSAL_3 & np.array([False, True, True])  # the lesson's left padding: row 0 sees nothing
FILLED_ROW = _naive_softmax(np.where(_LEFT, S_SCALED, -1e9))[0]  # row 0, the pad's, as naive code
FILL_ANSWER = (
    "nan"
    if np.isnan(FILLED_ROW).any()
    else "zeros"
    if np.allclose(FILLED_ROW, 0)
    else "uniform"
    if np.allclose(FILLED_ROW, 1 / len(FILLED_ROW))
    else None
)


MASK_PREDICT_FINITE_FILL = Exercise(
    id="mask_predict_finite_fill",
    written=("Why does a row whose keys are all hidden with -1e9 end up with those weights?"),
    lesson="10_masks_in_practice",
    kind="choice",
    answer="prediction",
    hints=[
        "Every score of that row is now the same finite number, -1e9. What is the row's max?",
        "-1e9 - (-1e9) = 0 for every key. What is exp(0), and what does dividing by the sum give?",
    ],
    solution=f"prediction = {FILL_ANSWER!r}  # every entry is -1e9, so every weight is 1/3",
    expected=FILL_ANSWER,
    options=FILL_OPTIONS,
    mistakes={o: "finite_fill" for o in FILL_OPTIONS if o != FILL_ANSWER},
)


# ---- mask_kv_cache: 2 new queries over 5 keys, 3 of them cached -----------------------------
N_NEW, N_CACHED = 2, 3
KV_CACHE_MASK = causal_mask(N_NEW, N_CACHED + N_NEW, align="bottom_right")  # (2, 5)


MASK_KV_CACHE = Exercise(
    id="mask_kv_cache",
    lesson="10_masks_in_practice",
    kind="value",
    answer="mask",
    hints=[
        "Number the five tokens 0 to 4. The two new queries are tokens 3 and 4, not 0 and 1.",
        "Lesson 09's rule: a query may see the keys at its own place and before, with "
        "places counted over all five tokens.",
        "attnlib.causal_mask(2, 5) aligns the two queries with tokens 0 and 1 (top left): "
        "print it and move each row to the place you found.",
    ],
    solution=lambda: (
        "mask = [[1, 1, 1, 1, 0], [1, 1, 1, 1, 1]]  # queries are tokens 3 and 4 of 0..4\n"
        "# the same as attnlib.causal_mask(2, 5, align='bottom_right'):\n"
        + "\n".join("# " + line for line in str(KV_CACHE_MASK.astype(int)).splitlines())
    ),
    expected=KV_CACHE_MASK,
    mistakes={
        "top_left_with_cache": causal_mask(N_NEW, N_CACHED + N_NEW),
        "inverted_mask": ~KV_CACHE_MASK,
    },
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    MASK_PREDICT_FINITE_FILL,
    MASK_FIX_ATTENTION,
    MASK_KV_CACHE,
)
