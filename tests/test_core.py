import numpy as np
import pytest

import attnlib
from attnlib import example
from tests.reference import attention_loop

SHAPES = [(3, 5, 4, 2), (1, 1, 1, 1), (7, 2, 3, 6), (4, 9, 8, 5)]  # (n_q, n_k, d_k, d_v)


def random_qkv(rng, n_q, n_k, d_k, d_v, batch=()):
    Q = rng.normal(size=batch + (n_q, d_k))
    K = rng.normal(size=batch + (n_k, d_k))
    V = rng.normal(size=batch + (n_k, d_v))
    return Q, K, V


@pytest.mark.parametrize("n_q, n_k, d_k, d_v", SHAPES)
def test_attention_matches_loop_reference(n_q, n_k, d_k, d_v):
    rng = np.random.default_rng(n_q * 100 + n_k)
    Q, K, V = random_qkv(rng, n_q, n_k, d_k, d_v)
    output, weights = attnlib.attention(Q, K, V)
    ref_output, ref_weights = attention_loop(Q.tolist(), K.tolist(), V.tolist())
    assert output.shape == (n_q, d_v) and weights.shape == (n_q, n_k)
    np.testing.assert_allclose(output, ref_output, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights, ref_weights, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("n_q, n_k, d_k, d_v", SHAPES)
def test_masked_attention_matches_loop_reference(n_q, n_k, d_k, d_v):
    rng = np.random.default_rng(7 + n_q)
    Q, K, V = random_qkv(rng, n_q, n_k, d_k, d_v)
    mask = rng.random((n_q, n_k)) < 0.6
    mask[:, 0] = True  # every query may attend to at least one key
    output, weights = attnlib.attention(Q, K, V, mask=mask)
    ref_output, ref_weights = attention_loop(Q.tolist(), K.tolist(), V.tolist(), mask.tolist())
    np.testing.assert_allclose(output, ref_output, rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(weights, ref_weights, rtol=1e-12, atol=1e-12)
    assert np.all(weights[~mask] == 0.0)


def test_batch_and_head_axes_broadcast_against_the_loop():
    rng = np.random.default_rng(3)
    Q, K, V = random_qkv(rng, 3, 5, 4, 2, batch=(2, 3))  # (batch, heads, n, d)
    mask = np.tril(np.ones((3, 5), dtype=bool))  # (n_q, n_k), shared by every head
    output, weights = attnlib.attention(Q, K, V, mask=mask)
    assert output.shape == (2, 3, 3, 2) and weights.shape == (2, 3, 3, 5)
    for b in range(2):
        for h in range(3):
            ref_output, ref_weights = attention_loop(
                Q[b, h].tolist(), K[b, h].tolist(), V[b, h].tolist(), mask.tolist()
            )
            np.testing.assert_allclose(output[b, h], ref_output, rtol=1e-12, atol=1e-12)
            np.testing.assert_allclose(weights[b, h], ref_weights, rtol=1e-12, atol=1e-12)


def test_keys_shared_across_a_batch_of_queries():
    rng = np.random.default_rng(4)
    Q = rng.normal(size=(2, 3, 4))  # two sequences of queries
    K, V = rng.normal(size=(5, 4)), rng.normal(size=(5, 2))  # one set of keys and values
    output, _ = attnlib.attention(Q, K, V)
    for b in range(2):
        np.testing.assert_allclose(output[b], attnlib.attention(Q[b], K, V)[0], rtol=1e-12)


def test_worked_example_reproduces_every_table_of_the_document():
    Q = attnlib.project(example.X, example.W_Q)
    K = attnlib.project(example.X, example.W_K)
    V = attnlib.project(example.X, example.W_V)
    S = attnlib.qk_scores(Q, K)
    output, weights = attnlib.attention(Q, K, V)
    computed = {
        "X": example.X,
        "Q": Q,
        "K": K,
        "V": V,
        "scores": S,
        "sqrt_d_k": np.sqrt(example.d_k),
        "scaled_scores": attnlib.scale_scores(S, example.d_k),
        "softmax_row1_unscaled": attnlib.softmax(S[0]),
        "softmax_row1_scaled": weights[0],
        "output": output,
    }
    assert set(computed) == set(example.DOCUMENT)
    for name, value in computed.items():
        assert example.compare(name, value).ok, (name, example.compare(name, value))


def test_compare_names_the_first_entry_that_differs():
    wrong = attnlib.qk_scores(example.X @ example.W_K, example.X @ example.W_Q)  # K Q^T
    result = example.compare("scores", wrong)
    assert not result.ok
    assert str(result) == (
        "differs from the document: 5 of 9 values match; [0, 1] is 6, the document prints 9"
    )


def test_lists_ints_and_bools_are_computed_in_float64():
    out = attnlib.qk_scores([[1, 4]], [[3, 0], [1, 2]])
    assert out.dtype == np.float64
    np.testing.assert_array_equal(out, [[3.0, 9.0]])
    assert attnlib.softmax(np.array([1, 2], dtype=np.int32)).dtype == np.float64
    flags = np.array([[True, False]])  # bools are the numbers 1 and 0
    np.testing.assert_array_equal(attnlib.qk_scores(flags, [[3, 0], [1, 2]]), [[3.0, 1.0]])


LAYOUTS = ("interleaved", "half")  # apply_rotary's pairings of columns


def every_function(dtype):
    """Each public numeric function, called on inputs of one dtype: name -> results."""
    rng = np.random.default_rng(0)
    Q, K, V = (M.astype(dtype) for M in random_qkv(rng, 3, 5, 4, 2))
    X = rng.normal(size=(3, 4)).astype(dtype)
    W = np.eye(4, dtype=dtype)
    mask = np.tril(np.ones((3, 5), dtype=bool))
    S = attnlib.qk_scores(Q, K)
    return {
        "project": [attnlib.project(X, W)],
        "qk_scores": [S],
        "scale_scores": [attnlib.scale_scores(S, 4)],
        "softmax": [attnlib.softmax(S), attnlib.softmax(S, axis=0)],
        "attention_weights": [attnlib.attention_weights(Q, K, mask=mask)],
        "attention": list(attnlib.attention(Q, K, V, mask=mask)),
        "apply_rotary": [attnlib.apply_rotary(K, [0, 3, 1, 7, 2], layout=lay) for lay in LAYOUTS],
        "split_heads": [attnlib.split_heads(X, 2)],
        "merge_heads": [attnlib.merge_heads(attnlib.split_heads(X, 2))],
        "multi_head_attention": list(attnlib.multi_head_attention(X, X, W, W, W, W, 2)),
        "softmax_jacobian": [attnlib.softmax_jacobian(attnlib.softmax(S))],
        "attention_backward": list(attnlib.attention_backward(Q, K, V, V[:3] * 0 + 1)),
        "online_softmax": [attnlib.online_softmax(S, block_size=2)],
        "blocked_attention": [attnlib.blocked_attention(Q, K, V, block_size=2)],
        **flash_attention_and_backward(Q, K, V),
        "KVCache": list(filled_cache(K, V, dtype).read()),
        "RingKVCache": list(filled_ring(K, V, dtype).read()),
        # lessons 17 and 21: the block and the gradients of the weights
        **block_and_weight_gradients(rng, dtype, X, W),
    }


def flash_attention_and_backward(Q, K, V):
    """FlashAttention's two passes (lesson 29), in tiles that do not divide n."""
    output, L = attnlib.flash_attention(Q, K, V, block_size=2, query_block_size=2)
    dOutput = V[:3] * 0 + 1  # (n_q, d_v) in V's dtype
    grads = attnlib.flash_attention_backward(Q, K, V, output, L, dOutput, block_size=2)
    return {"flash_attention": [output, L], "flash_attention_backward": list(grads)}


def filled_cache(K, V, dtype):
    """A KVCache of ``dtype`` holding K and V, appended one row, then the rest."""
    cache = attnlib.KVCache(len(K), K.shape[-1], V.shape[-1], dtype=dtype)
    cache.append(K[0], V[0])
    cache.append(K[1:], V[1:])
    return cache


def filled_ring(K, V, dtype):
    """A RingKVCache of ``dtype`` with 2 slots, after all of K and V went through it."""
    ring = attnlib.RingKVCache(2, K.shape[-1], V.shape[-1], dtype=dtype)
    ring.append(K[0], V[0])
    ring.append(K[1:], V[1:])
    return ring


def block_and_weight_gradients(rng, dtype, X, W):
    """The functions of attnlib.block and the weight gradients, on inputs of one dtype."""
    block = {k: v.astype(dtype) for k, v in attnlib.init_block(4, 6, rng=rng, std=0.5).items()}
    mlp_weights = [block[k] for k in ("W_1", "b_1", "W_2", "b_2")]
    G = (rng.normal(size=(3, 4)) * 0.5).astype(dtype)
    return {
        "layer_norm": [attnlib.layer_norm(X, block["gamma_1"] + 1, block["beta_1"])],
        "mlp": [attnlib.mlp(X, *mlp_weights)],
        "layer_norm_backward": list(attnlib.layer_norm_backward(X, G, block["gamma_1"] + 1)),
        "mlp_backward": list(attnlib.mlp_backward(X, *mlp_weights, G)),
        "transformer_block": list(attnlib.transformer_block(X, n_heads=2, **block)),
        "self_attention_backward": list(attnlib.self_attention_backward(X, W, W, W, G)),
        "multi_head_attention_backward": list(
            attnlib.multi_head_attention_backward(X, X, W, W, W, W, 2, G)
        ),
    }


def test_every_function_is_covered_by_the_dtype_tests():
    # masks and positional encodings are built from sizes, not from float arrays
    sizes_only = {"causal_mask", "padding_mask", "additive_mask", "sinusoidal_positions"}
    sizes_only |= {"sliding_window_mask"}
    sizes_only |= {"rotary_angles"}  # angles from positions, float64 like the encodings
    sizes_only |= {"central_difference", "relative_error"}  # measuring tools: always float64
    numeric = set(attnlib.__all__) - {"example", "init_block", *sizes_only}
    assert set(every_function(np.float64)) == numeric


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_float_dtypes_are_kept(dtype):
    wide = every_function(np.float64)
    for name, results in every_function(dtype).items():
        for got, want in zip(results, wide[name], strict=True):
            assert got.dtype == dtype, (name, got.dtype)
            tol = {np.float64: 1e-12, np.float32: 1e-5, np.float16: 2e-2}[dtype]
            np.testing.assert_allclose(got, want, rtol=tol, atol=tol, err_msg=name)


def test_float32_with_float64_gives_float64():
    Q = np.ones((3, 4), dtype=np.float32)
    assert attnlib.attention(Q, np.ones((5, 4)), np.ones((5, 2), dtype=np.float32))[0].dtype == (
        np.float64
    )


def test_float16_softmax_is_computed_in_float32():
    # in float16, exp(x - max) summed over 70000 keys of equal score gives inf (past 65504),
    # and every weight 0; computed in float32 each weight is 1/70000 = 1.4e-05 in float16
    p = attnlib.softmax(np.zeros(70000, dtype=np.float16))
    assert p.dtype == np.float16
    np.testing.assert_array_equal(p, np.float16(1 / 70000))


def test_float16_scores_past_65504_are_computed_in_float32():
    # q . k = 4 * 200 * 200 = 160000 does not fit in float16, but attention never stores it
    Q = np.full((1, 4), 200, dtype=np.float16)
    K = np.array([[200, 200, 200, 200], [-200, -200, -200, -200]], dtype=np.float16)
    V = np.array([[1, 2], [3, 4]], dtype=np.float16)
    output, weights = attnlib.attention(Q, K, V)
    assert output.dtype == weights.dtype == np.float16
    np.testing.assert_array_equal(weights, [[1.0, 0.0]])
    np.testing.assert_array_equal(output, [[1.0, 2.0]])
    with pytest.raises(ValueError, match=r"^qk_scores: the scores overflow float16: .* 6\.6e\+04"):
        attnlib.qk_scores(Q, K)  # the raw scores themselves are returned as float16


@pytest.mark.parametrize("size", [1e3, 1e4, 1e6])
def test_softmax_is_stable_on_large_scores(size):
    x = np.array([[size, size - 1.0, -size], [size, size, size]])
    p = attnlib.softmax(x)
    assert np.all(np.isfinite(p))
    np.testing.assert_allclose(p.sum(axis=-1), 1.0, rtol=1e-15)
    np.testing.assert_allclose(p[1], [1 / 3] * 3, rtol=1e-15)


def test_softmax_axis_zero_normalises_columns():
    x = np.array([[1.0, 5.0], [3.0, 2.0], [0.0, 0.0]])
    np.testing.assert_allclose(attnlib.softmax(x, axis=0).sum(axis=0), [1.0, 1.0])
    np.testing.assert_allclose(attnlib.softmax(x, axis=0), attnlib.softmax(x.T).T)


def test_softmax_accepts_minus_inf_as_a_masked_key():
    p = attnlib.softmax([0.0, -np.inf, 0.0])
    np.testing.assert_array_equal(p, [0.5, 0.0, 0.5])


def test_scale_divides_by_the_root_of_d_k():
    np.testing.assert_allclose(attnlib.scale_scores([[8.0]], d_k=16), [[2.0]])
    np.testing.assert_allclose(attnlib.scale_scores([[9.0]], d_k=2), [[9 / np.sqrt(2)]])


def test_no_function_changes_its_inputs():
    rng = np.random.default_rng(5)
    Q, K, V = random_qkv(rng, 3, 5, 4, 2)
    S = rng.normal(size=(3, 5))
    copies = [a.copy() for a in (Q, K, V, S)]
    attnlib.attention(Q, K, V, mask=np.tril(np.ones((3, 5), dtype=bool)))
    attnlib.softmax(S)
    attnlib.scale_scores(S, 4)
    for before, after in zip(copies, (Q, K, V, S), strict=True):
        np.testing.assert_array_equal(before, after)
