"""self_attention_backward (lesson 16) against central finite differences.

Unequal sizes: n = 5 tokens, d_model = 3, d_k = 4, d_v = 2, so a missing transpose fails.
"""

import numpy as np
import pytest

from attnlib import attention, causal_mask, self_attention_backward
from tests.test_grad import central_difference

N, D_MODEL, D_K, D_V = 5, 3, 4, 2


@pytest.fixture
def inputs():
    rng = np.random.default_rng(7)
    X = rng.normal(size=(N, D_MODEL))
    W_Q, W_K = rng.normal(size=(D_MODEL, D_K)), rng.normal(size=(D_MODEL, D_K))
    W_V = rng.normal(size=(D_MODEL, D_V))
    dOutput, dWeights = rng.normal(size=(N, D_V)), rng.normal(size=(N, N))
    return X, W_Q, W_K, W_V, dOutput, dWeights


def loss(X, W_Q, W_K, W_V, dOutput, dWeights=None, mask=None):
    """A scalar whose gradients are dOutput (and dWeights) at the output (and weights)."""
    output, A = attention(X @ W_Q, X @ W_K, X @ W_V, mask=mask)
    return float((output * dOutput).sum() + (0 if dWeights is None else (A * dWeights).sum()))


@pytest.mark.parametrize("with_weights", [False, True])
@pytest.mark.parametrize("masked", [False, True])
def test_every_gradient_matches_finite_differences_to_1e_6(inputs, with_weights, masked):
    X, W_Q, W_K, W_V, dOutput, dWeights = inputs
    dWeights = dWeights if with_weights else None
    mask = causal_mask(N, N) if masked else None
    grads = self_attention_backward(X, W_Q, W_K, W_V, dOutput, mask=mask, dWeights=dWeights)
    args = [X, W_Q, W_K, W_V]
    for k, (name, got) in enumerate(zip(["dX", "dW_Q", "dW_K", "dW_V"], grads, strict=True)):
        assert got.shape == args[k].shape, name

        def f(Z, k=k):
            changed = list(args)
            changed[k] = Z
            return loss(*changed, dOutput, dWeights, mask)

        np.testing.assert_allclose(got, central_difference(f, args[k]), atol=1e-6, err_msg=name)


def test_dX_is_the_sum_of_the_three_paths(inputs):
    X, W_Q, W_K, W_V, dOutput, _ = inputs
    dX, dW_Q, dW_K, dW_V = self_attention_backward(X, W_Q, W_K, W_V, dOutput)
    # each path alone: the same X everywhere but the one projection being differentiated
    paths = [
        central_difference(lambda Z: loss_paths(Z, X, X, W_Q, W_K, W_V, dOutput), X),
        central_difference(lambda Z: loss_paths(X, Z, X, W_Q, W_K, W_V, dOutput), X),
        central_difference(lambda Z: loss_paths(X, X, Z, W_Q, W_K, W_V, dOutput), X),
    ]
    assert all(np.abs(p).max() > 1e-3 for p in paths)  # every path carries gradient
    np.testing.assert_allclose(dX, sum(paths), atol=1e-6)


def loss_paths(X_q, X_k, X_v, W_Q, W_K, W_V, dOutput):
    return float((attention(X_q @ W_Q, X_k @ W_K, X_v @ W_V)[0] * dOutput).sum())


def test_batched_weight_gradients_are_summed_over_the_batch(inputs):
    X, W_Q, W_K, W_V, dOutput, _ = inputs
    X2, dOutput2 = X[::-1] * 0.5, dOutput * 2.0
    batched = self_attention_backward(
        np.stack([X, X2]), W_Q, W_K, W_V, np.stack([dOutput, dOutput2])
    )
    one = self_attention_backward(X, W_Q, W_K, W_V, dOutput)
    two = self_attention_backward(X2, W_Q, W_K, W_V, dOutput2)
    np.testing.assert_allclose(batched[0], np.stack([one[0], two[0]]))
    for got, a, b in zip(batched[1:], one[1:], two[1:], strict=True):
        np.testing.assert_allclose(got, a + b)


def test_float32_stays_float32(inputs):
    arrays = [A.astype(np.float32) for A in inputs[:5]]
    assert {g.dtype for g in self_attention_backward(*arrays)} == {np.dtype(np.float32)}


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"W_Q": np.ones((2, D_K))}, ValueError, r"X has 3 columns but W_Q has 2 rows"),
        ({"W_K": np.ones((D_MODEL, 3))}, ValueError, r"d_k must match, but W_Q has 4 and W_K"),
        ({"W_V": np.ones(D_MODEL)}, ValueError, r"W_V must be 2-D, got shape \(3,\)"),
        ({"dOutput": np.ones((N, 3))}, ValueError, r"dOutput must have the output's shape"),
        ({"dWeights": np.ones((N, 4))}, ValueError, r"dWeights must have the weights' shape"),
        ({"X": None}, TypeError, r"X must be an array"),
        ({"mask": np.ones((N, N))}, TypeError, r"mask must be boolean"),
    ],
)
def test_errors_name_the_function_the_symbol_and_the_sizes(inputs, change, error, match):
    X, W_Q, W_K, W_V, dOutput, _ = inputs
    kwargs = dict(X=X, W_Q=W_Q, W_K=W_K, W_V=W_V, dOutput=dOutput) | change
    with pytest.raises(error, match=f"^self_attention_backward: .*{match}"):
        self_attention_backward(**kwargs)
