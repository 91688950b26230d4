"""Checkers for lesson 08, why sqrt(d_k): the variance of a score, the right d, saturation.

Ids: ``sqrt_variance`` (by hand), ``sqrt_scaled_from_x`` (write a function),
``sqrt_predict_saturation`` (predict then check), ``sqrt_fix_self_attention``
(find the bug). Expected answers come from ``attnlib.core``.
"""

import numpy as np

from ..core import project, qk_scores, scale_scores
from ..selfcheck.exercise import Exercise
from . import SCALE_SOFTMAX_MISTAKES, self_attention

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


# ---- sqrt_scaled_from_x: scaled scores from X and the weights, d_model != d_k ---------------
_rng = np.random.default_rng(8)
_X56 = _rng.normal(size=(5, 6))  # n = 5 tokens, d_model = 6
_WQ64, _WK64 = _rng.normal(size=(6, 4)), _rng.normal(size=(6, 4))  # d_k = 4
_WV63 = _rng.normal(size=(6, 3))  # d_v = 3
_X38 = _rng.normal(size=(3, 8))  # d_model = 8
_WQ82, _WK82, _WV85 = (_rng.normal(size=s) for s in [(8, 2), (8, 2), (8, 5)])  # d_k 2, d_v 5
_XBIG = 30 + _rng.normal(size=(4, 6))  # with positive weights below: scaled scores ~ 1e4
_WQBIG, _WKBIG = np.abs(_WQ64), np.abs(_WK64)  # so a naive softmax overflows


def _scaled_from_x(X, W_Q, W_K):
    Q, K = project(X, W_Q), project(X, W_K)  # (n, d_k) each
    return scale_scores(qk_scores(Q, K), Q.shape[-1])


def _scaled_with(divisor):
    """A variant that divides X W_Q (X W_K)^T by divisor(X, Q)."""

    def variant(X, W_Q, W_K):
        Q, K = X @ W_Q, X @ W_K
        return Q @ K.T / divisor(X, Q)

    return variant


SCALED_FROM_X_CASES = [(_X56, _WQ64, _WK64), (_X38, _WQ82, _WK82), (_XBIG, _WQBIG, _WKBIG)]
SCALED_FROM_X_MISTAKES = [
    ("wrong_d", _scaled_with(lambda X, Q: np.sqrt(X.shape[-1]))),
    ("unscaled", _scaled_with(lambda X, Q: 1.0)),
    ("divided_by_d_k", _scaled_with(lambda X, Q: Q.shape[-1])),
    ("multiplied", _scaled_with(lambda X, Q: 1 / np.sqrt(Q.shape[-1]))),
    ("transposed", lambda X, W_Q, W_K: _scaled_from_x(X, W_Q, W_K).T),
]


SQRT_SCALED_FROM_X = Exercise(
    id="sqrt_scaled_from_x",
    lesson="08_why_sqrt_dk",
    kind="function",
    answer="scaled_scores_from_x",
    hints=[
        "Project first: Q = X @ W_Q and K = X @ W_K.",
        "d_k is the width of a query: Q.shape[-1] (or W_Q.shape[1]), not X.shape[-1].",
        "return Q @ K.T / np.sqrt(Q.shape[-1])",
    ],
    solution="def scaled_scores_from_x(X, W_Q, W_K):\n"
    "    Q, K = X @ W_Q, X @ W_K  # (n, d_k) each\n"
    "    d_k = Q.shape[-1]  # the width of a query, not of a token\n"
    "    return Q @ K.T / np.sqrt(d_k)",
    cases=SCALED_FROM_X_CASES,
    reference=_scaled_from_x,
    mistakes=SCALED_FROM_X_MISTAKES,
    arg_names=("X", "W_Q", "W_K"),
)


# ---- sqrt_predict_saturation: what happens to the largest weight without scaling -----------
SATURATION_OPTIONS = ("rises", "stays", "falls")


SQRT_PREDICT_SATURATION = Exercise(
    id="sqrt_predict_saturation",
    lesson="08_why_sqrt_dk",
    kind="choice",
    answer="prediction",
    hints=[
        "Var(q.k) = d_k for unit entries: the scores spread further apart as d_k grows.",
        "softmax turns a gap g between two scores into a ratio e^g between their weights.",
    ],
    solution="prediction = 'rises'  # toward 1: the softmax saturates",
    expected="rises",
    options=SATURATION_OPTIONS,
    mistakes={"stays": "saturation", "falls": "saturation"},
)


# ---- sqrt_fix_self_attention: the bug is sqrt(d_model) ------------------------------------
SELF_ATTENTION_CASES = [
    (_X56, _WQ64, _WK64, _WV63),  # d_model 6, d_k 4, d_v 3
    (_X38, _WQ82, _WK82, _WV85),  # d_model 8, d_k 2, d_v 5
    (_XBIG, _WQBIG, _WKBIG, _WV63),  # large scores
]
SELF_ATTENTION_MISTAKES = SCALE_SOFTMAX_MISTAKES  # lesson 07 names the same slips


SQRT_FIX_SELF_ATTENTION = Exercise(
    id="sqrt_fix_self_attention",
    lesson="08_why_sqrt_dk",
    kind="function",
    answer="self_attention",
    hints=[
        "Print X.shape, Q.shape and V.shape inside the function: which width is d_k?",
        "The broken line divides by np.sqrt(X.shape[1]), the width of a token (d_model).",
        "Divide by np.sqrt(Q.shape[-1]) instead; everything else is right.",
    ],
    solution="def self_attention(X, W_Q, W_K, W_V):\n"
    "    Q, K, V = X @ W_Q, X @ W_K, X @ W_V\n"
    "    S = Q @ K.T / np.sqrt(Q.shape[-1])  # d_k, the width of Q and K\n"
    "    S = S - S.max(axis=-1, keepdims=True)\n"
    "    A = np.exp(S) / np.exp(S).sum(axis=-1, keepdims=True)\n"
    "    return A @ V",
    cases=SELF_ATTENTION_CASES,
    reference=self_attention,
    mistakes=SELF_ATTENTION_MISTAKES,
    arg_names=("X", "W_Q", "W_K", "W_V"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    SQRT_VARIANCE,
    SQRT_SCALED_FROM_X,
    SQRT_PREDICT_SATURATION,
    SQRT_FIX_SELF_ATTENTION,
)
