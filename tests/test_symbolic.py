"""The sympy steps agree with numpy, exactly where they should."""

import numpy as np
import pytest
import sympy as sp

import attnlib
from attnlib import example, symbolic


def test_worked_example_steps_agree_with_numpy():
    ex = symbolic.worked_example()
    output, weights = attnlib.attention(
        example.X @ example.W_Q, example.X @ example.W_K, example.X @ example.W_V
    )
    pairs = [
        (ex.Q, attnlib.project(example.X, example.W_Q)),
        (ex.K, attnlib.project(example.X, example.W_K)),
        (ex.V, attnlib.project(example.X, example.W_V)),
        (ex.S, attnlib.qk_scores(example.X @ example.W_Q, example.X @ example.W_K)),
        (ex.A, weights),
        (ex.output, output),
    ]
    for exact, numeric in pairs:
        np.testing.assert_allclose(symbolic.to_numpy(exact), numeric, rtol=1e-14)


def test_scaled_scores_are_exact_multiples_of_root_two():
    ex = symbolic.worked_example()
    assert ex.S_scaled[0, 1] == 9 / sp.sqrt(2)
    assert sp.simplify(ex.S_scaled[0, 1] - sp.Rational(9, 2) * sp.sqrt(2)) == 0
    assert example.compare("scaled_scores", symbolic.to_numpy(ex.S_scaled)).ok


def test_symbolic_entry_of_q_is_a_sum_over_d_model():
    X, W = symbolic.matrix("x", 3, 4), symbolic.matrix("w", 4, 2)
    Q = symbolic.project(X, W)
    x = [sp.Symbol(f"x_1{t}", real=True) for t in range(1, 5)]
    w = [sp.Symbol(f"w_{t}1", real=True) for t in range(1, 5)]
    assert sp.expand(Q[0, 0] - sum(a * b for a, b in zip(x, w, strict=True))) == 0


def test_scale_keeps_d_k_symbolic_until_asked():
    S = sp.Matrix([[9]])
    assert symbolic.scale_scores(S)[0, 0] == 9 / sp.sqrt(symbolic.d_k)
    assert symbolic.scale_scores(S).subs(symbolic.d_k, 2)[0, 0] == 9 / sp.sqrt(2)


def test_symbolic_softmax_rows_sum_to_one_exactly():
    A = symbolic.softmax(symbolic.worked_example().S_scaled)
    for i in range(3):
        assert sp.simplify(sum(A.row(i)) - 1) == 0


def test_symbolic_attention_matches_numpy_on_unequal_shapes():
    rng = np.random.default_rng(1)
    Q, K, V = (rng.integers(-3, 4, size=s) for s in [(3, 4), (5, 4), (5, 2)])
    exact = symbolic.attention(sp.Matrix(Q), sp.Matrix(K), sp.Matrix(V))
    np.testing.assert_allclose(symbolic.to_numpy(exact), attnlib.attention(Q, K, V)[0], rtol=1e-12)


def test_matrix_counts_from_zero_or_one_only():
    assert str(symbolic.matrix("q", 2, 3, start=0)[1, 2]) == "q_12"
    assert str(symbolic.matrix("q", 2, 3)[1, 2]) == "q_23"
    with pytest.raises(ValueError, match=r"matrix: start must be 0 or 1, got 2\."):
        symbolic.matrix("q", 2, 2, start=2)
