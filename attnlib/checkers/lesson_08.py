"""Checkers for lesson 08, why sqrt(d_k): the variance of a score and the softmax Jacobian.

Ids: ``sqrt_variance`` (by hand), ``sqrt_jacobian_row_sums`` (prove it with sympy: every
row of the Jacobian sums to 0, so the ones vector is in its null space),
``sqrt_predict_divide_by_d_k`` (predict then check: divide by d_k, not its root),
``sqrt_fix_scaled_twice`` (find the bug: queries scaled when made and the scores again),
``sqrt_jacobian_psd`` (prove it: v^T J v >= 0). Expected answers come from
``attnlib.core`` and sympy; the proofs' points are chosen here, and the learner's
expression is evaluated at them in the learner's kernel.
"""

import numpy as np
import sympy as sp

from ..core import softmax
from ..selfcheck.exercise import Exercise
from ..selfcheck.judge import check_expression, check_function, passed, wrong
from ..selfcheck.run import expression_function
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


# ---- sqrt_jacobian_row_sums: J 1 with the weights left free, then use sum p = 1 ----------
P_NAMES = ("p_1", "p_2", "p_3")
_p = sp.Matrix(sp.symbols(P_NAMES, positive=True))  # (3, 1), free: they need not sum to 1
_J = sp.diag(*_p) - _p * _p.T  # diag(p) - p p^T, (3, 3)
ROW_SUMS = _J * sp.ones(3, 1)  # (3, 1): row i sums to p_i (1 - (p_1 + p_2 + p_3))
ROW_SUM_POINTS = [  # mostly off the simplex, where a sum that is already 0 shows
    (0.2, 0.3, 0.1),
    (1.0, 2.0, 3.0),
    (0.5, 0.25, 0.25),  # on it: every row sums to 0
    (2.0, 0.5, 1.5),
]


SQRT_JACOBIAN_ROW_SUMS = Exercise(
    id="sqrt_jacobian_row_sums",
    lesson="08_why_sqrt_dk",
    kind="proof",
    answer="row_sums",
    hints=[
        "The sums of the rows of a matrix J are the entries of J times a column of ones.",
        "J = diag(p) - p p^T: in sympy, sp.diag(*p) is diag(p) and the outer product of "
        "the column p with itself is p times its transpose. Then multiply by a column of "
        "three ones.",
        "sp.factor each entry: row i should come out as p_i times (1 minus the sum of the "
        "p's), which is 0 on the simplex.",
    ],
    solution=(
        "J = sp.diag(*p) - p * p.T  # (3, 3), p_1, p_2, p_3 still free\n"
        "row_sums = (J * sp.ones(3, 1)).applyfunc(sp.factor)  # row i: p_i (1 - p_1 - p_2 - p_3)"
    ),
    expected=ROW_SUMS,
    mistakes={
        "jacobian_missing_outer": _p,  # the rows of diag(p) alone
        "jacobian_sign": -ROW_SUMS,
        "proof_assumed_result": sp.zeros(3, 1),
    },
    cases=ROW_SUM_POINTS,
    arg_names=P_NAMES,
)


# ---- sqrt_predict_divide_by_d_k: the largest weight when the scores are divided by d_k ----
DIVIDE_OPTIONS = ("rises", "stays", "falls")


def largest_weight(d_k, divisor, rng, draws=500, n_k=16):
    """Median largest of ``n_k`` weights of ``softmax(q . k / divisor(d_k))``, unit entries."""
    q = rng.standard_normal((draws, 1, d_k))
    keys = rng.standard_normal((draws, n_k, d_k))
    scores = (q @ np.swapaxes(keys, -1, -2))[:, 0, :] / divisor(d_k)  # (draws, n_k)
    return float(np.median(softmax(scores).max(axis=-1)))


_rng = np.random.default_rng(8)
_FIRST, _LAST = (largest_weight(d, float, _rng) for d in (2, 512))  # divided by d_k itself
DIVIDE_ANSWER = "falls" if _LAST < 0.8 * _FIRST else "rises" if _LAST > 1.2 * _FIRST else "stays"


SQRT_PREDICT_DIVIDE_BY_D_K = Exercise(
    id="sqrt_predict_divide_by_d_k",
    lesson="08_why_sqrt_dk",
    kind="choice",
    answer="prediction",
    hints=[
        "Var(q . k) = d_k for unit entries. What is Var(q . k / d_k)?",
        "Var(x / c) = Var(x) / c^2: work out the variance of q . k / d_k, then think about "
        "what scores that bunch closer together as d_k grows do to softmax.",
    ],
    solution=f"prediction = {DIVIDE_ANSWER!r}  # the scores bunch up, the weights go to 1/16",
    expected=DIVIDE_ANSWER,
    options=DIVIDE_OPTIONS,
    mistakes={o: "over_scaled" for o in DIVIDE_OPTIONS if o != DIVIDE_ANSWER},
    written=(
        "Why does dividing by d_k itself instead of sqrt(d_k) move the "
        "largest weight that way? Use the variance of a scaled score."
    ),
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


# ---- sqrt_jacobian_psd: v^T J v as a sum of squares with weights p ------------------------
PSD_NAMES = ("p_1", "p_2", "p_3", "v_1", "v_2", "v_3")
_v = sp.Matrix(sp.symbols(PSD_NAMES[3:], real=True))  # (3, 1)
_m = (_p.T * _v)[0]  # the p-weighted mean of v's entries
QUADRATIC = (_v.T * _J * _v)[0]  # v^T J v, equal to the sum below when p sums to 1
VARIANCE_FORM = sum(p_i * (v_i - _m) ** 2 for p_i, v_i in zip(_p, _v, strict=True))
_ON = [  # p sums to 1 (weights a softmax could give), v anything
    (0.5, 0.3, 0.2, 1.5, -0.5, 2.0),
    (0.1, 0.6, 0.3, -1.2, 0.4, 0.9),
    (0.25, 0.25, 0.5, 3.0, 1.0, -2.0),
    (0.7, 0.2, 0.1, 1.0, 1.0, 1.0),  # v = ones: v^T J v = 0
]
_OFF = [  # p >= 0 that does not sum to 1: where v^T J v itself can be negative
    (1.0, 1.0, 1.0, 1.0, 1.0, 1.0),
    (2.0, 0.5, 1.0, 1.0, -1.0, 2.0),
    (0.3, 0.2, 0.1, 3.0, 1.0, 2.0),
]
# p sums to 1 but one weight is negative: no softmax gives these, yet a formula made of sums
# and products equals v^T J v here too (it does on the whole plane p_1 + p_2 + p_3 = 1), and
# v^T J v is negative. An answer that forces its sign (Abs, Max, Piecewise, ...) is not.
_PLANE = [
    (-0.5, 1.0, 0.5, 1.0, 0.0, 0.0),  # v^T J v = -0.75
    (1.5, -1.0, 0.5, 0.0, 2.0, 1.0),  # v^T J v = -5.75
]
PSD_POINTS = _ON + _OFF + _PLANE
PSD_MISTAKES = {
    "psd_not_sum_of_squares": QUADRATIC,
    "psd_unweighted_mean": sum(
        p_i * (v_i - sum(_v) / 3) ** 2 for p_i, v_i in zip(_p, _v, strict=True)
    ),
    "sign_forced": sp.Abs(QUADRATIC),  # >= 0 by decree: the rule sees it on _PLANE
}


def _psd_verdict(records):
    """Right: equal to v^T J v where p sums to 1 and >= 0 wherever p >= 0, in any form
    (the p-weighted variance, or half the sum of p_i p_j (v_i - v_j)^2, ...)."""
    f = {code: expression_function(e, PSD_NAMES) for code, e in PSD_MISTAKES.items()}
    reference = expression_function(VARIANCE_FORM, PSD_NAMES)
    n = len(_ON)
    if not isinstance(records, list) or len(records) != len(PSD_POINTS):
        return check_function(records, PSD_POINTS, reference, (), None, PSD_NAMES)
    named = [("psd_unweighted_mean", f["psd_unweighted_mean"])]
    on_simplex = check_expression(records[:n], PSD_POINTS[:n], reference, named, None, PSD_NAMES)
    if on_simplex.status != "passed":
        return on_simplex
    values = [r.get("ok") if isinstance(r, dict) else None for r in records[n:]]
    if not all(isinstance(x, float) for x in values):  # an error or not a number: say which
        return check_function(records, PSD_POINTS, reference, (), None, PSD_NAMES)
    if min(values[: len(_OFF)]) < -1e-9:  # equal to v^T J v on the simplex, negative off it
        return wrong("", mistake="psd_not_sum_of_squares")
    plane = n + len(_OFF)
    if check_function(records[plane:], PSD_POINTS[plane:], reference).status != "passed":
        return wrong("", mistake="sign_forced")  # right for weights, not as a formula
    return passed()


SQRT_JACOBIAN_PSD = Exercise(
    id="sqrt_jacobian_psd",
    lesson="08_why_sqrt_dk",
    kind="proof",
    answer="quad",
    hints=[
        "v^T J v = sum_i p_i v_i^2 - (sum_i p_i v_i)^2. With weights p that sum to 1, what "
        "is that in statistics?",
        "It is a variance: the p-weighted average of (v_i - m)^2, where m = sum_j p_j v_j.",
        "In sympy, p.T * v is a 1 x 1 matrix: its entry [0] is the number m. Sum the three "
        "terms p_i (v_i - m)^2; each is a weight times a square.",
    ],
    solution=(
        "m = (p.T * v)[0]  # the p-weighted mean of the entries of v\n"
        "quad = sum(p_i * (v_i - m) ** 2 for p_i, v_i in zip(p, v))  # each term >= 0"
    ),
    expected=VARIANCE_FORM,
    mistakes=PSD_MISTAKES,
    cases=PSD_POINTS,
    arg_names=PSD_NAMES,
    rule=_psd_verdict,
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    SQRT_VARIANCE,
    SQRT_JACOBIAN_ROW_SUMS,
    SQRT_PREDICT_DIVIDE_BY_D_K,
    SQRT_FIX_SCALED_TWICE,
    SQRT_JACOBIAN_PSD,
)
