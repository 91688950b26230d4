"""Checkers for lesson 04, scaling the scores.

Ids: ``scaling_birds_eat`` (one scaled score by hand), ``scaled_scores_batched`` (transfer:
the same step on a batch of sentences and heads, shape (..., n_q, d_k)),
``scaling_predict`` and ``scaling_birds_weights`` (predict, then check, what scaling does
to birds' weights), ``scaling_fix`` (find the bug: a function that divides by the root of
the wrong size). Expected answers come from ``attnlib.core``.
"""

import numpy as np

from .. import example as ex
from ..core import qk_scores, scale_scores, softmax
from ..selfcheck.exercise import Exercise

Q, K, S = ex.Q, ex.K, ex.S  # (3, 2), (3, 2), (n_q, n_k) = (3, 3)
d_k = ex.d_k
BIRDS, EAT = ex.TOKENS.index("birds"), ex.TOKENS.index("eat")


# ---- scaling_birds_eat: 9 / sqrt(2) by hand ------------------------------------------------
SCORE = S[BIRDS, EAT]  # 9

SCALING_BIRDS_EAT = Exercise(
    id="scaling_birds_eat",
    lesson="04_scaling",
    kind="value",
    answer="birds_eat_scaled",
    hints=[
        "Find birds' row and eat's column in the score table S printed above; d_k is the "
        "width of one key.",
        "The scaling divides a score by the square root of d_k, not by d_k itself.",
    ],
    solution=lambda: f"birds_eat_scaled = 9 / np.sqrt(2)  # {S[BIRDS, EAT] / np.sqrt(d_k):.4f}",
    expected=scale_scores(np.array([SCORE]), d_k)[0],
    mistakes={
        "unscaled": SCORE,
        "divided_by_d_k": SCORE / d_k,
        "multiplied": SCORE * np.sqrt(d_k),
    },
    decimals=2,  # the lesson prints 6.36: 9 / 1.414 = 6.365 passes, 6.43 does not
    name="the scaled score",
)


# ---- scaled_scores_batched: Q (..., n_q, d_k), K (..., n_k, d_k) -----------------------------
def _swap(M):
    return np.swapaxes(M, -1, -2)  # transpose the last two axes only


_rng_b = np.random.default_rng(41)
BATCHED_CASES = [
    # first, so that a wrong width is named where no size is 2: batch = 7, n_q = 5, n_k = 3, d_k = 6
    tuple(np.random.default_rng(41).normal(size=s) for s in ((7, 5, 6), (7, 3, 6))),
    # batch = 2 sentences, n_q = 3, n_k = 5, d_k = 4: every size different
    (_rng_b.normal(size=(2, 3, 4)), _rng_b.normal(size=(2, 5, 4))),
    # batch = 2, heads = 3, n_q = n_k = 4, d_k = 2
    (_rng_b.normal(size=(2, 3, 4, 2)), _rng_b.normal(size=(2, 3, 4, 2))),
    (Q, K),  # the worked example, no batch axis
]


def _batched_scaled(Q, K):
    return scale_scores(qk_scores(Q, K), Q.shape[-1])


BATCHED_MISTAKES = [
    ("counted_tokens", lambda Q, K: Q @ _swap(K) / np.sqrt(Q.shape[-2])),  # n_q
    ("counted_tokens", lambda Q, K: Q @ _swap(K) / np.sqrt(K.shape[-2])),  # n_k
    ("batch_width", lambda Q, K: Q @ _swap(K) / np.sqrt(len(Q))),
    ("unscaled", lambda Q, K: Q @ _swap(K)),
    ("divided_by_d_k", lambda Q, K: Q @ _swap(K) / Q.shape[-1]),
    ("multiplied", lambda Q, K: Q @ _swap(K) * np.sqrt(Q.shape[-1])),
    ("transposed", lambda Q, K: K @ _swap(Q) / np.sqrt(Q.shape[-1])),
    ("hard_coded_d_k", lambda Q, K: Q @ _swap(K) / np.sqrt(2)),  # the example's d_k, typed in
    ("hard_coded_d_k", lambda Q, K: Q @ _swap(K) / 2),
]


SCALED_SCORES_BATCHED = Exercise(
    id="scaled_scores_batched",
    lesson="04_scaling",
    kind="function",
    answer="batched_scaled_scores",
    hints=[
        "Each sentence (and head) is scored on its own: the matrix product works on the "
        "last two axes and repeats over the others.",
        "K.T reverses every axis of a 3-D array; transpose only the last two: "
        "np.swapaxes(K, -1, -2). And d_k is the size of the last axis.",
        "Test it on Q of shape (2, 3, 4) and K of shape (2, 5, 4): the result must have "
        "shape (2, 3, 5), and its [b] must equal the 2-D formula on Q[b] and K[b].",
    ],
    solution="def batched_scaled_scores(Q, K):\n"
    "    S = Q @ np.swapaxes(K, -1, -2)  # (..., n_q, d_k) @ (..., d_k, n_k) -> (..., n_q, n_k)\n"
    "    return S / np.sqrt(Q.shape[-1])  # d_k: the last axis, whatever comes before it",
    cases=BATCHED_CASES,
    reference=_batched_scaled,
    mistakes=BATCHED_MISTAKES,
    arg_names=("Q", "K"),
)


# ---- scaling_predict + scaling_birds_weights: predict, then check -------------------------
SCALING_PREDICT = Exercise(
    id="scaling_predict",
    lesson="04_scaling",
    kind="choice",
    answer="prediction",
    hints=[
        "Dividing by sqrt(2) brings the three scores of the row closer together.",
        "Softmax turns the gap between two scores into a ratio of their weights, e^(gap). "
        "What does a narrower gap do to the ratio between the top weight and each other "
        "weight?",
    ],
    solution="prediction = 'smaller'  # narrower gaps between scores: flatter weights",
    expected="smaller",
    options=["larger", "smaller"],
    mistakes={"larger": "score_gaps"},
    written=(
        "Why does dividing a row of scores by sqrt(2) change eat's "
        "share that way? Say what happens to the gaps between the scores."
    ),
)


ROW = S[BIRDS]  # birds' scores

SCALING_BIRDS_WEIGHTS = Exercise(
    id="scaling_birds_weights",
    lesson="04_scaling",
    kind="value",
    answer="birds_weights",
    hints=[
        "Birds' row of scores is row 0 of S; scale it as in exercise 1 before anything else.",
        "Exponentiate the three numbers, then divide each by their sum.",
        "Check your three weights: each is positive, they sum to 1, and the largest scaled "
        "score has the largest weight.",
    ],
    solution=lambda: (
        "row = S[0] / np.sqrt(d_k)\n"
        "birds_weights = np.exp(row) / np.exp(row).sum()\n"
        f"# {np.round(softmax(scale_scores(S[BIRDS], d_k)), 3).tolist()}"
    ),
    expected=softmax(scale_scores(ROW, d_k)),
    mistakes={
        "unscaled": softmax(ROW),
        "divided_by_d_k": softmax(ROW / d_k),
        "multiplied": softmax(ROW * np.sqrt(d_k)),
        "transposed": softmax(scale_scores(S[:, BIRDS], d_k)),  # birds' column, not row
    },
    decimals=3,
    name="birds_weights",
)


# ---- scaling_fix: repair a function that divides by sqrt(len(Q)) ---------------------------
_rng = np.random.default_rng(4)
SCALING_FIX_CASES = [
    # first, so that a wrong width is named where no size is 2: n_q = 5, n_k = 3, d_k = 6 (a
    # typed-in sqrt(2) or 2, a count of rows and d_k itself all differ here)
    tuple(np.random.default_rng(41).normal(size=s) for s in ((5, 6), (3, 6))),
    (Q, K),  # the worked example: d_k = 2, three tokens
    (_rng.normal(size=(3, 4)), _rng.normal(size=(5, 4))),  # n_q = 3, n_k = 5, d_k = 4
    (_rng.normal(size=(6, 3)), _rng.normal(size=(2, 3))),  # more queries than keys
]


def _scaled(Q, K):
    return scale_scores(qk_scores(Q, K), Q.shape[-1])


SCALING_FIX_MISTAKES = [
    ("counted_tokens", lambda Q, K: Q @ K.T / np.sqrt(Q.shape[0])),  # n_q
    ("counted_tokens", lambda Q, K: Q @ K.T / np.sqrt(K.shape[0])),  # n_k
    ("unscaled", lambda Q, K: Q @ K.T),
    ("divided_by_d_k", lambda Q, K: Q @ K.T / Q.shape[-1]),
    ("multiplied", lambda Q, K: Q @ K.T * np.sqrt(Q.shape[-1])),
    ("transposed", lambda Q, K: K @ Q.T / np.sqrt(Q.shape[-1])),
    ("hard_coded_d_k", lambda Q, K: Q @ K.T / np.sqrt(2)),  # the example's d_k, typed in
    ("hard_coded_d_k", lambda Q, K: Q @ K.T / 2),
]


SCALING_FIX = Exercise(
    id="scaling_fix",
    lesson="04_scaling",
    kind="function",
    answer="fixed_scaled_scores",
    hints=[
        "len(Q) counts the rows of Q: the number of queries. Is that d_k?",
        "d_k is the width of each query and key: the last axis of Q.",
        "Test your fix with 3 queries and 5 keys of width 4: every score must be divided "
        "by 2 (the root of 4), however many queries there are.",
    ],
    solution="def fixed_scaled_scores(Q, K):\n"
    "    S = Q @ K.T  # (n_q, d_k) @ (d_k, n_k) -> (n_q, n_k)\n"
    "    return S / np.sqrt(Q.shape[-1])  # d_k is the width, not len(Q)",
    cases=SCALING_FIX_CASES,
    reference=_scaled,
    mistakes=SCALING_FIX_MISTAKES,
    arg_names=("Q", "K"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    SCALING_BIRDS_EAT,
    SCALED_SCORES_BATCHED,
    SCALING_PREDICT,
    SCALING_BIRDS_WEIGHTS,
    SCALING_FIX,
)
