"""rotary_angles and apply_rotary: the score depends only on p - r, the two layouts are a
column permutation, an independent reference in complex numbers, dtypes, named errors."""

import cmath

import numpy as np
import pytest

from attnlib import apply_rotary, rotary_angles

LAYOUTS = ("interleaved", "half")


def rotary_complex(X, positions, base=10000.0, layout="interleaved"):
    """The rotation written differently: each pair is a complex number z = x_a + i x_b,
    turned by multiplying with e^(i p theta), one row and one pair at a time."""
    X = np.asarray(X, dtype=np.float64)
    n, d = X.shape
    Y = np.empty_like(X)
    for row in range(n):
        for i in range(d // 2):
            a, b = (2 * i, 2 * i + 1) if layout == "interleaved" else (i, i + d // 2)
            theta = base ** (-2 * i / d)
            z = complex(X[row, a], X[row, b]) * cmath.exp(1j * positions[row] * theta)
            Y[row, a], Y[row, b] = z.real, z.imag
    return Y


def random_case(rng, n_q=3, n_k=5, d=6):
    Q, K = rng.normal(size=(n_q, d)), rng.normal(size=(n_k, d))
    p = rng.integers(0, 50, size=n_q)  # query positions, any order, repeats allowed
    r = rng.integers(0, 50, size=n_k)  # key positions
    return Q, K, p, r


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("n, d, base", [(3, 2, 10000.0), (5, 6, 10000.0), (4, 8, 500.0)])
def test_matches_the_complex_number_reference(layout, n, d, base):
    rng = np.random.default_rng(n * d)
    X = rng.normal(size=(n, d))
    positions = rng.uniform(-20, 200, size=n)  # real positions, negative ones too
    got = apply_rotary(X, positions, base=base, layout=layout)
    np.testing.assert_allclose(got, rotary_complex(X, positions, base, layout), atol=1e-12)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_rotated_score_depends_only_on_p_minus_r(layout):
    rng = np.random.default_rng(1)
    Q, K, p, r = random_case(rng)  # n_q = 3, n_k = 5, d = 6
    S = apply_rotary(Q, p, layout=layout) @ apply_rotary(K, r, layout=layout).T  # (3, 5)
    # every pair again, with only the offset p - r given to the query and the key unturned
    for j in range(3):
        for m in range(5):
            q_offset = apply_rotary(Q[j : j + 1], [p[j] - r[m]], layout=layout)[0]
            np.testing.assert_allclose(S[j, m], q_offset @ K[m], atol=1e-12)
    # and moving every position by the same amount changes no score
    shifted = apply_rotary(Q, p + 1000, layout=layout) @ apply_rotary(K, r + 1000, layout=layout).T
    np.testing.assert_allclose(shifted, S, atol=1e-10)


def test_the_score_does_depend_on_the_offset():
    rng = np.random.default_rng(2)
    Q, K, _, _ = random_case(rng)
    S0 = apply_rotary(Q, [0, 0, 0]) @ apply_rotary(K, [0] * 5).T
    S3 = apply_rotary(Q, [3, 3, 3]) @ apply_rotary(K, [0] * 5).T
    assert np.abs(S3 - S0).max() > 0.1


def interleave_order(d):
    """Column order that puts half-layout partners side by side: 0, d/2, 1, d/2 + 1, ..."""
    return np.stack([np.arange(d // 2), np.arange(d // 2) + d // 2], axis=1).ravel()


def test_half_layout_is_the_interleaved_one_with_columns_permuted():
    rng = np.random.default_rng(3)
    X = rng.normal(size=(2, 5, 8))  # (heads, n, d): the positions are shared by the heads
    positions = [4, 0, 9, 1, 30]
    perm = interleave_order(8)
    half = apply_rotary(X, positions, layout="half")
    interleaved = apply_rotary(X[..., perm], positions, layout="interleaved")
    np.testing.assert_allclose(half[..., perm], interleaved, atol=1e-12)
    assert not np.allclose(half, apply_rotary(X, positions))  # the layouts do differ


def test_permuted_weights_give_the_same_scores_in_the_other_layout():
    rng = np.random.default_rng(4)
    X = rng.normal(size=(5, 4))  # (n, d_model)
    W_Q, W_K = rng.normal(size=(4, 6)), rng.normal(size=(4, 6))  # d_k = 6
    positions = np.arange(5)
    perm = interleave_order(6)

    def scores(W_Q, W_K, layout):
        Q, K = X @ W_Q, X @ W_K
        return (
            apply_rotary(Q, positions, layout=layout) @ apply_rotary(K, positions, layout=layout).T
        )

    np.testing.assert_allclose(
        scores(W_Q, W_K, "half"), scores(W_Q[:, perm], W_K[:, perm], "interleaved"), atol=1e-12
    )


def test_rotation_keeps_lengths_and_position_zero_changes_nothing():
    rng = np.random.default_rng(5)
    X = rng.normal(size=(4, 6))
    Y = apply_rotary(X, [0, 1, 100, 12345])
    np.testing.assert_allclose(np.linalg.norm(Y, axis=1), np.linalg.norm(X, axis=1))
    np.testing.assert_array_equal(apply_rotary(X, [0, 0, 0, 0]), X)


def test_rotary_angles_follow_the_formula():
    got = rotary_angles([0, 1, 5, 2.5], 6, base=100.0)
    want = [[p * 100.0 ** (-2 * i / 6) for i in range(3)] for p in (0, 1, 5, 2.5)]
    assert got.shape == (4, 3) and got.dtype == np.float64
    np.testing.assert_allclose(got, want, rtol=1e-15)


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_float_dtypes_are_kept(dtype):
    rng = np.random.default_rng(6)
    X = rng.normal(size=(3, 4))
    positions = [0, 7, 123457]  # far out: the angles are formed in float64, then rounded
    got = apply_rotary(X.astype(dtype), positions)
    assert got.dtype == dtype
    tol = {np.float64: 1e-12, np.float32: 1e-6, np.float16: 2e-3}[dtype]
    want = rotary_complex(X.astype(dtype).astype(np.float64), positions)
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)


def test_lists_and_integers_give_float64_and_inputs_are_unchanged():
    assert apply_rotary([[1, 2]], [3]).dtype == np.float64
    X = np.arange(8.0).reshape(2, 4)
    before = X.copy()
    apply_rotary(X, [1, 2], layout="half")
    np.testing.assert_array_equal(X, before)


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: apply_rotary(np.ones((3, 5)), [0, 1, 2]), ValueError,
         r"^apply_rotary: d must be even \(columns turn in pairs\), but X has 5 columns\.$"),
        (lambda: apply_rotary(np.ones((3, 4)), [0, 1]), ValueError,
         r"^apply_rotary: n must match, but X has 3 rows and positions has 2 entries\.$"),
        (lambda: apply_rotary(np.ones((3, 4)), [0, 1, 2], layout="pairs"), ValueError,
         r"^apply_rotary: layout must be 'interleaved' or 'half', got 'pairs'\.$"),
        (lambda: apply_rotary(np.ones((3, 4)), [[0, 1, 2]]), ValueError,
         r"^apply_rotary: positions must be 1-D, one position per row, got shape \(1, 3\)\.$"),
        (lambda: apply_rotary(np.ones((2, 4)), [0, np.nan]), ValueError,
         r"^apply_rotary: positions must be finite"),
        (lambda: apply_rotary(np.ones((2, 4)), ["a", "b"]), TypeError,
         r"^apply_rotary: positions must be whole or real numbers, one per row, got dtype <U1"),
        (lambda: apply_rotary(np.ones((2, 4)), [0, 1], base=1), ValueError,
         r"^apply_rotary: base must be a finite number greater than 1, got 1\.$"),
        (lambda: apply_rotary(np.ones(4), [0]), ValueError,
         r"^apply_rotary: X must be 2-D or more \(one row per token\), got shape \(4,\)\.$"),
        (lambda: rotary_angles([0, 1], 5), ValueError,
         r"^rotary_angles: d must be even \(columns turn in pairs\), got 5\.$"),
        (lambda: rotary_angles([0, 1], 4.0), TypeError,
         r"^rotary_angles: d must be a positive whole number, got 4\.0\.$"),
        (lambda: rotary_angles(3, 4), ValueError,
         r"^rotary_angles: positions must be 1-D, one position per row, got shape \(\)\.$"),
        (lambda: rotary_angles([0, 1], 4, base="big"), TypeError,
         r"^rotary_angles: base must be a real number, got 'big'\.$"),
    ],
)  # fmt: skip
def test_errors_name_the_function_the_symbol_and_the_sizes(call, error, message):
    with pytest.raises(error, match=message):
        call()


def test_the_long_context_figure_carries_alt_text_that_names_its_line_styles():
    import json
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "notebooks" / "15_rotary_in_practice.ipynb"
    images = [
        out
        for cell in json.loads(path.read_text(encoding="utf-8"))["cells"]
        for out in cell.get("outputs", [])
        if "image/png" in out.get("data", {})
    ]
    assert len(images) == 1  # one figure: past the longest trained position
    alt = images[0]["metadata"]["image/png"]["alt"]
    assert all(word in alt for word in ("solid", "dashed", "dotted", "crosses")), alt
