"""Checkers for lesson 09, masking: causal masks, masked weights, padding masks.

Ids: ``mask_causal`` (by hand), ``mask_weights`` (compute on the worked example),
``mask_padding`` (transfer: a padding mask of shape (batch, 1, n_k) by broadcasting).
Expected answers come from ``attnlib.core`` and ``attnlib.masks``.
"""

import numpy as np

from .. import example as ex
from ..core import attention, scale_scores, softmax
from ..masks import causal_mask, padding_mask
from ..selfcheck.exercise import Exercise


def _naive_softmax(x):
    """exp / sum with the row max subtracted, as the lessons' naive code (nan on empty rows)."""
    with np.errstate(invalid="ignore"):
        z = x - x.max(axis=-1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=-1, keepdims=True)


def _masked_weights(S_scaled, mask):
    return _naive_softmax(np.where(mask, S_scaled, -np.inf))


# ---- mask_causal: a 4 x 4 causal mask by hand ----------------------------------------------
CAUSAL_4 = causal_mask(4)


MASK_CAUSAL = Exercise(
    id="mask_causal",
    lesson="09_masking",
    kind="value",
    answer="mask",
    hints=[
        "Row i is query i; column j is key j. True (or 1) where query i may look at key j.",
        "A query may see its own position and every earlier one: key j <= i.",
        "It is the lower triangle, diagonal included.",
    ],
    solution=lambda: (
        "mask = [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]\n"
        "# the same as attnlib.causal_mask(4):\n"
        + "\n".join("# " + line for line in str(CAUSAL_4.astype(int)).splitlines())
    ),
    expected=CAUSAL_4,
    mistakes={
        "causal_sees_future": CAUSAL_4.T,  # the upper triangle
        "causal_excludes_self": np.tril(np.ones((4, 4), dtype=bool), k=-1),
        "inverted_mask": ~CAUSAL_4,
    },
)


# ---- mask_weights: the worked example's weights under the causal mask ----------------------
Q, K, V, S = ex.Q, ex.K, ex.V, ex.S  # the worked example: (3, 2) each, S (3, 3)
S_SCALED = scale_scores(S, Q.shape[-1])
CAUSAL_3 = causal_mask(3)
WEIGHTS_CAUSAL = attention(Q, K, V, mask=CAUSAL_3)[1]


MASK_WEIGHTS = Exercise(
    id="mask_weights",
    lesson="09_masking",
    kind="value",
    answer="weights",
    hints=[
        "Scale the scores, then put -inf where the mask is False, then softmax each row.",
        "A row with one visible key puts all its weight there; the row that sees every key "
        "keeps lesson 05's weights.",
        "np.where(causal, scores, -np.inf) keeps a score where the mask is True; then a "
        "stable softmax along the last axis (exp(-inf) is 0).",
    ],
    solution=lambda: (
        "S_masked = np.where(causal, Q @ K.T / np.sqrt(d_k), -np.inf)  # hide before softmax\n"
        "weights = np.exp(S_masked - S_masked.max(axis=-1, keepdims=True))\n"
        "weights = weights / weights.sum(axis=-1, keepdims=True)\n"
        + "\n".join("# " + line for line in str(WEIGHTS_CAUSAL.round(3)).splitlines())
    ),
    expected=WEIGHTS_CAUSAL,
    mistakes=[
        ("mask_after_softmax", softmax(S_SCALED) * CAUSAL_3),
        ("mask_ignored", softmax(S_SCALED)),
        ("unscaled", _masked_weights(S, CAUSAL_3)),
        ("causal_sees_future", _masked_weights(S_SCALED, CAUSAL_3.T)),
        ("transposed", WEIGHTS_CAUSAL.T),
        ("inverted_mask", _masked_weights(S_SCALED, ~CAUSAL_3)),
    ],
    decimals=3,
)


# ---- mask_padding: a padding mask by broadcasting -----------------------------------------
PADDING_CASES = [
    ([3, 2], 3),  # the lesson's batch
    ([1, 4, 2], 5),  # three sentences, two of them padded
    ([4], 4),  # one sentence, no pad
    ([2, 5], 6),  # every sentence padded
]


def _padding_reference(lengths, n_k):
    return padding_mask(list(lengths), n_k=n_k)


def _padding_variant(real):
    def variant(lengths, n_k):
        positions = np.arange(n_k)[None, :]  # (1, n_k)
        return real(positions, np.asarray(lengths)[:, None])[:, None, :]

    return variant


MASK_PADDING = Exercise(
    id="mask_padding",
    lesson="09_masking",
    kind="function",
    answer="padding_mask",
    hints=[
        "Compare a row of key positions 0 .. n_k - 1 with a column of lengths: "
        "broadcasting a (1, n_k) row against a (batch, 1) column gives one row per "
        "sentence.",
        "Key j is real when j < length (positions count from 0), so a sentence of length 2 "
        "keeps keys 0 and 1.",
        "The comparison has shape (batch, n_k); attention wants (batch, n_q, n_k): add an "
        "axis of length 1 in the middle, which broadcasts over the queries.",
    ],
    solution="def padding_mask(lengths, n_k):\n"
    "    positions = np.arange(n_k)[None, :]  # (1, n_k)\n"
    "    real = positions < np.asarray(lengths)[:, None]  # (batch, n_k)\n"
    "    return real[:, None, :]  # (batch, 1, n_k)",
    cases=PADDING_CASES,
    reference=_padding_reference,
    mistakes=[
        ("padding_off_by_one", _padding_variant(lambda j, length: j <= length)),
        ("inverted_mask", _padding_variant(lambda j, length: j >= length)),
    ],
    arg_names=("lengths", "n_k"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    MASK_CAUSAL,
    MASK_WEIGHTS,
    MASK_PADDING,
)
