"""Checkers for lesson 20, checking attention against a framework.

Ids: ``is_causal_mask`` (by hand: the mask of PyTorch's ``is_causal`` for n_q = 2,
n_k = 4), ``attention_like_torch`` (write a function: SDPA's ``scale`` through
``attnlib.attention``), ``float32_tolerance`` (predict then check: the smallest rtol at
which float32 attention matches float64), ``bnhd_fix`` (find the bug: attention on
arrays laid out (batch, n, heads, d)), ``kv_cache_mask`` (transfer: the mask of a
decoder with cached keys). Expected answers come from ``attnlib.core`` and
``attnlib.masks``.
"""

import numpy as np

from ..core import attention
from ..masks import causal_mask
from ..selfcheck.exercise import Exercise
from . import widened

# ---- is_causal_mask: PyTorch's is_causal for two queries and four keys ----------------------
IS_CAUSAL = causal_mask(2, 4)  # top-left, what is_causal=True builds

IS_CAUSAL_MASK = Exercise(
    id="is_causal_mask",
    lesson="20_checking_against_a_framework",
    kind="value",
    answer="mask",
    hints=[
        "is_causal builds torch.ones(n_q, n_k).tril(): query i sees keys j <= i.",
        "tril keeps the diagonal and what is below it, counted from the top left corner, "
        "whatever n_k is: it does not shift the queries to the last rows of a cache.",
    ],
    solution="mask = np.array([[True, False, False, False],\n"
    "                 [True, True, False, False]])  # np.tril(np.ones((2, 4), dtype=bool))",
    expected=IS_CAUSAL,
    mistakes={
        "causal_bottom_right": causal_mask(2, 4, align="bottom_right"),
        "mask_inverted": ~IS_CAUSAL,
    },
    name="mask",
)


# ---- attention_like_torch: SDPA's scale through attnlib.attention ---------------------------
def _like_torch(Q, K, V, scale, *, divides=False, twice=False, width=None):
    """What SDPA returns for ``scale`` (None: 1/sqrt(d_k)); switches make the mistakes."""
    d_k = Q.shape[-1]
    if scale is None:
        factor = np.sqrt(d_k) / np.sqrt(width or d_k)  # 1 unless the default used another width
    elif divides:
        factor = np.sqrt(d_k) / scale
    elif twice:
        factor = scale
    else:
        factor = scale * np.sqrt(d_k)
    return attention(Q * factor, K, V)[0]


_rng = np.random.default_rng(18)
_Q34, _K54, _V52 = (_rng.normal(size=s) for s in [(3, 4), (5, 4), (5, 2)])
_Q4, _K4, _V4 = (_rng.normal(size=s) for s in [(2, 3, 3, 4), (2, 3, 5, 4), (2, 3, 5, 2)])
LIKE_TORCH_CASES = [
    (_Q34, _K54, _V52, None),  # the default: 1 / sqrt(d_k)
    # a scale above 1 / sqrt(d_k); not 1.0, where dividing Q by the scale equals multiplying
    # it ("scale_twice") and the first input that matches a slip names it
    (_Q34, _K54, _V52, 2.0),
    (_Q34, _K54, _V52, 0.25),
    (_Q4, _K4, _V4, 0.5),  # (batch, heads, n, d)
]


ATTENTION_LIKE_TORCH = Exercise(
    id="attention_like_torch",
    lesson="20_checking_against_a_framework",
    kind="function",
    answer="attention_like_torch",
    hints=[
        "SDPA computes softmax(Q K^T * scale) V; attnlib computes softmax(Q K^T / sqrt(d_k)) V.",
        "Scaling a query scales its scores: pick the factor f with f / sqrt(d_k) = scale.",
        "SDPA's default scale (None) is 1/sqrt(d_k), attnlib's own: then nothing changes. "
        "Otherwise solve f / sqrt(d_k) = scale for f.",
    ],
    solution="def attention_like_torch(Q, K, V, scale=None):\n"
    "    if scale is None:\n"
    "        return attnlib.attention(Q, K, V)[0]  # SDPA's default is attnlib's 1 / sqrt(d_k)\n"
    "    d_k = Q.shape[-1]\n"
    "    return attnlib.attention(Q * (scale * np.sqrt(d_k)), K, V)[0]",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[*LIKE_TORCH_CASES, widened(LIKE_TORCH_CASES[3], 0, 500)],
    reference=_like_torch,
    mistakes=[
        ("scale_divides", lambda Q, K, V, s: _like_torch(Q, K, V, s, divides=True)),
        ("scale_twice", lambda Q, K, V, s: _like_torch(Q, K, V, s, twice=True)),
        ("wrong_d", lambda Q, K, V, s: _like_torch(Q, K, V, s, width=V.shape[-1])),
    ],
    arg_names=("Q", "K", "V", "scale"),
)


# ---- float32_tolerance: predict the smallest rtol that float32 attention meets --------------
def tolerance_inputs():
    """The inputs of the exercise notebook's experiment: (batch, heads, n, d), seeded."""
    rng = np.random.default_rng(0)
    Q = 8 * rng.normal(size=(2, 3, 3, 4))  # scores in the tens: their errors grow with them
    K = 8 * rng.normal(size=(2, 3, 5, 4))
    V = rng.uniform(1, 2, size=(2, 3, 5, 2))  # outputs between 1 and 2: rtol is meaningful
    return Q, K, V


RTOL_OPTIONS = ("1e-7", "1e-5", "1e-2")


def _smallest_passing_rtol():
    Q, K, V = tolerance_inputs()
    output64, _ = attention(Q, K, V)
    output32, _ = attention(*(M.astype(np.float32) for M in (Q, K, V)))
    relative = np.abs(output32 - output64) / np.abs(output64)
    return next(option for option in RTOL_OPTIONS if relative.max() <= float(option))


FLOAT32_TOLERANCE = Exercise(
    id="float32_tolerance",
    lesson="20_checking_against_a_framework",
    kind="choice",
    answer="rtol",
    hints=[
        "Each float32 number carries about 7 significant digits, and each step rounds again.",
        "The lesson's rule of thumb for float32 gave a tolerance of about 5e-7.",
    ],
    solution=lambda: f"rtol = {_smallest_passing_rtol()!r}  # float32: a few units of 1e-7 off",
    expected=_smallest_passing_rtol(),
    options=RTOL_OPTIONS,
    mistakes={"1e-7": "tolerance_too_tight", "1e-2": "tolerance_too_loose"},
)


# ---- bnhd_fix: attention on arrays laid out (batch, n, heads, d) ----------------------------
def _bnhd(Q, K, V, swap_v=True, swap_qk=True):
    """Attention on (batch, n, heads, d) arrays; switches make the named mistakes."""
    if swap_qk:
        Q, K = Q.swapaxes(1, 2), K.swapaxes(1, 2)  # (batch, heads, n, d)
    V = V.swapaxes(1, 2) if swap_v else V
    output, _ = attention(Q, K, V)
    return output.swapaxes(1, 2) if swap_qk else output  # (batch, n_q, heads, d_v)


BNHD_CASES = [
    tuple(_rng.normal(size=(2, 3, 3, d)) for d in (4, 4, 2)),  # n = heads = 3: no error
    tuple(_rng.normal(size=(2, n, 2, d)) for n, d in ((3, 4), (5, 4), (5, 2))),  # n_q != n_k
]


BNHD_FIX = Exercise(
    id="bnhd_fix",
    lesson="20_checking_against_a_framework",
    kind="function",
    answer="attention_bnhd",
    hints=[
        "Write down the layout of Q, K and V after each line.",
        "attnlib.attention needs all three as (batch, heads, n, d).",
        "Which of the three inputs does the broken function leave in (batch, n, heads, d)? "
        "Give it the same swap as the other two.",
    ],
    solution="def attention_bnhd(Q, K, V):\n"
    "    Q, K, V = (M.swapaxes(1, 2) for M in (Q, K, V))  # (batch, heads, n, d)\n"
    "    output, _ = attnlib.attention(Q, K, V)  # (batch, heads, n_q, d_v)\n"
    "    return output.swapaxes(1, 2)  # (batch, n_q, heads, d_v)",
    # the last case has a row whose scores spread past 709 (see widened)
    cases=[*BNHD_CASES, widened(BNHD_CASES[1], 0, 250)],
    reference=_bnhd,
    mistakes=[
        ("v_not_swapped", lambda Q, K, V: _bnhd(Q, K, V, swap_v=False)),
        ("heads_as_tokens", lambda Q, K, V: _bnhd(Q, K, V, swap_v=False, swap_qk=False)),
    ],
    arg_names=("Q", "K", "V"),
)


# ---- kv_cache_mask: 2 cached tokens and 3 new ones ------------------------------------------
KV_CACHE = causal_mask(3, 5, align="bottom_right")

KV_CACHE_MASK = Exercise(
    id="kv_cache_mask",
    lesson="20_checking_against_a_framework",
    kind="value",
    answer="mask",
    hints=[
        "The 3 queries are tokens 2, 3 and 4 of the 5: each sees every key up to its own position.",
        "Query i (i = 0, 1, 2) sees keys j <= i + 2: the last query sees all five.",
        "np.tril(M, k) keeps the diagonal shifted k places to the right and everything "
        "below it: which k lets query 0 see keys 0 to 2?",
    ],
    solution="mask = np.tril(np.ones((3, 5), dtype=bool), k=5 - 3)  # bottom-right alignment",
    expected=KV_CACHE,
    mistakes={"causal_top_left": causal_mask(3, 5), "mask_inverted": ~KV_CACHE},
    name="mask",
)


# the exercises in the order of the notebook's check cells
EXERCISES = (
    IS_CAUSAL_MASK,
    ATTENTION_LIKE_TORCH,
    FLOAT32_TOLERANCE,
    BNHD_FIX,
    KV_CACHE_MASK,
)
