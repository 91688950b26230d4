"""The exercises of the whole formula that more than one lesson leans on.

``softmax`` (lesson 05: write a stable softmax) and ``attention`` (lesson 07: the whole
formula as a function), both functions checked on unequal shapes and large scores.
Expected answers and every mistake's value come from ``attnlib.core``.
"""

import numpy as np

from .. import example as ex
from ..core import attention_weights, softmax
from ..selfcheck.exercise import Exercise
from . import naive_softmax, widened

Q, K, V = ex.Q, ex.K, ex.V  # the worked example, (3, 2) each


# ---- function exercises: several inputs, unequal shapes, large scores ---------------------
_rng = np.random.default_rng(0)
_X35 = _rng.normal(size=(3, 5)) * 2  # n_q = 3 rows, n_k = 5 columns
_ROW = np.array([1.0, 2.0, 0.5, -1.0])  # a single row
_BIG = 1000 + _rng.normal(size=(3, 5)) * 5  # scores around 1e3: a naive exp overflows
_SQUARE = np.array([[0.5, 2.0, -1.0], [3.0, 0.0, 1.0], [-2.0, 1.5, 0.5]])  # no keepdims: runs
# rows 2000 apart: one shift for the whole table underflows the last row to 0 / 0
_FAR = np.array([[1000.0, 999.0, 1001.0, 998.0, 990.0], [0.0, 1.0, 2.0, 3.0, 4.0]])
_FAR = np.concatenate([_FAR, -_FAR[:1]])  # (3, 5)
SOFTMAX_CASES = [(_X35,), (_ROW,), (_BIG,), (_SQUARE,), (_FAR,)]


def _no_keepdims_sum(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1)  # (n_q, n_k) / (n_q,): divides column j by row j's sum


def _no_keepdims(x):
    e = np.exp(x - x.max(axis=-1))  # (n_q, n_k) - (n_q,): column j shifted by row j's max
    return e / e.sum(axis=-1)


def _global_max(x):
    e = np.exp(x - x.max())  # one shift for every row
    return e / e.sum(axis=-1, keepdims=True)


def _mixed_axis_softmax(x):
    e = np.exp(x - x.max(axis=-1, keepdims=True))  # the row max is right ...
    return e / e.sum(axis=0, keepdims=True)  # ... but the sum runs down the columns


def _column_max_softmax(x):
    e = np.exp(x - x.max(axis=0, keepdims=True))  # the max runs down the columns ...
    return e / e.sum(axis=-1, keepdims=True)  # ... though each row still sums to 1


SOFTMAX = Exercise(
    id="softmax",
    lesson="05_softmax",
    kind="function",
    answer="softmax",
    hints=[
        "exp every entry, then divide each row by its own sum.",
        "Sum along the last axis with keepdims=True so the division lines up with the rows.",
        "Subtract each row's max before exp: the result does not change and exp cannot overflow.",
    ],
    solution="def softmax(x):\n"
    "    z = x - x.max(axis=-1, keepdims=True)  # softmax ignores shifts\n"
    "    e = np.exp(z)\n"
    "    return e / e.sum(axis=-1, keepdims=True)",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[*SOFTMAX_CASES, widened(SOFTMAX_CASES[0], 0, 500)],
    reference=softmax,
    mistakes=[
        ("wrong_axis", lambda x: softmax(x, axis=0)),
        ("wrong_axis", _mixed_axis_softmax),
        ("no_keepdims", _no_keepdims_sum),
        ("no_keepdims", _no_keepdims),
        ("global_max", _global_max),  # before overflow: both leave nan in the result
        ("overflow", naive_softmax),
    ],
    arg_names=("x",),
)


_Q34 = _rng.normal(size=(3, 4))  # n_q = 3, d_k = 4
_K54 = _rng.normal(size=(5, 4))  # n_k = 5, d_k = 4
_V52 = _rng.normal(size=(5, 2))  # n_k = 5, d_v = 2
_QBIG = 20 + _rng.normal(size=(3, 4))  # scores around 1600, scaled around 800
_KBIG = 20 + _rng.normal(size=(5, 4))
ATTENTION_CASES = [
    (_Q34, _K54, _V52),  # unequal shapes: a transpose cannot hide
    (Q, K, V),  # the worked example (square: a transpose still computes)
    (_Q34[:, :3], _K54[:, :3], _rng.normal(size=(5, 6))),  # d_v = 6 > d_k = 3
    (_QBIG, _KBIG, _V52),  # large scores
]


def _attention_with(scores_to_weights):
    def variant(Q, K, V):
        return scores_to_weights(Q @ K.T, Q, K, V) @ V

    return variant


ATTENTION_MISTAKES = [
    ("unscaled", _attention_with(lambda S, Q, K, V: softmax(S))),
    ("divided_by_d_k", _attention_with(lambda S, Q, K, V: softmax(S / K.shape[-1]))),
    ("multiplied", _attention_with(lambda S, Q, K, V: softmax(S * np.sqrt(K.shape[-1])))),
    ("wrong_axis", _attention_with(lambda S, Q, K, V: softmax(S / np.sqrt(K.shape[-1]), axis=0))),
    (
        "column_max",
        _attention_with(lambda S, Q, K, V: _column_max_softmax(S / np.sqrt(K.shape[-1]))),
    ),
    (
        "wrong_axis",
        _attention_with(lambda S, Q, K, V: _mixed_axis_softmax(S / np.sqrt(K.shape[-1]))),
    ),
    ("wrong_d", _attention_with(lambda S, Q, K, V: softmax(S / np.sqrt(V.shape[-1])))),
    ("transposed", lambda Q, K, V: softmax((K @ Q.T) / np.sqrt(K.shape[-1])) @ V),
    ("transposed", lambda Q, K, V: softmax(Q @ K.T / np.sqrt(K.shape[-1])).T @ V),
    ("hard_coded_d_k", _attention_with(lambda S, Q, K, V: softmax(S / np.sqrt(2)))),
    ("hard_coded_d_k", _attention_with(lambda S, Q, K, V: softmax(S / 2))),
    ("overflow", _attention_with(lambda S, Q, K, V: naive_softmax(S / np.sqrt(K.shape[-1])))),
]


# first, so that a wrong width is named where no size is 2: d_k = 6, d_v = 3, n_q = 4,
# n_k = 5 (a typed-in sqrt(2) or 2, the root of d_v and d_k itself all differ here)
_rng_two = np.random.default_rng(41)
_NO_TWO = tuple(_rng_two.normal(size=s) for s in ((4, 6), (5, 6), (5, 3)))


def _attention_output(Q, K, V):
    return attention_weights(Q, K) @ V


ATTENTION = Exercise(
    id="attention",
    lesson="07_the_whole_formula",
    kind="function",
    answer="attention",
    hints=[
        "Print the row sums of the weights inside the broken function: each query's row "
        "must sum to 1.",
        "Two lines work down the columns (axis=0): the max and the sum. Which axis holds "
        "one query's scores?",
        "Fix both lines. A shift shared by a whole row leaves its softmax unchanged; a "
        "column's max differs from key to key, so subtracting it changes the row's "
        "weights.",
    ],
    solution="def attention(Q, K, V):\n"
    "    d_k = K.shape[-1]\n"
    "    S = Q @ K.T / np.sqrt(d_k)  # (n_q, n_k)\n"
    "    S = S - S.max(axis=-1, keepdims=True)  # stable softmax\n"
    "    A = np.exp(S) / np.exp(S).sum(axis=-1, keepdims=True)\n"
    "    return A @ V  # (n_q, d_v)",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[_NO_TWO, *ATTENTION_CASES, widened(ATTENTION_CASES[0], 0, 700)],
    reference=_attention_output,
    mistakes=ATTENTION_MISTAKES,
    arg_names=("Q", "K", "V"),
)
