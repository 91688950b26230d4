"""layer_norm, mlp and transformer_block (lesson 17): each against a slow loop written like
the lesson, the block against multi_head_attention, and the errors.

Unequal sizes: 5 tokens, d_model = 6, 3 heads of d_k = 2 and d_v = 4 (h * d_v = 12), d_ff = 7.
"""

import math

import numpy as np
import pytest

from attnlib import (
    causal_mask,
    init_block,
    layer_norm,
    mlp,
    multi_head_attention,
    transformer_block,
)

N, D_MODEL, N_HEADS, D_FF = 5, 6, 3, 7


def gelu_loop(z):
    return 0.5 * z * (1 + math.tanh(math.sqrt(2 / math.pi) * (z + 0.044715 * z**3)))


def layer_norm_loop(X, gamma, beta, eps):
    out = np.zeros_like(X)
    for i, row in enumerate(X):
        mean = sum(row) / len(row)
        var = sum((x - mean) ** 2 for x in row) / len(row)
        for j, x in enumerate(row):
            out[i, j] = gamma[j] * (x - mean) / math.sqrt(var + eps) + beta[j]
    return out


def mlp_loop(X, W_1, b_1, W_2, b_2):
    out = np.zeros((X.shape[0], W_2.shape[1]))
    for i, x in enumerate(X):
        hidden = [gelu_loop(x @ W_1[:, f] + b_1[f]) for f in range(W_1.shape[1])]
        out[i] = np.array(hidden) @ W_2 + b_2
    return out


@pytest.fixture
def params():
    rng = np.random.default_rng(5)
    p = {
        "W_Q": rng.normal(size=(D_MODEL, N_HEADS * 2)),
        "W_K": rng.normal(size=(D_MODEL, N_HEADS * 2)),
        "W_V": rng.normal(size=(D_MODEL, N_HEADS * 4)),
        "W_O": rng.normal(size=(N_HEADS * 4, D_MODEL)),
        "W_1": rng.normal(size=(D_MODEL, D_FF)),
        "b_1": rng.normal(size=D_FF),
        "W_2": rng.normal(size=(D_FF, D_MODEL)),
        "b_2": rng.normal(size=D_MODEL),
    }
    for k in (1, 2):
        p[f"gamma_{k}"] = rng.normal(size=D_MODEL)
        p[f"beta_{k}"] = rng.normal(size=D_MODEL)
    return p


@pytest.fixture
def X():
    return np.random.default_rng(6).normal(size=(N, D_MODEL)) * 3 + 1


def test_layer_norm_matches_the_loop_and_rows_have_mean_0_variance_1(X, params):
    g, b = params["gamma_1"], params["beta_1"]
    np.testing.assert_allclose(layer_norm(X, g, b), layer_norm_loop(X, g, b, 1e-5), rtol=1e-12)
    Z = layer_norm(X, eps=0)
    np.testing.assert_allclose(Z.mean(axis=-1), 0, atol=1e-12)
    np.testing.assert_allclose(Z.var(axis=-1), 1, rtol=1e-12)
    np.testing.assert_allclose(layer_norm(10 * X + 3, eps=0), Z, atol=1e-12)  # scale, shift


def test_mlp_matches_the_loop_and_treats_each_token_on_its_own(X, params):
    w = [params[k] for k in ("W_1", "b_1", "W_2", "b_2")]
    Y = mlp(X, *w)
    np.testing.assert_allclose(Y, mlp_loop(X, *w), rtol=1e-12)
    X_changed = X.copy()
    X_changed[3] += 1.0
    changed = np.abs(mlp(X_changed, *w) - Y).max(axis=-1) > 0
    assert changed.tolist() == [False, False, False, True, False]


def test_block_is_the_two_residual_branches(X, params):
    output, weights = transformer_block(X, n_heads=N_HEADS, **params)
    X_norm = layer_norm_loop(X, params["gamma_1"], params["beta_1"], 1e-5)
    W = [params[k] for k in ("W_Q", "W_K", "W_V", "W_O")]
    attended, want_weights = multi_head_attention(X_norm, X_norm, *W, N_HEADS)
    H = X + attended
    H_norm = layer_norm_loop(H, params["gamma_2"], params["beta_2"], 1e-5)
    want = H + mlp_loop(H_norm, *(params[k] for k in ("W_1", "b_1", "W_2", "b_2")))
    np.testing.assert_allclose(output, want, rtol=1e-10)
    np.testing.assert_allclose(weights, want_weights, rtol=1e-12)
    assert output.shape == (N, D_MODEL) and weights.shape == (N_HEADS, N, N)


def test_block_batch_mask_and_float32(X, params):
    batch = np.stack([X, X[::-1]])
    mask = causal_mask(N, N)
    output, weights = transformer_block(batch, n_heads=N_HEADS, mask=mask, **params)
    for i in range(2):
        one, w = transformer_block(batch[i], n_heads=N_HEADS, mask=mask, **params)
        np.testing.assert_allclose(output[i], one, rtol=1e-12)
        np.testing.assert_allclose(weights[i], w, rtol=1e-12)
    assert (weights[..., ~mask] == 0).all()
    p32 = {k: v.astype(np.float32) for k, v in params.items()}
    out32, w32 = transformer_block(X.astype(np.float32), n_heads=N_HEADS, **p32)
    assert out32.dtype == w32.dtype == np.float32
    assert layer_norm(X.astype(np.float32)).dtype == np.float32


def test_init_block_zero_is_the_identity_and_counts_gpt2_small():
    X = np.random.default_rng(1).normal(size=(N, D_MODEL))
    output, _ = transformer_block(X, n_heads=N_HEADS, **init_block(D_MODEL, D_FF))
    np.testing.assert_array_equal(output, X)
    counts = {k: v.size for k, v in init_block(768, 3072).items()}
    assert sum(counts.values()) == 4 * 768**2 + 2 * 768 * 3072 + 3072 + 768 + 4 * 768
    random = init_block(D_MODEL, D_FF, np.random.default_rng(0))
    assert 0.01 < random["W_1"].std() < 0.03 and (random["b_1"] == 0).all()


@pytest.mark.parametrize(
    ("change", "error", "match"),
    [
        ({"W_O": np.ones((12, 5))}, ValueError, r"W_O must have 6 columns \(d_model"),
        ({"W_O": np.ones((10, 6))}, ValueError, r"W_O must have 12 rows"),
        ({"W_Q": np.ones((5, 6))}, ValueError, r"W_Q must have 6 rows \(d_model"),
        ({"W_K": np.ones((6, 3))}, ValueError, r"W_Q and W_K must have the same number"),
        ({"W_V": np.ones((6, 10))}, ValueError, r"W_V has 10 columns, which do not split"),
        ({"W_1": np.ones((4, 7))}, ValueError, r"W_1 must have 6 rows"),
        ({"b_1": np.ones(6)}, ValueError, r"b_1 must have shape \(7,\)"),
        ({"W_2": np.ones((7, 5))}, ValueError, r"W_2 must have 6 columns"),
        ({"gamma_2": np.ones(5)}, ValueError, r"gamma_2 must have shape \(6,\)"),
        ({"n_heads": 2.0}, TypeError, r"n_heads must be a positive whole number"),
        ({"eps": -1.0}, ValueError, r"eps must be 0 or more"),
        ({"mask": np.ones((N, N))}, TypeError, r"mask must be boolean"),
    ],
)
def test_block_errors_name_the_function_symbol_and_sizes(X, params, change, error, match):
    kwargs = params | {"n_heads": N_HEADS} | change
    with pytest.raises(error, match=f"^transformer_block: .*{match}"):
        transformer_block(X, **kwargs)


def test_layer_norm_and_mlp_errors(X, params):
    with pytest.raises(ValueError, match=r"^layer_norm: gamma must have shape \(6,\)"):
        layer_norm(X, gamma=np.ones(4))
    with pytest.raises(ValueError, match=r"^layer_norm: row \[1\] of X has variance 0"):
        layer_norm([[1, 2], [3, 3]], eps=0)
    with pytest.raises(TypeError, match=r"^layer_norm: eps must be a number"):
        layer_norm(X, eps="small")
    with pytest.raises(ValueError, match=r"^mlp: W_1 must have 6 rows"):
        mlp(X, np.ones((3, 7)), params["b_1"], params["W_2"], params["b_2"])
    with pytest.raises(ValueError, match=r"^mlp: b_2 must have shape \(6,\)"):
        mlp(X, params["W_1"], params["b_1"], params["W_2"], np.ones(7))
