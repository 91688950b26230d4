"""self_attention_backward and multi_head_attention_backward (lesson 21) against central
finite differences.

Unequal sizes: n = 5 tokens, d_model = 3, d_k = 4, d_v = 2, so a missing transpose fails.
"""

import numpy as np
import pytest

from attnlib import (
    attention,
    causal_mask,
    multi_head_attention,
    multi_head_attention_backward,
    self_attention_backward,
)
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


# ---- multi_head_attention_backward: cross-attention of unequal sizes -------------------------
# n_q = 3, n_k = 5, d_model = 4, d_model_kv = 6, 2 heads of d_k = 2 and d_v = 3, d_out = 5
SHAPES = {
    "X_q": (3, 4),
    "X_kv": (5, 6),
    "W_Q": (4, 4),
    "W_K": (6, 4),
    "W_V": (6, 6),
    "W_O": (6, 5),
}


@pytest.fixture
def layer():
    rng = np.random.default_rng(8)
    arrays = {name: rng.normal(size=shape) for name, shape in SHAPES.items()}
    return arrays, rng.normal(size=(3, 5))


def mh_loss(arrays, dOutput, mask=None):
    output, _ = multi_head_attention(**arrays, n_heads=2, mask=mask)
    return float((output * dOutput).sum())


@pytest.mark.parametrize("masked", [False, True])
def test_multi_head_gradients_match_finite_differences_to_1e_6(layer, masked):
    arrays, dOutput = layer
    mask = (
        np.array([[1, 1, 0, 1, 0], [0, 1, 1, 1, 1], [1, 0, 0, 0, 1]], dtype=bool)
        if masked
        else None
    )
    grads = multi_head_attention_backward(**arrays, n_heads=2, dOutput=dOutput, mask=mask)
    for (name, value), got in zip(arrays.items(), grads, strict=True):
        assert got.shape == value.shape, name

        def f(Z, name=name):
            return mh_loss(arrays | {name: Z}, dOutput, mask)

        np.testing.assert_allclose(got, central_difference(f, value), atol=1e-6, err_msg=name)


def test_multi_head_self_attention_gradient_of_X_adds_both_inputs(layer):
    arrays, dOutput = layer
    X = arrays["X_kv"][:3]  # (3, 6): self-attention, d_model = 6
    weights = {"W_Q": arrays["W_V"][:, :4], "W_K": arrays["W_K"], "W_V": arrays["W_V"]}
    dX_q, dX_kv, *_ = multi_head_attention_backward(
        X, X, **weights, W_O=arrays["W_O"], n_heads=2, dOutput=dOutput
    )

    def f(Z):
        return mh_loss({"X_q": Z, "X_kv": Z, **weights, "W_O": arrays["W_O"]}, dOutput)

    np.testing.assert_allclose(dX_q + dX_kv, central_difference(f, X), atol=1e-6)


def test_multi_head_batch_sums_weight_gradients_and_keeps_float32(layer):
    arrays, dOutput = layer
    X_q2 = np.stack([arrays["X_q"], -arrays["X_q"]])  # a batch of 2 query sets, shared X_kv
    batched = multi_head_attention_backward(
        **(arrays | {"X_q": X_q2}), n_heads=2, dOutput=np.stack([dOutput, dOutput])
    )
    one = multi_head_attention_backward(**arrays, n_heads=2, dOutput=dOutput)
    two = multi_head_attention_backward(
        **(arrays | {"X_q": -arrays["X_q"]}), n_heads=2, dOutput=dOutput
    )
    np.testing.assert_allclose(batched[0], np.stack([one[0], two[0]]), atol=1e-12)
    for got, a, b in zip(batched[1:], one[1:], two[1:], strict=True):
        np.testing.assert_allclose(got, a + b, atol=1e-12)  # X_kv and the weights are shared
    as32 = {k: v.astype(np.float32) for k, v in arrays.items()}
    grads32 = multi_head_attention_backward(**as32, n_heads=2, dOutput=dOutput.astype(np.float32))
    assert {g.dtype for g in grads32} == {np.dtype(np.float32)}


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"W_O": np.ones((5, 5))}, ValueError, r"W_O has 5 rows but the merged heads have 6"),
        ({"W_K": np.ones((4, 4))}, ValueError, r"X_kv has 6 columns but W_K has 4 rows"),
        ({"n_heads": 3}, ValueError, r"W_Q has 4 columns, which do not split evenly"),
        ({"dOutput": np.ones((3, 4))}, ValueError, r"dOutput must have the output's shape"),
        ({"mask": np.ones((3, 5))}, TypeError, r"mask must be boolean"),
    ],
)
def test_multi_head_errors_name_the_backward_function(layer, change, error, match):
    arrays, dOutput = layer
    kwargs = arrays | {"n_heads": 2, "dOutput": dOutput} | change
    with pytest.raises(error, match=f"^multi_head_attention_backward: .*{match}"):
        multi_head_attention_backward(**kwargs)
