"""Checkers for lesson 19, precision: softmax in float32, float16 and bfloat16.

Ids: ``fp16_limits`` (by hand: float16's largest number and where exp overflows),
``softmax_half`` (write a softmax for float16 that computes in float32),
``fp16_stall`` (predict then check: a float16 running total of 8192 weights),
``attention_half_fix`` (find the bug: scores formed in float16 before the cast),
``bf16_limits`` (transfer: the same two numbers for bfloat16), ``bf16_round`` (predict:
three numbers rounded to bfloat16). Expected answers come from numpy's ``finfo``, from bit
patterns, from ``attnlib.core`` and from ``attnlib.precision``.
"""

import numpy as np

from .. import example as ex
from ..core import attention, softmax
from ..precision import round_to_bfloat16
from ..selfcheck.exercise import Exercise
from . import widened

# ---- fp16_limits: float16's largest number and the score where exp overflows ---------------
FP16_MAX = float(np.finfo(np.float16).max)
FP16_LIMIT = float(np.log(FP16_MAX))

FP16_LIMITS = Exercise(
    id="fp16_limits",
    lesson="19_precision",
    kind="tuple",
    answer="(x_max, x_limit)",
    hints=[
        "Every mantissa bit set gives 1.1111111111 in binary, just under 2; the top "
        "ordinary exponent of float16 is 15.",
        "exp(x) reaches x_max where x = ln(x_max).",
        "Check: x_max is a whole number a little below 2^16, and exp(x_limit) gives x_max back.",
    ],
    solution=lambda: (
        "x_max = (2 - 2**-10) * 2**15  # every mantissa bit set, the top ordinary exponent\n"
        f"x_limit = np.log(x_max)  # = {FP16_LIMIT:.4f}"
    ),
    expected=(FP16_MAX, FP16_LIMIT),
    mistakes={
        0: {"exponent_all_ones": 2 * FP16_MAX, "max_power_of_two": 2.0**16},
        1: {"log10_not_ln": float(np.log10(FP16_MAX))},
    },
    decimals=2,
    names=("x_max", "x_limit"),
)


# ---- softmax_half: float16 in, float16 out, computed in float32 -----------------------------
def _softmax_in(x, dtype, axis=-1, row_max=True):
    """Softmax of x computed in ``dtype``, handed back as float16; switches make mistakes."""
    z = np.asarray(x).astype(dtype)
    top = z.max(axis=axis, keepdims=True) if row_max else z.max()
    E = np.exp(z - top)
    return (E / E.sum(axis=axis, keepdims=True)).astype(np.float16)


def _naive_half(x):
    E = np.exp(np.asarray(x, dtype=np.float16))  # overflows float16 past 11.09
    return E / E.sum(axis=-1, keepdims=True)


_rng = np.random.default_rng(17)
SOFTMAX_HALF_CASES = [
    (ex.SCALED.astype(np.float16),),  # the worked example's scaled scores, (3, 3)
    ((10 * _rng.normal(size=(3, 5))).astype(np.float16),),  # scores past 11.09
    # far apart, one row past float32's 88.72: computing in float32 still needs the row max
    (np.array([[100.0, 101.0, 99.0], [-80.0, -79.0, -81.0]], dtype=np.float16),),
]


SOFTMAX_HALF = Exercise(
    id="softmax_half",
    lesson="19_precision",
    kind="function",
    answer="softmax_half",
    hints=[
        "Cast to float32 first; do every step there; cast the weights back to float16 once.",
        "Subtract each row's own maximum (axis=-1, keepdims=True) before np.exp.",
        "Check on one row of 4096 equal float16 scores: every weight must be 1/4096 and "
        "the row must sum to 1. A sum kept in float16 stops growing long before that.",
    ],
    solution="def softmax_half(x):\n"
    "    z = x.astype(np.float32)  # compute in float32\n"
    "    E = np.exp(z - z.max(axis=-1, keepdims=True))  # (..., n_k), every entry in (0, 1]\n"
    "    return (E / E.sum(axis=-1, keepdims=True)).astype(np.float16)  # rounded once",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[*SOFTMAX_HALF_CASES, widened(SOFTMAX_HALF_CASES[1], 0, 60)],
    reference=lambda x: softmax(x),  # attnlib: float16 in, float16 out, computed in float32
    mistakes=[
        ("wrong_axis", lambda x: _softmax_in(x, np.float32, axis=0)),
        ("global_max", lambda x: _softmax_in(x, np.float32, row_max=False)),
        ("overflow", _naive_half),
    ],
    decimals=3,
    arg_names=("x",),
    dtype="float16",  # float16 out: a float32 or float64 result is wrong
)


# ---- fp16_stall: a float16 running total of 8192 weights of 1/8192 --------------------------
N_STALL = 8192
_W = np.full(N_STALL, 1 / N_STALL, dtype=np.float16)  # each exactly 2^-13
TOTAL16 = float(np.cumsum(_W, dtype=np.float16)[-1])  # one addition at a time, in float16
TOTAL32 = float(np.cumsum(_W, dtype=np.float32)[-1])

FP16_STALL = Exercise(
    id="fp16_stall",
    lesson="19_precision",
    kind="tuple",
    answer="(total16, total32)",
    hints=[
        "The float16 total stops growing once the gap between float16 numbers at the total "
        "is twice the addend: then each addition lands halfway and rounds back.",
        "The gap at a total in [2^k, 2^(k+1)) is 2^(k-10); the addend is 2^-13.",
        "Find the k with 2^(k-10) = 2 x 2^-13 and where its interval starts. float32 has "
        "23 mantissa bits: does its gap at the totals you reach ever get that large?",
    ],
    solution=lambda: (
        f"total16 = {TOTAL16:g}  # stalls where the gap is 2^-12\ntotal32 = {TOTAL32:g}"
    ),
    expected=(TOTAL16, TOTAL32),
    mistakes={0: {"fp16_sum_exact": TOTAL32, "stall_copied": 0.5}},
    decimals=3,
    names=("total16", "total32"),
)


# ---- attention_half_fix: scores formed in float16, cast too late ----------------------------
def _attention_half(Q, K, V, cast_first=True, root=True):
    """float16 attention computed in float32; switches make the named mistakes."""
    if cast_first:
        Q, K = Q.astype(np.float32), K.astype(np.float32)
    with np.errstate(all="ignore"):
        S = (Q @ K.T).astype(np.float32)  # (n_q, n_k)
        S = S / np.sqrt(np.float32(Q.shape[-1])) if root else S
        E = np.exp(S - S.max(axis=-1, keepdims=True))
        A = E / E.sum(axis=-1, keepdims=True)
        return (A @ V.astype(np.float32)).astype(np.float16)


_Q34, _K54, _V52 = (_rng.normal(size=s).astype(np.float16) for s in [(3, 4), (5, 4), (5, 2)])
_Q_DOC, _K_DOC, _V_DOC = (M.astype(np.float16) for M in (ex.Q, ex.K, ex.V))
ATTENTION_HALF_CASES = [
    (_Q_DOC, _K_DOC, _V_DOC),  # the worked example in float16
    (_Q34, _K54, _V52),  # n_q = 3, n_k = 5, d_k = 4, d_v = 2
    (100 * _Q_DOC, 100 * _K_DOC, _V_DOC),  # scores up to 90000, past float16's 65504
    # scaled scores up to 143000: still past 65504 after dividing by sqrt(d_k), so a "fix"
    # that scales first but stays in float16 overflows too
    (150 * _Q_DOC, 150 * _K_DOC, _V_DOC),
]


ATTENTION_HALF_FIX = Exercise(
    id="attention_half_fix",
    lesson="19_precision",
    kind="function",
    answer="attention_half",
    hints=[
        "Try the broken function on 100 * Q and 100 * K: where does the first inf appear?",
        "Q @ K.T of two float16 arrays is a float16 array: past 65504 it is already inf, "
        "before any cast.",
        "Cast Q and K (and V) to float32 before the product, then cast the output back once.",
    ],
    solution="def attention_half(Q, K, V):\n"
    "    Q, K, V = (M.astype(np.float32) for M in (Q, K, V))  # cast first\n"
    "    S = Q @ K.T / np.sqrt(np.float32(Q.shape[-1]))  # (n_q, n_k), in float32\n"
    "    E = np.exp(S - S.max(axis=-1, keepdims=True))\n"
    "    A = E / E.sum(axis=-1, keepdims=True)\n"
    "    return (A @ V).astype(np.float16)  # rounded once, at the end",
    cases=ATTENTION_HALF_CASES,
    reference=lambda Q, K, V: attention(Q, K, V)[0],
    mistakes=[
        ("cast_after_product", lambda Q, K, V: _attention_half(Q, K, V, cast_first=False)),
        ("unscaled", lambda Q, K, V: _attention_half(Q, K, V, root=False)),
    ],
    decimals=2,
    arg_names=("Q", "K", "V"),
    dtype="float16",  # float16 out: a float32 or float64 result is wrong
)


# ---- bf16_limits: transfer to bfloat16 (8 exponent bits, 7 mantissa bits) -------------------
# bfloat16 is the top half of a float32: its largest finite number has the bits 0x7F7F.
BF16_MAX = float(np.array([0x7F7F0000], dtype=np.uint32).view(np.float32)[0])
BF16_LIMIT = float(np.log(BF16_MAX))

BF16_LIMITS = Exercise(
    id="bf16_limits",
    lesson="19_precision",
    kind="tuple",
    answer="(x_max, x_limit)",
    hints=[
        "The rule of the lesson holds for any format: (2 - 2^-m) * 2^e for m mantissa bits "
        "and top ordinary exponent e.",
        "bfloat16 has float32's 8 exponent bits (top ordinary exponent 127) and 7 mantissa bits.",
        "Check: x_max is a little below 2^128, close to float32's largest number, and "
        "exp(x_limit) gives x_max back.",
    ],
    solution=lambda: (
        f"x_max = (2 - 2**-7) * 2**127  # = {BF16_MAX:.5g}\n"
        f"x_limit = np.log(x_max)  # = {BF16_LIMIT:.4f}, as float32's: the same exponent range"
    ),
    expected=(BF16_MAX, BF16_LIMIT),
    mistakes={
        0: {
            "bf16_mantissa": float(np.finfo(np.float32).max),
            "bf16_exponent": BF16_MAX / 2.0**112,  # the top exponent 15 in place of 127
        },
        1: {"log10_not_ln": float(np.log10(BF16_MAX))},
    },
    names=("x_max", "x_limit"),
)


# ---- bf16_round: three numbers rounded to bfloat16 by hand -----------------------------------
BF16_INPUTS = (259.0, 1 + 2**-8, 70000.0)  # above 256 the step is 2; a tie at 1; past 65504
BF16_ROUNDED = tuple(float(v) for v in round_to_bfloat16(BF16_INPUTS))


def _truncated(x):
    """Drop the low 16 bits without rounding (a bfloat16 made by cutting, not rounding)."""
    bits = np.float32(x).view(np.uint32) & np.uint32(0xFFFF0000)
    return float(bits.view(np.float32))


BF16_ROUND = Exercise(
    id="bf16_round",
    lesson="19_precision",
    kind="tuple",
    answer="(r_259, r_tie, r_70000)",
    hints=[
        "Find the power of 2 at or below the number, 2^k; bfloat16's step there is 2^(k-7). "
        "Round to the nearest multiple of the step.",
        "259 lies in [256, 512): step 2. 1 + 2^-8 lies in [1, 2): step 2^-7, so it is exactly "
        "halfway. 70000 lies in [65536, 131072): step 512.",
        "A tie goes to the even multiple of the step (last kept bit 0): 259 is 129.5 steps of "
        "2, 1 + 2^-8 is 128.5 steps of 2^-7; 70000 / 512 = 136.7.",
    ],
    solution=lambda: (
        f"r_259 = {BF16_ROUNDED[0]:g}  # 129.5 steps of 2: a tie, to the even 130\n"
        f"r_tie = {BF16_ROUNDED[1]:g}  # 128.5 steps of 2^-7: a tie, to the even 128\n"
        f"r_70000 = {BF16_ROUNDED[2]:g}  # 136.7 steps of 512: 137; float16 would give inf"
    ),
    expected=BF16_ROUNDED,
    mistakes={
        0: {"truncated": _truncated(259.0), "float16_step": 259.0},
        1: {"tie_away_from_even": 1 + 2**-7, "float16_step": 1 + 2**-8},
        2: {"truncated": _truncated(70000.0), "float16_range": float("inf")},
    },
    names=("r_259", "r_tie", "r_70000"),
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    FP16_LIMITS,
    SOFTMAX_HALF,
    FP16_STALL,
    ATTENTION_HALF_FIX,
    BF16_LIMITS,
    BF16_ROUND,
)
