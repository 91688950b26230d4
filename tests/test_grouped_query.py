"""Grouped-query attention (multi_head_attention with n_kv_heads): equal to multi-head
attention with each key-value head repeated for its group, and to a loop over heads; errors
named with both head counts; float32 kept."""

import numpy as np
import pytest

from attnlib import multi_head_attention
from tests.reference import attention_loop

N_Q, N_K, D_MODEL, D_KV, N_HEADS, D_K, D_V, D_OUT = 3, 5, 6, 7, 6, 2, 3, 4


def weights_for(rng, n_kv):
    return dict(
        W_Q=rng.normal(size=(D_MODEL, N_HEADS * D_K)),
        W_K=rng.normal(size=(D_KV, n_kv * D_K)),
        W_V=rng.normal(size=(D_KV, n_kv * D_V)),
        W_O=rng.normal(size=(N_HEADS * D_V, D_OUT)),
    )


def repeat_heads(W, n_kv, group):
    """W's column blocks (one per key-value head), each repeated for its group of query heads."""
    blocks = np.split(W, n_kv, axis=1)  # n_kv blocks of (rows, width)
    return np.concatenate([b for b in blocks for _ in range(group)], axis=1)


@pytest.mark.parametrize("n_kv", [1, 2, 3, 6])
@pytest.mark.parametrize("batch", [(), (2,)])
@pytest.mark.parametrize("masked", [False, True])
def test_equals_multi_head_attention_with_repeated_key_value_heads(n_kv, batch, masked):
    rng = np.random.default_rng(n_kv + 10 * len(batch))
    X_q, X_kv = rng.normal(size=(*batch, N_Q, D_MODEL)), rng.normal(size=(*batch, N_K, D_KV))
    W = weights_for(rng, n_kv)
    mask = np.tril(np.ones((N_Q, N_K), dtype=bool), k=N_K - N_Q) if masked else None
    out, weights = multi_head_attention(X_q, X_kv, **W, n_heads=N_HEADS, mask=mask, n_kv_heads=n_kv)
    group = N_HEADS // n_kv
    W_K_rep, W_V_rep = repeat_heads(W["W_K"], n_kv, group), repeat_heads(W["W_V"], n_kv, group)
    out_mha, weights_mha = multi_head_attention(
        X_q, X_kv, W["W_Q"], W_K_rep, W_V_rep, W["W_O"], N_HEADS, mask=mask
    )
    assert out.shape == (*batch, N_Q, D_OUT) and weights.shape == (*batch, N_HEADS, N_Q, N_K)
    np.testing.assert_allclose(out, out_mha, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights, weights_mha, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n_kv", [1, 2, 3])
def test_matches_a_loop_over_query_heads(n_kv):
    rng = np.random.default_rng(7 * n_kv)
    X_q, X_kv = rng.normal(size=(N_Q, D_MODEL)), rng.normal(size=(N_K, D_KV))
    W = weights_for(rng, n_kv)
    out, weights = multi_head_attention(X_q, X_kv, **W, n_heads=N_HEADS, n_kv_heads=n_kv)
    group, heads = N_HEADS // n_kv, []
    for h in range(N_HEADS):
        g = h // group  # the key-value head query head h reads
        Q_h = X_q @ W["W_Q"][:, h * D_K : (h + 1) * D_K]
        K_g = X_kv @ W["W_K"][:, g * D_K : (g + 1) * D_K]
        V_g = X_kv @ W["W_V"][:, g * D_V : (g + 1) * D_V]
        head, A = attention_loop(Q_h.tolist(), K_g.tolist(), V_g.tolist())
        np.testing.assert_allclose(weights[h], A, rtol=1e-12)
        heads.append(np.array(head))
    np.testing.assert_allclose(out, np.concatenate(heads, axis=1) @ W["W_O"], rtol=1e-12)


def test_heads_of_one_group_differ_only_through_their_queries():
    # multi-query attention with identical query columns gives identical heads
    rng = np.random.default_rng(5)
    W = weights_for(rng, 1)
    W["W_Q"] = np.tile(rng.normal(size=(D_MODEL, D_K)), N_HEADS)  # every head the same query
    _, weights = multi_head_attention(
        rng.normal(size=(N_Q, D_MODEL)), rng.normal(size=(N_K, D_KV)), **W, n_heads=N_HEADS,
        n_kv_heads=1,
    )  # fmt: skip
    for h in range(1, N_HEADS):
        np.testing.assert_array_equal(weights[h], weights[0])


def test_float32_is_kept():
    rng = np.random.default_rng(2)
    W = {k: v.astype(np.float32) for k, v in weights_for(rng, 2).items()}
    X = rng.normal(size=(N_Q, D_MODEL)).astype(np.float32)
    X_kv = rng.normal(size=(N_K, D_KV)).astype(np.float32)
    out, weights = multi_head_attention(X, X_kv, **W, n_heads=N_HEADS, n_kv_heads=2)
    assert out.dtype == weights.dtype == np.float32


@pytest.mark.parametrize(
    "n_kv, changes, error, match",
    [
        (
            4,
            {},
            ValueError,
            r"multi_head_attention: n_heads = 6 query heads do not split into n_kv_heads = 4 equal groups; n_heads must be a multiple of n_kv_heads\.",
        ),
        (
            0,
            {},
            ValueError,
            r"multi_head_attention: n_kv_heads must be a positive whole number, got 0\.",
        ),
        (
            2.0,
            {},
            TypeError,
            r"multi_head_attention: n_kv_heads must be a positive whole number, got 2\.0\.",
        ),
        (
            2,
            {"W_K": np.ones((D_KV, 6 * D_K))},
            ValueError,
            r"multi_head_attention: W_K must have n_kv_heads \* d_k = 2 \* 2 = 4 columns \(d_k = 2 from W_Q's 12 columns over 6 heads\), but it has 12\.",
        ),
        (
            2,
            {"W_V": np.ones((D_KV, 5))},
            ValueError,
            r"multi_head_attention: W_V has 5 columns, which do not split evenly into 2 heads\.",
        ),
        (
            2,
            {"W_O": np.ones((2 * D_V, D_OUT))},
            ValueError,
            r"multi_head_attention: W_O has 6 rows but the merged heads have 18 columns \(n_heads \* d_v, 6 \* 3\)",
        ),
    ],
)
def test_errors_name_both_head_counts_and_the_sizes(n_kv, changes, error, match):
    rng = np.random.default_rng(0)
    W = {**weights_for(rng, 2), **changes}
    with pytest.raises(error, match=match):
        multi_head_attention(
            np.ones((N_Q, D_MODEL)), np.ones((N_K, D_KV)), **W, n_heads=N_HEADS, n_kv_heads=n_kv
        )
