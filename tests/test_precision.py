"""attnlib.precision.round_to_bfloat16 against a slow reference that picks the nearer of the
two bfloat16 neighbours by distance (float64 arithmetic, not the bit trick), and against
PyTorch's ``.to(torch.bfloat16).float()`` where torch is installed (the course never
requires it; that test is skipped without it).
"""

import numpy as np
import pytest

from attnlib.precision import round_to_bfloat16

F32_MAX = float(np.finfo(np.float32).max)
BF16_MAX = (2 - 2**-7) * 2.0**127


def bits_of(x32):
    return np.asarray(x32, dtype=np.float32).view(np.uint32)


def reference(x32):
    """Nearest bfloat16 by distance, one number at a time; ties to an even last kept bit."""
    out = []
    for x in np.asarray(x32, dtype=np.float32).ravel():
        if np.isnan(x) or np.isinf(x):
            out.append(x)
            continue
        below = (bits_of(x) & np.uint32(0xFFFF0000)).view(np.float32)  # truncated: |below| <= |x|
        above_bits = int(bits_of(below)) + 0x10000  # next bfloat16 away from zero
        above = np.array([above_bits], dtype=np.uint32).view(np.float32)[0]
        if np.isinf(above) or above_bits & 0x7FFFFFFF >= 0x7F800000:
            above = np.float32(np.copysign(np.inf, x))  # past the largest bfloat16
            # rounding compares with the next step as if the exponent went on
            d_above = abs(np.copysign(2.0**128, float(x)) - float(x))
        else:
            d_above = abs(float(above) - float(x))
        d_below = abs(float(x) - float(below))
        if d_below < d_above or (d_below == d_above and (int(bits_of(below)) >> 16) % 2 == 0):
            out.append(below)
        else:
            out.append(above)
    return np.array(out, dtype=np.float32).reshape(np.shape(x32))


EDGES = np.array(
    [
        0.0,
        -0.0,
        1.0,
        1 + 2**-8,  # tie between 1 and 1 + 2^-7: to 1 (even)
        1 + 2**-8 + 2**-20,  # just above the tie: up
        1 + 3 * 2**-8,  # tie between 1 + 2^-7 and 1 + 2^-6: up to the even one
        257.0,
        259.0,
        65504.0,
        65520.0,
        70000.0,
        2.0**-149,  # smallest float32 subnormal
        2.0**-126,  # smallest normal float32
        BF16_MAX,
        F32_MAX,  # rounds past the largest bfloat16: inf
        -F32_MAX,
        np.inf,
        -np.inf,
        np.nan,
    ],
    dtype=np.float32,
)


def random_float32(n=200_000, seed=19):
    """Every kind of float32: random bit patterns (subnormals, nan payloads, inf) and
    random values of ordinary size."""
    rng = np.random.default_rng(seed)
    patterns = rng.integers(0, 2**32, size=n, dtype=np.uint64).astype(np.uint32)
    ordinary = rng.normal(scale=100.0, size=n).astype(np.float32)
    return np.concatenate([patterns.view(np.float32), ordinary, EDGES])


def test_examples_by_hand():
    got = round_to_bfloat16([1.01, 1 + 2**-8, 257, 259, 70000, 1e39])
    np.testing.assert_array_equal(got, [1 + 2**-7, 1.0, 256, 260, 70144, np.inf])
    assert got.dtype == np.float32


def test_edges_match_the_reference():
    np.testing.assert_array_equal(round_to_bfloat16(EDGES), reference(EDGES))
    assert np.signbit(round_to_bfloat16(-0.0))  # the sign of zero survives


def test_random_values_match_the_reference():
    x = random_float32(n=20_000)
    np.testing.assert_array_equal(round_to_bfloat16(x), reference(x))


def test_results_are_bfloat16_and_idempotent():
    x = random_float32()
    r = round_to_bfloat16(x)
    assert r.dtype == np.float32 and r.shape == x.shape
    assert not (bits_of(r[~np.isnan(r)]) & np.uint32(0xFFFF)).any()  # low 16 bits all 0
    np.testing.assert_array_equal(round_to_bfloat16(r), r)
    np.testing.assert_array_equal(np.isnan(r), np.isnan(x))


def test_error_is_at_most_half_a_step():
    x = np.random.default_rng(0).normal(size=(3, 5)).astype(np.float32)
    step = 2.0 ** (np.floor(np.log2(np.abs(x).astype(np.float64))) - 7)  # gap at |x|
    assert (np.abs(round_to_bfloat16(x) - x) <= step / 2).all()


def test_float16_and_whole_numbers_go_through_float32():
    np.testing.assert_array_equal(
        round_to_bfloat16(np.float16(65504)), round_to_bfloat16(np.float32(65504))
    )
    np.testing.assert_array_equal(round_to_bfloat16([[3, 513]]), [[3.0, 512.0]])


@pytest.mark.parametrize("bad", ["1.5", [1j], [True, False]])
def test_rejects_what_is_not_a_real_number(bad):
    with pytest.raises(TypeError, match=r"round_to_bfloat16: x must hold real numbers"):
        round_to_bfloat16(bad)


def test_matches_torch_bfloat16():
    torch = pytest.importorskip(
        "torch", reason="torch is not installed: the framework comparison is optional"
    )
    x = random_float32()
    theirs = torch.from_numpy(x).to(torch.bfloat16).float().numpy()
    ours = round_to_bfloat16(x)
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    keep = ~np.isnan(ours)
    np.testing.assert_array_equal(bits_of(ours[keep]), bits_of(theirs[keep]))  # -0.0 too
