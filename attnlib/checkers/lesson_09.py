"""Checkers for lesson 09, saturation.

Ids: ``sqrt_jacobian_row_sums``, ``sqrt_predict_divide_by_d_k``, ``sqrt_jacobian_psd``. Moved
from lesson 08 with the lesson they practise.
"""

import numpy as np
import sympy as sp

from ..core import softmax
from ..selfcheck.contract import Symbolic
from ..selfcheck.exercise import Exercise
from ..selfcheck.judge import check_expression, check_function, passed, wrong
from ..selfcheck.run import expression_function

# ---- sqrt_jacobian_row_sums: J 1 with the weights left free, then use sum p = 1 ----------
P_NAMES = ("p_0", "p_1", "p_2")
_p = sp.Matrix(sp.symbols(P_NAMES, positive=True))  # (3, 1), free: they need not sum to 1
_J = sp.diag(*_p) - _p * _p.T  # diag(p) - p p^T, (3, 3)
ROW_SUMS = _J * sp.ones(3, 1)  # (3, 1): row i sums to p_i (1 - (p_0 + p_1 + p_2))
ROW_SUM_POINTS = [  # mostly off the simplex, where a sum that is already 0 shows
    (0.2, 0.3, 0.1),
    (1.0, 2.0, 3.0),
    (0.5, 0.25, 0.25),  # on it: every row sums to 0
    (2.0, 0.5, 1.5),
]


SQRT_JACOBIAN_ROW_SUMS = Exercise(
    id="sqrt_jacobian_row_sums",
    lesson="09_saturation",
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
        "J = sp.diag(*p) - p * p.T  # (3, 3), p_0, p_1, p_2 still free\n"
        "row_sums = (J * sp.ones(3, 1)).applyfunc(sp.factor)  # row i: p_i (1 - p_0 - p_1 - p_2)"
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
    lesson="09_saturation",
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


# ---- sqrt_jacobian_psd: v^T J v as a sum of squares with weights p ------------------------
PSD_NAMES = ("p_0", "p_1", "p_2", "v_0", "v_1", "v_2")
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
# and products equals v^T J v here too (it does on the whole plane p_0 + p_1 + p_2 = 1), and
# v^T J v is negative. An answer that forces its sign (Abs, Max, Piecewise, ...) is not.
_PLANE = [
    (-0.5, 1.0, 0.5, 1.0, 0.0, 0.0),  # v^T J v = -0.75
    (1.5, -1.0, 0.5, 0.0, 2.0, 1.0),  # v^T J v = -5.75
]
# many more points, seeded: weights on the simplex, weights >= 0 off it at several scales
# (p = (1.5, 0, 0), v = (1, 0, 0) first: v^T J v + 2 (p_0 + p_1 + p_2 - 1)^2 is -0.25 there)
_rng_psd = np.random.default_rng(83)
_ON += [
    tuple(np.concatenate([_rng_psd.dirichlet(np.ones(3)), 2 * _rng_psd.normal(size=3)]).tolist())
    for _ in range(8)
]
_OFF += [(1.5, 0.0, 0.0, 1.0, 0.0, 0.0)] + [
    tuple(
        np.concatenate([_rng_psd.uniform(0, s, 3), s * _rng_psd.normal(size=3)]).round(3).tolist()
    )
    for s in (0.5, 1.0, 2.0, 4.0)
    for _ in range(6)
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
    (the p-weighted variance, or half the sum of p_i p_j (v_i - v_j)^2, ...), at every one
    of many points; nan or inf at any point is wrong, never a pass."""
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
    if not all(isinstance(x, (int, float)) and not isinstance(x, bool) for x in values):
        return check_function(records, PSD_POINTS, reference, (), None, PSD_NAMES)
    for x, point in zip(values, PSD_POINTS[n:], strict=True):
        if not np.isfinite(x):
            at = ", ".join(
                f"{name} = {value:g}" for name, value in zip(PSD_NAMES, point, strict=True)
            )
            return wrong(f"your expression is {x} at {at}: a proof's formula is a number there.")
    if min(values[: len(_OFF)]) < -1e-9:  # equal to v^T J v on the simplex, negative off it
        return wrong("", mistake="psd_not_sum_of_squares")
    plane = n + len(_OFF)
    if check_function(records[plane:], PSD_POINTS[plane:], reference).status != "passed":
        return wrong("", mistake="sign_forced")  # right for weights, not as a formula
    return passed()


SQRT_JACOBIAN_PSD = Exercise(
    id="sqrt_jacobian_psd",
    lesson="09_saturation",
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
    # and as a formula: v^T J v where p sums to 1, >= 0 by its form (p_i >= 0, squares)
    exactness=Symbolic(
        "v^T J v where p_0 + p_1 + p_2 = 1",
        tuple((name, {"nonnegative": True}) for name in PSD_NAMES[:3])
        + tuple((name, {"real": True}) for name in PSD_NAMES[3:]),
        on=lambda s: {s["p_2"]: 1 - s["p_0"] - s["p_1"]},
        nonnegative=True,
    ),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    SQRT_JACOBIAN_ROW_SUMS,
    SQRT_PREDICT_DIVIDE_BY_D_K,
    SQRT_JACOBIAN_PSD,
)
