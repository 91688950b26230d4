"""sinusoidal_positions: the formula entry by entry, the shift as a rotation, named errors."""

import math

import numpy as np
import pytest

from attnlib import attention, sinusoidal_positions


def slow_positions(n, d_model, base=10000):
    """The formula written out one entry at a time, as lesson 13's first rung."""
    PE = np.zeros((n, d_model))
    for p in range(n):
        for i in range(d_model // 2):
            w = base ** (-2 * i / d_model)
            PE[p, 2 * i] = math.sin(p * w)
            PE[p, 2 * i + 1] = math.cos(p * w)
    return PE


@pytest.mark.parametrize("n, d_model, base", [(5, 4, 10000), (3, 6, 10000), (7, 2, 50.0)])
def test_matches_the_formula_entry_by_entry(n, d_model, base):
    PE = sinusoidal_positions(n, d_model, base=base)
    assert PE.shape == (n, d_model) and PE.dtype == np.float64
    np.testing.assert_allclose(PE, slow_positions(n, d_model, base), rtol=0, atol=1e-15)


def test_each_pair_lies_on_the_unit_circle_and_positions_differ():
    PE = sinusoidal_positions(9, 6)
    pairs = PE.reshape(9, 3, 2)  # (n, d_model / 2, 2): (sin, cos) per frequency
    np.testing.assert_allclose((pairs**2).sum(axis=-1), 1.0)
    distances = np.linalg.norm(PE[:, None] - PE[None, :], axis=-1)  # (n, n)
    assert (distances + np.eye(9) > 1e-3).all()  # no two positions share an encoding


def shift_map(k, d_model, base=10000):
    """The block-diagonal map M(k) with PE[p + k] = M(k) @ PE[p] (lesson 13 derives it)."""
    M = np.zeros((d_model, d_model))
    for i in range(d_model // 2):
        a = k * base ** (-2 * i / d_model)
        M[2 * i : 2 * i + 2, 2 * i : 2 * i + 2] = [[math.cos(a), math.sin(a)],
                                                   [-math.sin(a), math.cos(a)]]  # fmt: skip
    return M


@pytest.mark.parametrize("k", [1, 3, 7])
def test_a_shift_by_k_is_one_fixed_linear_map_for_every_position(k):
    d_model = 6
    PE = sinusoidal_positions(12, d_model)
    M = shift_map(k, d_model)
    np.testing.assert_allclose(PE[:-k] @ M.T, PE[k:], atol=1e-12)  # every p at once


def test_positions_break_the_tie_between_two_word_orders():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(3, 4))  # (n, d_model)
    W_Q, W_K, W_V = (rng.normal(size=(4, s)) for s in (4, 4, 2))  # d_k = 4, d_v = 2
    order = [2, 1, 0]

    def outputs(X):
        return attention(X @ W_Q, X @ W_K, X @ W_V)[0]

    np.testing.assert_allclose(outputs(X[order]), outputs(X)[order])  # equivariant
    PE = sinusoidal_positions(3, 4)
    with_positions = outputs(X[order] + PE)
    assert not np.allclose(with_positions, outputs(X + PE)[order])


@pytest.mark.parametrize(
    "args, error, message",
    [
        (
            (3, 5),
            ValueError,
            r"^sinusoidal_positions: d_model must be even \(sin and cos pairs\), got 5\.$",
        ),
        ((0, 4), ValueError, r"^sinusoidal_positions: n must be a positive whole number, got 0\.$"),
        (
            (3.0, 4),
            TypeError,
            r"^sinusoidal_positions: n must be a positive whole number, got 3\.0\.$",
        ),
        (
            (3, "4"),
            TypeError,
            r"^sinusoidal_positions: d_model must be a positive whole number, got '4'\.$",
        ),
        (
            (3, 4, 1),
            ValueError,
            r"^sinusoidal_positions: base must be a finite number greater than 1, got 1\.$",
        ),
        ((3, 4, np.inf), ValueError, r"base must be a finite number greater than 1, got inf\.$"),
        (
            (3, 4, "10000"),
            TypeError,
            r"^sinusoidal_positions: base must be a real number, got '10000'\.$",
        ),
        ((3, 4, True), TypeError, r"base must be a real number, got True\.$"),
    ],
)
def test_bad_input_gets_a_named_error(args, error, message):
    with pytest.raises(error, match=message):
        sinusoidal_positions(*args)
