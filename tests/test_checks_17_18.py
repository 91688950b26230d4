"""The checkers of lessons 23 (precision) and 24 (checking against a framework), with answers
written the way a learner writes them: numpy only, never taken from attnlib, so a checker
cannot pass by comparing the package with itself. Each right answer passes; each slip a
learner makes is named with its own code.
"""

import numpy as np
import pytest

from tests.checker_cases import assert_mistake, assert_passed


# ---- lesson 23 ------------------------------------------------------------------------------
def softmax_half(x):
    z = x.astype(np.float32)
    E = np.exp(z - z.max(axis=-1, keepdims=True))
    return (E / E.sum(axis=-1, keepdims=True)).astype(np.float16)


def softmax_half_naive(x):
    E = np.exp(x)  # float16: inf past 11.09
    return E / E.sum(axis=-1, keepdims=True)


def softmax_half_no_max(x):
    z = x.astype(np.float32)
    E = np.exp(z)  # float32 buys range, but only up to 88.72
    return (E / E.sum(axis=-1, keepdims=True)).astype(np.float16)


def softmax_half_columns(x):
    z = x.astype(np.float32)
    E = np.exp(z - z.max(axis=0, keepdims=True))
    return (E / E.sum(axis=0, keepdims=True)).astype(np.float16)


def softmax_half_table_max(x):
    z = x.astype(np.float32)
    E = np.exp(z - z.max())  # one max for the whole table
    return (E / E.sum(axis=-1, keepdims=True)).astype(np.float16)


def attention_half(Q, K, V, cast_first=True, scaled=True):
    if cast_first:
        Q, K = Q.astype(np.float32), K.astype(np.float32)
    S = (Q @ K.T).astype(np.float32)
    if scaled:
        S = S / np.sqrt(np.float32(Q.shape[1]))
    E = np.exp(S - S.max(axis=1, keepdims=True))
    return (E / E.sum(axis=1, keepdims=True) @ V.astype(np.float32)).astype(np.float16)


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("fp16_limits", ((2 - 2**-10) * 2**15, np.log((2 - 2**-10) * 2**15))),
        ("fp16_limits", (65504, 11.09)),  # worked by hand, two decimals
        ("softmax_half", softmax_half),
        ("fp16_stall", (0.25, 1.0)),
        ("attention_half_fix", attention_half),
        ("bf16_limits", ((2 - 2**-7) * 2.0**127, np.log((2 - 2**-7) * 2.0**127))),
        ("bf16_round", (260, 1, 70144)),  # worked by hand: steps 2, 2^-7 and 512
    ],
)
def test_lesson_23_right_answers_pass(exercise_id, answer):
    assert_passed(exercise_id, answer)


@pytest.mark.parametrize(
    "exercise_id, answer, code",
    [
        ("fp16_limits", ((2 - 2**-10) * 2**16, 11.09), "exponent_all_ones"),
        ("fp16_limits", (2**16, 11.09), "max_power_of_two"),
        ("fp16_limits", (65504, np.log10(65504)), "log10_not_ln"),
        ("softmax_half", softmax_half_naive, "overflow"),
        ("softmax_half", softmax_half_no_max, "overflow"),
        ("softmax_half", softmax_half_columns, "wrong_axis"),
        ("softmax_half", softmax_half_table_max, "global_max"),
        ("fp16_stall", (1.0, 1.0), "fp16_sum_exact"),
        ("fp16_stall", (0.5, 1.0), "stall_copied"),
        (
            "attention_half_fix",
            lambda Q, K, V: attention_half(Q, K, V, cast_first=False),
            "cast_after_product",
        ),
        ("attention_half_fix", lambda Q, K, V: attention_half(Q, K, V, scaled=False), "unscaled"),
        ("bf16_limits", (3.4028234663852886e38, 88.72), "bf16_mantissa"),
        ("bf16_limits", ((2 - 2**-7) * 2**15, 11.09), "bf16_exponent"),
        ("bf16_limits", ((2 - 2**-7) * 2.0**127, np.log10((2 - 2**-7) * 2.0**127)), "log10_not_ln"),
        ("bf16_round", (258, 1, 70144), "truncated"),
        ("bf16_round", (260, 1, 69632), "truncated"),
        ("bf16_round", (259, 1, 70144), "float16_step"),
        ("bf16_round", (260, 1 + 2**-8, 70144), "float16_step"),
        ("bf16_round", (260, 1 + 2**-7, 70144), "tie_away_from_even"),
        ("bf16_round", (260, 1, np.inf), "float16_range"),
    ],
)
def test_lesson_23_mistakes_are_named(exercise_id, answer, code):
    assert_mistake(exercise_id, answer, code)


# ---- lesson 24 ------------------------------------------------------------------------------
def sdpa(Q, K, V, scale=None, d=None):
    """SDPA's documented formula in numpy: softmax(Q K^T * scale) V, scale = 1/sqrt(d_k)."""
    scale = 1 / np.sqrt(d or Q.shape[-1]) if scale is None else scale
    S = Q @ np.swapaxes(K, -1, -2) * scale
    E = np.exp(S - S.max(axis=-1, keepdims=True))
    return E / E.sum(axis=-1, keepdims=True) @ V


def per_head(Q, K, V):
    """(batch, n, heads, d) attention, one batch and one head at a time."""
    out = np.zeros((*Q.shape[:3], V.shape[-1]))
    for b in range(Q.shape[0]):
        for h in range(Q.shape[2]):
            out[b, :, h] = sdpa(Q[b, :, h], K[b, :, h], V[b, :, h])
    return out


def bnhd_v_unswapped(Q, K, V):
    return np.swapaxes(sdpa(np.swapaxes(Q, 1, 2), np.swapaxes(K, 1, 2), V), 1, 2)


@pytest.mark.parametrize(
    "exercise_id, answer",
    [
        ("is_causal_mask", np.tril(np.ones((2, 4), dtype=bool))),
        ("is_causal_mask", [[1, 0, 0, 0], [1, 1, 0, 0]]),
        ("attention_like_torch", sdpa),
        ("float32_tolerance", "1e-5"),
        ("bnhd_fix", per_head),
        ("kv_cache_mask", np.tril(np.ones((3, 5), dtype=bool), k=2)),
    ],
)
def test_lesson_24_right_answers_pass(exercise_id, answer):
    assert_passed(exercise_id, answer)


@pytest.mark.parametrize(
    "exercise_id, answer, code",
    [
        ("is_causal_mask", [[1, 1, 1, 0], [1, 1, 1, 1]], "causal_bottom_right"),
        ("is_causal_mask", [[0, 1, 1, 1], [0, 0, 1, 1]], "mask_inverted"),
        (
            "attention_like_torch",
            lambda Q, K, V, s=None: sdpa(Q, K, V, None if s is None else 1 / s),
            "scale_divides",
        ),
        (
            "attention_like_torch",
            lambda Q, K, V, s=None: sdpa(Q, K, V, None if s is None else s / np.sqrt(Q.shape[-1])),
            "scale_twice",
        ),
        (
            "attention_like_torch",
            lambda Q, K, V, s=None: sdpa(Q, K, V, s, d=V.shape[-1]),
            "wrong_d",
        ),
        ("float32_tolerance", "1e-7", "tolerance_too_tight"),
        ("float32_tolerance", "1e-2", "tolerance_too_loose"),
        ("bnhd_fix", bnhd_v_unswapped, "v_not_swapped"),
        ("bnhd_fix", lambda Q, K, V: sdpa(Q, K, V), "heads_as_tokens"),
        ("kv_cache_mask", np.tril(np.ones((3, 5), dtype=bool)), "causal_top_left"),
        ("kv_cache_mask", ~np.tril(np.ones((3, 5), dtype=bool), k=2), "mask_inverted"),
    ],
)
def test_lesson_24_mistakes_are_named(exercise_id, answer, code):
    assert_mistake(exercise_id, answer, code)


def test_float32_tolerance_expects_what_the_measurement_shows():
    # the choice's expected option comes from a measurement: re-measure it here by hand
    from attnlib.checkers.lesson_24 import FLOAT32_TOLERANCE, tolerance_inputs

    Q, K, V = tolerance_inputs()
    relative = np.abs(sdpa(*(M.astype(np.float32) for M in (Q, K, V))) - sdpa(Q, K, V)) / np.abs(
        sdpa(Q, K, V)
    )
    assert 1e-7 < relative.max() < 1e-5
    assert FLOAT32_TOLERANCE.expected == "1e-5"
