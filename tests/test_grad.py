"""softmax_jacobian and attention_backward against central finite differences.

Sizes are unequal (n_q = 3, n_k = 5, d_k = 4, d_v = 2). PyTorch autograd is a second
reference only where torch is installed; the course never requires it.
"""

import numpy as np
import pytest

from attnlib import attention, attention_backward, softmax, softmax_jacobian

N_Q, N_K, D_K, D_V = 3, 5, 4, 2


def central_difference(f, X, h=1e-6):
    """d f / d X for a scalar function f, one entry at a time: (f(X+h) - f(X-h)) / 2h."""
    grad = np.zeros_like(X)
    for index in np.ndindex(X.shape):
        up, down = X.copy(), X.copy()
        up[index] += h
        down[index] -= h
        grad[index] = (f(up) - f(down)) / (2 * h)
    return grad


def relative_error(got, want):
    return np.abs(got - want).max() / np.abs(want).max()


@pytest.fixture
def qkv():
    rng = np.random.default_rng(0)
    Q = rng.normal(size=(N_Q, D_K))
    K = rng.normal(size=(N_K, D_K))
    V = rng.normal(size=(N_K, D_V))
    dOutput = rng.normal(size=(N_Q, D_V))
    return Q, K, V, dOutput


def test_softmax_jacobian_matches_finite_differences():
    x = np.array([0.3, -1.2, 2.0, 0.5, 0.0])
    p = softmax(x)
    J = softmax_jacobian(p)
    for j in range(len(x)):
        column = central_difference(lambda x_, j=j: softmax(x_)[j], x)
        np.testing.assert_allclose(J[j], column, rtol=1e-6, atol=1e-12)


def test_softmax_jacobian_is_not_the_diagonal_alone():
    p = softmax(np.array([1.0, 2.0, 3.0]))
    J = softmax_jacobian(p)
    np.testing.assert_allclose(J.sum(axis=1), 0.0, atol=1e-15)  # diag(p) alone sums to p
    np.testing.assert_allclose(J, J.T)
    assert np.linalg.eigvalsh(J).min() > -1e-15


def test_softmax_jacobian_batched():
    P = softmax(np.random.default_rng(1).normal(size=(2, N_Q, N_K)))
    J = softmax_jacobian(P)
    assert J.shape == (2, N_Q, N_K, N_K)
    np.testing.assert_allclose(J[1, 2], np.diag(P[1, 2]) - np.outer(P[1, 2], P[1, 2]))


@pytest.mark.parametrize(
    "p, error, match",
    [
        ([3.0, 9.0, 6.0], ValueError, r"softmax_jacobian: p must be softmax weights.*sums to 18"),
        ([1.5, -0.5], ValueError, r"softmax_jacobian: .*smallest entry -0\.5"),
        ([[0.5, 0.5], [0.2, 0.2]], ValueError, r"softmax_jacobian: .*row \[1\] of p sums to 0\.4"),
        ([], ValueError, r"softmax_jacobian: p is empty"),
        ("abc", TypeError, r"softmax_jacobian: p must hold real numbers"),
    ],
)
def test_softmax_jacobian_errors(p, error, match):
    with pytest.raises(error, match=match):
        softmax_jacobian(p)


@pytest.mark.parametrize("masked", [False, True])
def test_attention_backward_matches_finite_differences(qkv, masked):
    Q, K, V, dOutput = qkv
    mask = np.tril(np.ones((N_Q, N_K), dtype=bool), k=1) if masked else None

    def loss(Q, K, V):
        return float((attention(Q, K, V, mask=mask)[0] * dOutput).sum())

    dQ, dK, dV = attention_backward(Q, K, V, dOutput, mask=mask)
    assert (dQ.shape, dK.shape, dV.shape) == (Q.shape, K.shape, V.shape)
    assert relative_error(dQ, central_difference(lambda Q_: loss(Q_, K, V), Q)) < 1e-6
    assert relative_error(dK, central_difference(lambda K_: loss(Q, K_, V), K)) < 1e-6
    assert relative_error(dV, central_difference(lambda V_: loss(Q, K, V_), V)) < 1e-6
    if masked:
        assert (dK[N_Q + 1 :] == 0).all()  # keys no query may see get no gradient


def test_attention_backward_batched_matches_each_item():
    rng = np.random.default_rng(2)
    Q, K = rng.normal(size=(2, N_Q, D_K)), rng.normal(size=(2, N_K, D_K))
    V, dOutput = rng.normal(size=(2, N_K, D_V)), rng.normal(size=(2, N_Q, D_V))
    grads = attention_backward(Q, K, V, dOutput)
    for b in range(2):
        for got, want in zip(grads, attention_backward(Q[b], K[b], V[b], dOutput[b]), strict=True):
            np.testing.assert_allclose(got[b], want, rtol=1e-12)


def test_attention_backward_with_torch_autograd(qkv):
    torch = pytest.importorskip(
        "torch",
        reason="torch is not installed: the autograd comparison is optional "
        "(finite differences above are the course's reference)",
    )
    Q, K, V, dOutput = qkv
    tQ, tK, tV = (torch.tensor(M, dtype=torch.float64, requires_grad=True) for M in (Q, K, V))
    out = torch.softmax(tQ @ tK.T / np.sqrt(D_K), dim=-1) @ tV
    out.backward(torch.tensor(dOutput, dtype=torch.float64))
    for got, t in zip(attention_backward(Q, K, V, dOutput), (tQ, tK, tV), strict=True):
        np.testing.assert_allclose(got, t.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize(
    "change, error, match",
    [
        (
            dict(dOutput=np.ones((N_Q, D_K))),
            ValueError,
            r"attention_backward: dOutput must have the output's shape "
            r"\(\.\.\., n_q, d_v\) = \(3, 2\), got \(3, 4\)",
        ),
        (
            dict(dOutput=np.ones((N_K, D_V))),
            ValueError,
            r"attention_backward: dOutput .* got \(5, 2\)",
        ),
        (dict(dOutput=None), TypeError, r"attention_backward: dOutput must be an array"),
        (
            dict(Q=np.ones((N_Q, 3))),
            ValueError,
            r"^attention_backward: d_k must match, but Q has 3 and K has 4",
        ),
        (
            dict(V=np.ones((4, D_V))),
            ValueError,
            r"^attention_backward: n_k must match, but K has 5 rows and V has 4",
        ),
        (
            dict(dOutput=np.ones((3, N_Q, D_V))),
            ValueError,
            r"attention_backward: dOutput .* = \(3, 2\), got \(3, 3, 2\)",
        ),
    ],
)
def test_attention_backward_errors(qkv, change, error, match):
    Q, K, V, dOutput = qkv
    args = dict(Q=Q, K=K, V=V, dOutput=dOutput)
    args.update(change)
    with pytest.raises(error, match=match):
        attention_backward(**args)


def test_gradients_of_shared_keys_and_values_are_summed_over_the_batch():
    # one K and V for a batch of two query sequences: the same loss as the two items apart
    rng = np.random.default_rng(3)
    Q, dOutput = rng.normal(size=(2, N_Q, D_K)), rng.normal(size=(2, N_Q, D_V))
    K, V = rng.normal(size=(N_K, D_K)), rng.normal(size=(N_K, D_V))
    dQ, dK, dV = attention_backward(Q, K, V, dOutput)
    assert (dQ.shape, dK.shape, dV.shape) == (Q.shape, K.shape, V.shape)
    per_item = [attention_backward(Q[b], K, V, dOutput[b]) for b in range(2)]
    np.testing.assert_allclose(dQ, np.stack([g[0] for g in per_item]), rtol=1e-12)
    np.testing.assert_allclose(dK, per_item[0][1] + per_item[1][1], rtol=1e-12)
    np.testing.assert_allclose(dV, per_item[0][2] + per_item[1][2], rtol=1e-12)


# ---- the measuring helpers lessons 18 and 21 import ----------------------------------------
def test_central_difference_measures_a_known_gradient_without_touching_its_input():
    import attnlib

    X = np.array([[1.0, -2.0, 0.5], [3.0, 0.0, -1.5]])  # (2, 3)
    before = X.copy()
    measured = attnlib.central_difference(lambda X_: float((X_**3).sum()), X)
    np.testing.assert_allclose(measured, 3 * X**2, atol=1e-6)  # d/dx x^3 = 3 x^2
    np.testing.assert_array_equal(X, before)
    # the same numbers as the test's own loop, on the attention loss
    Q, K, V, G = (np.random.default_rng(3).normal(size=s) for s in [(3, 4), (5, 4), (5, 2), (3, 2)])

    def loss(Q_):
        return float((attention(Q_, K, V)[0] * G).sum())

    np.testing.assert_allclose(attnlib.central_difference(loss, Q), central_difference(loss, Q))


def test_relative_error_is_the_largest_gap_over_the_largest_entry():
    import attnlib

    assert attnlib.relative_error([2.0, 4.5], [2.0, 4.0]) == 0.125
    assert attnlib.relative_error([[1.0, -3.0]], [[1.0, -2.0]]) == 0.5


@pytest.mark.parametrize(
    "call, error, match",
    [
        (lambda a: a.central_difference(3.0, [1.0]), TypeError, "central_difference: f must"),
        (lambda a: a.central_difference(sum, [1.0], h=0), ValueError, "h must be positive"),
        (lambda a: a.relative_error([1.0, 2.0], [1.0]), ValueError, r"got has \(2,\)"),
        (lambda a: a.relative_error([1.0], [0.0]), ValueError, "want is all zeros"),
    ],
)
def test_the_measuring_helpers_name_what_is_wrong(call, error, match):
    import attnlib

    with pytest.raises(error, match=match):
        call(attnlib)
