"""Checkers for lesson 08, why sqrt(d_k): the spread of a score.

Ids: ``sqrt_variance`` (by hand: Var(q . k) and Var(q . k / sqrt(d_k))),
``sqrt_product_of_averages`` (by hand: one term's variance by the product of averages),
``sqrt_fix_scaled_twice`` (find the bug: queries scaled when made and the scores again).
Expected answers come from ``attnlib.core`` and the numbers the exercises give.
"""

import numpy as np

from ..selfcheck.exercise import Exercise
from . import SCALE_SOFTMAX_MISTAKES, self_attention, widened

# ---- sqrt_variance: Var(q.k) and Var(q.k / sqrt(d_k)) by hand ------------------------------
VARIANCE_D_K, S_Q, S_K = 32, 3.0, 0.5  # the numbers the exercise gives
VAR_DOT = VARIANCE_D_K * S_Q**2 * S_K**2  # d_k s_q^2 s_k^2
VAR_SCALED = VAR_DOT / VARIANCE_D_K  # Var(x / sqrt(d_k)) = Var(x) / d_k


SQRT_VARIANCE = Exercise(
    id="sqrt_variance",
    lesson="08_why_sqrt_dk",
    kind="tuple",
    answer="(var_dot, var_scaled)",
    hints=[
        "One term q_i k_i has variance s_q^2 s_k^2; the d_k terms do not covary, so add them.",
        "Var(q.k) = d_k s_q^2 s_k^2. Dividing by sqrt(d_k) divides the variance by d_k.",
    ],
    solution=lambda: (
        f"var_dot = 32 * 3.0**2 * 0.5**2  # {VAR_DOT:g}\n"
        f"var_scaled = var_dot / 32  # {VAR_SCALED:g}"
    ),
    expected=(VAR_DOT, VAR_SCALED),
    mistakes={
        0: {"spread_not_squared": VARIANCE_D_K * S_Q * S_K},
        1: {
            "variance_divided_by_root": VAR_DOT / np.sqrt(VARIANCE_D_K),
            "unscaled": VAR_DOT,
            "spread_not_squared": S_Q * S_K,
        },
    },
    decimals=2,
    names=("var_dot", "var_scaled"),
)


# ---- sqrt_product_of_averages: Var(q_i k_i) for independent entries, by the product rule -
Q_VALUES, K_VALUES = (-2.0, 2.0), (-1.0, 0.0, 1.0)  # each value equally likely, independent
_AVG_Q2 = float(np.mean(np.square(Q_VALUES)))  # the average of q_i^2
_AVG_K2 = float(np.mean(np.square(K_VALUES)))  # the average of k_i^2
VAR_TERM = _AVG_Q2 * _AVG_K2  # mean 0, so the variance is the average of q^2 k^2


SQRT_PRODUCT_OF_AVERAGES = Exercise(
    id="sqrt_product_of_averages",
    lesson="08_why_sqrt_dk",
    kind="value",
    answer="var_term",
    hints=[
        "q_i k_i has mean 0, so its variance is the average of q_i^2 k_i^2 over the equally "
        "likely pairs.",
        "The entries are independent: that average is the average of q_i^2 times the average "
        "of k_i^2. Work out each from the listed values.",
    ],
    solution=lambda: (
        f"var_term = 4 * (1 + 0 + 1) / 3  # (average of q^2)(average of k^2) = {VAR_TERM:.3f}"
    ),
    expected=VAR_TERM,
    mistakes=[  # either side's average alone is the same slip
        ("product_one_side", _AVG_Q2),
        ("product_one_side", _AVG_K2),
        ("product_of_means", 0.0),
    ],
    decimals=3,
    name="var_term",
)


# ---- sqrt_fix_scaled_twice: the queries are divided when they are made, and S again -------
_rng = np.random.default_rng(8)
_X56 = _rng.normal(size=(5, 6))  # n = 5 tokens, d_model = 6
_WQ64, _WK64 = _rng.normal(size=(6, 4)), _rng.normal(size=(6, 4))  # d_k = 4
_WV63 = _rng.normal(size=(6, 3))  # d_v = 3
_X38 = _rng.normal(size=(3, 8))  # d_model = 8
_WQ82, _WK82, _WV85 = (_rng.normal(size=s) for s in [(8, 2), (8, 2), (8, 5)])  # d_k 2, d_v 5
_XBIG = 30 + _rng.normal(size=(4, 6))  # with positive weights below: scaled scores ~ 1e4
_WQBIG, _WKBIG = np.abs(_WQ64), np.abs(_WK64)  # so a naive softmax overflows
SELF_ATTENTION_CASES = [
    (_X56, _WQ64, _WK64, _WV63),  # d_model 6, d_k 4, d_v 3
    (_X38, _WQ82, _WK82, _WV85),  # d_model 8, d_k 2, d_v 5
    (_XBIG, _WQBIG, _WKBIG, _WV63),  # large scores
]
SELF_ATTENTION_MISTAKES = SCALE_SOFTMAX_MISTAKES  # lesson 07 names the same slips


SQRT_FIX_SCALED_TWICE = Exercise(
    id="sqrt_fix_scaled_twice",
    lesson="08_why_sqrt_dk",
    kind="function",
    answer="self_attention",
    hints=[
        "Follow one score q . k through the function: what is it divided by, in total?",
        "Q is divided by sqrt(d_k) when it is made, and Q K^T by sqrt(d_k) again: d_k in all.",
        "Keep exactly one of the two divisions, the one the formula has: on the scores Q "
        "K^T, not on Q.",
    ],
    solution="def self_attention(X, W_Q, W_K, W_V):\n"
    "    Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # no division here\n"
    "    S = Q @ K.T / np.sqrt(Q.shape[-1])  # divided once, by sqrt(d_k)\n"
    "    S = S - S.max(axis=-1, keepdims=True)\n"
    "    A = np.exp(S) / np.exp(S).sum(axis=-1, keepdims=True)\n"
    "    return A @ V",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[
        *SELF_ATTENTION_CASES,
        widened(SELF_ATTENTION_CASES[0], 1, 100),
    ],
    reference=self_attention,
    mistakes=SELF_ATTENTION_MISTAKES,
    arg_names=("X", "W_Q", "W_K", "W_V"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    SQRT_VARIANCE,
    SQRT_PRODUCT_OF_AVERAGES,
    SQRT_FIX_SCALED_TWICE,
)
