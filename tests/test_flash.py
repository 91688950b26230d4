"""FlashAttention's tiled forward and backward agree with the full computation.

Sizes are unequal everywhere (n_q != n_k, d_k != d_v) and the block sizes do not divide
n, so a transpose, a wrong axis or a lost last block cannot pass by symmetry. The
gradients are checked against attention_backward (to 1e-10 in float64) and, independently,
against central finite differences of attnlib.attention.
"""

import tracemalloc

import numpy as np
import pytest

import attnlib
from attnlib import flash_attention, flash_attention_backward

N_Q, N_K, D_K, D_V = 7, 11, 4, 3


def random_inputs(seed, n_q=N_Q, n_k=N_K, d_k=D_K, d_v=D_V, spread=1.0, batch=()):
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(*batch, n_q, d_k)) * spread
    K = rng.normal(size=(*batch, n_k, d_k)) * spread
    V = rng.normal(size=(*batch, n_k, d_v))
    dOutput = rng.normal(size=(*batch, n_q, d_v))
    return Q, K, V, dOutput


def log_sum_exp_loop(Q, K):
    """L_i = log sum_j exp(q_i . k_j / sqrt(d_k)), one row at a time, the max taken out."""
    L = []
    for q in Q:
        s = [float(q @ k) / np.sqrt(len(q)) for k in K]
        m = max(s)
        L.append(m + np.log(sum(np.exp(x - m) for x in s)))
    return np.array(L)


BLOCKS = [(1, 1), (2, 3), (3, 2), (4, 5), (5, 100), (100, 4)]  # (keys, queries) per tile


@pytest.mark.parametrize("block_size, query_block_size", BLOCKS)
def test_forward_equals_attention_and_L_is_the_log_sum_exp(block_size, query_block_size):
    Q, K, V, _ = random_inputs(seed=block_size)
    output, L = flash_attention(Q, K, V, block_size=block_size, query_block_size=query_block_size)
    assert output.shape == (N_Q, D_V) and L.shape == (N_Q,)
    np.testing.assert_allclose(output, attnlib.attention(Q, K, V)[0], rtol=0, atol=1e-12)
    np.testing.assert_allclose(L, log_sum_exp_loop(Q, K), rtol=0, atol=1e-12)


@pytest.mark.parametrize("block_size, query_block_size", BLOCKS)
@pytest.mark.parametrize("causal", [False, True])
def test_backward_equals_attention_backward(block_size, query_block_size, causal):
    Q, K, V, dOutput = random_inputs(seed=10 + block_size)
    tiles = dict(block_size=block_size, query_block_size=query_block_size, causal=causal)
    output, L = flash_attention(Q, K, V, **tiles)
    grads = flash_attention_backward(Q, K, V, output, L, dOutput, **tiles)
    mask = attnlib.causal_mask(N_Q, N_K) if causal else None
    want = attnlib.attention_backward(Q, K, V, dOutput, mask=mask)
    for name, got, expected in zip(("dQ", "dK", "dV"), grads, want, strict=True):
        assert got.shape == expected.shape, name
        np.testing.assert_allclose(got, expected, rtol=0, atol=1e-10, err_msg=name)


def central_difference(f, X, h=1e-6):
    grad = np.zeros_like(X)
    for index in np.ndindex(X.shape):
        up, down = X.copy(), X.copy()
        up[index] += h
        down[index] -= h
        grad[index] = (f(up) - f(down)) / (2 * h)
    return grad


@pytest.mark.parametrize("causal", [False, True])
def test_backward_matches_finite_differences(causal):
    Q, K, V, dOutput = random_inputs(seed=5, n_q=4, n_k=6, d_k=3, d_v=2)
    mask = attnlib.causal_mask(4, 6) if causal else None

    def loss(Q, K, V):  # the full formula, no tiles: an independent reference
        return float((attnlib.attention(Q, K, V, mask=mask)[0] * dOutput).sum())

    output, L = flash_attention(Q, K, V, block_size=4, query_block_size=3, causal=causal)
    dQ, dK, dV = flash_attention_backward(
        Q, K, V, output, L, dOutput, block_size=4, query_block_size=3, causal=causal
    )
    np.testing.assert_allclose(dQ, central_difference(lambda X: loss(X, K, V), Q), atol=1e-8)
    np.testing.assert_allclose(dK, central_difference(lambda X: loss(Q, X, V), K), atol=1e-8)
    np.testing.assert_allclose(dV, central_difference(lambda X: loss(Q, K, X), V), atol=1e-8)


@pytest.mark.parametrize("n_q, n_k", [(7, 11), (11, 7)])
def test_causal_forward_is_the_top_left_causal_mask(n_q, n_k):
    Q, K, V, _ = random_inputs(seed=8, n_q=n_q, n_k=n_k)
    output, L = flash_attention(Q, K, V, block_size=3, query_block_size=2, causal=True)
    mask = attnlib.causal_mask(n_q, n_k)
    np.testing.assert_allclose(output, attnlib.attention(Q, K, V, mask=mask)[0], atol=1e-12)
    rows = [log_sum_exp_loop(Q[i : i + 1], K[: i + 1]) for i in range(n_q)]
    np.testing.assert_allclose(L, np.concatenate(rows), atol=1e-12)


def test_causal_tiles_never_read_a_key_block_past_the_diagonal():
    # the kernels (the public functions refuse nan): value row 6 is nan; with tiles of 2
    # queries and blocks of 2 keys, queries 0 to 5 never read key block 6-7, so they stay
    # finite (a block read and then masked would give them 0 * nan = nan)
    from attnlib.flash import _backward, _forward

    Q, K, V, dOutput = random_inputs(seed=9, n_q=8, n_k=8)
    V[6] = np.nan
    output, L = _forward(Q, K, V, block_size=2, query_block_size=2, causal=True)
    assert np.isfinite(output[:6]).all() and np.isnan(output[6:]).all()
    dQ, dK, dV = _backward(Q, K, V, output, L, dOutput, 2, 2, causal=True)
    assert np.isfinite(dQ[:6]).all() and np.isnan(dQ[6:]).all()


def test_scores_around_1e3_do_not_overflow():
    Q, K, V, dOutput = random_inputs(seed=3, spread=30.0)
    assert np.abs(Q @ K.T / np.sqrt(D_K)).max() > 709  # exp would overflow without the max
    output, L = flash_attention(Q, K, V, block_size=3)
    assert np.isfinite(output).all() and np.isfinite(L).all()
    np.testing.assert_allclose(output, attnlib.attention(Q, K, V)[0], atol=1e-10)
    grads = flash_attention_backward(Q, K, V, output, L, dOutput, block_size=3)
    for got, want in zip(grads, attnlib.attention_backward(Q, K, V, dOutput), strict=True):
        np.testing.assert_allclose(got, want, atol=1e-8, rtol=1e-8)


def test_batch_axes_broadcast_and_shared_keys_sum_their_gradients():
    Q, _, _, dOutput = random_inputs(seed=4, batch=(2, 3))
    _, K, V, _ = random_inputs(seed=5)  # one K and V shared by the whole batch
    output, L = flash_attention(Q, K, V, block_size=4, query_block_size=3)
    assert output.shape == (2, 3, N_Q, D_V) and L.shape == (2, 3, N_Q)
    grads = flash_attention_backward(Q, K, V, output, L, dOutput, block_size=4)
    for got, want in zip(grads, attnlib.attention_backward(Q, K, V, dOutput), strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=1e-10)


def test_values_batched_alone_broadcast_against_one_Q_and_K():
    Q, K, _, _ = random_inputs(seed=12)
    _, _, V, dOutput = random_inputs(seed=13, batch=(2,))  # V (2, n_k, d_v), dOutput batched
    output, L = flash_attention(Q, K, V, block_size=4, query_block_size=3)
    assert output.shape == (2, N_Q, D_V) and L.shape == (2, N_Q)
    grads = flash_attention_backward(Q, K, V, output, L, dOutput, block_size=4)
    for got, want in zip(grads, attnlib.attention_backward(Q, K, V, dOutput), strict=True):
        assert got.shape == want.shape
        np.testing.assert_allclose(got, want, atol=1e-10)


def test_float32_stays_float32_and_float16_comes_back_float16():
    Q, K, V, dOutput = random_inputs(seed=6)
    for dtype, atol in ((np.float32, 1e-5), (np.float16, 2e-2)):
        args = [A.astype(dtype) for A in (Q, K, V)]
        output, L = flash_attention(*args, block_size=4)
        assert output.dtype == L.dtype == dtype
        grads = flash_attention_backward(*args, output, L, dOutput.astype(dtype), block_size=4)
        assert [g.dtype for g in grads] == [dtype] * 3
        want = attnlib.attention_backward(Q, K, V, dOutput)
        for got, expected in zip(grads, want, strict=True):
            np.testing.assert_allclose(got, expected, atol=atol, rtol=atol)


def test_lists_are_computed_in_float64_on_the_worked_example():
    from attnlib import example

    output, L = flash_attention(example.Q.tolist(), example.K.tolist(), example.V.tolist(), 2)
    assert output.dtype == np.float64
    np.testing.assert_allclose(output, example.OUTPUT, atol=1e-12)


def test_the_backward_peak_memory_grows_like_n_not_n_squared():
    peaks = []
    for n in (256, 1024):
        Q, K, V, dOutput = random_inputs(seed=n, n_q=n, n_k=n, d_k=16, d_v=16)
        output, L = flash_attention(Q, K, V, block_size=32, query_block_size=n)
        tracemalloc.start()
        flash_attention_backward(Q, K, V, output, L, dOutput, block_size=32, query_block_size=n)
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
    # 4 times the tokens: about 4 times the memory (16 times for an n x n array)
    assert peaks[1] / peaks[0] < 6
    assert peaks[1] < 1024 * 1024 * 8  # less than one n x n float64 matrix


BAD_CALLS = [
    (
        lambda Q, K, V, o, L, g: flash_attention(Q, K[:, :3], V),
        ValueError,
        r"^flash_attention: d_k must match, but Q has 4 and K has 3\.$",
    ),
    (
        lambda Q, K, V, o, L, g: flash_attention(Q, K, V[:5]),
        ValueError,
        r"^flash_attention: n_k must match, but K has 11 rows and V has 5\. Each key",
    ),
    (
        lambda Q, K, V, o, L, g: flash_attention(Q, K, V, block_size=0),
        ValueError,
        r"^flash_attention: block_size must be a positive whole number of keys, got 0\.$",
    ),
    (
        lambda Q, K, V, o, L, g: flash_attention(Q, K, V, query_block_size=2.0),
        TypeError,
        r"^flash_attention: query_block_size must be a positive whole number of queries",
    ),
    (
        lambda Q, K, V, o, L, g: flash_attention(Q, K, V, causal="yes"),
        TypeError,
        r"^flash_attention: causal must be True or False, got 'yes'\.$",
    ),
    (
        lambda Q, K, V, o, L, g: flash_attention(Q[0], K, V),
        ValueError,
        r"^flash_attention: Q must be 2-D or more \(one row per token\), got shape \(4,\)\.$",
    ),
    (
        lambda Q, K, V, o, L, g: flash_attention_backward(Q, K, V, o, L, g.T),
        ValueError,
        r"^flash_attention_backward: dOutput must have the output's shape \(\.\.\., n_q, d_v\) "
        r"= \(7, 3\), got \(3, 7\)\.$",
    ),
    (
        lambda Q, K, V, o, L, g: flash_attention_backward(Q, K, V, o[:6], L, g),
        ValueError,
        r"^flash_attention_backward: output must have the output's shape .* got \(6, 3\)\.$",
    ),
    (
        lambda Q, K, V, o, L, g: flash_attention_backward(Q, K, V, o, L[:, None], g),
        ValueError,
        r"^flash_attention_backward: L must have one entry per query row, shape \(\.\.\., n_q\) "
        r"= \(7,\), got \(7, 1\)\. Pass the L that flash_attention returned\.$",
    ),
    (
        lambda Q, K, V, o, L, g: flash_attention_backward(Q, K[:, :2], V, o, L, g),
        ValueError,
        r"^flash_attention_backward: d_k must match, but Q has 4 and K has 2\.$",
    ),
    (
        lambda Q, K, V, o, L, g: flash_attention(Q * 1e200, K * 1e200, V),
        ValueError,
        r"^flash_attention: the scores overflow float64",
    ),
    (
        lambda Q, K, V, o, L, g: flash_attention_backward(Q * 1e200, K * 1e200, V, o, L, g),
        ValueError,
        r"^flash_attention_backward: the scores overflow float64",
    ),
]


@pytest.mark.parametrize("call, kind, message", BAD_CALLS)
def test_bad_input_is_named_in_the_callers_words(call, kind, message):
    Q, K, V, dOutput = random_inputs(seed=1)
    output, L = flash_attention(Q, K, V)
    with pytest.raises(kind, match=message):
        call(Q, K, V, output, L, dOutput)
