"""Properties every correct attention has, whatever the numbers (hypothesis)."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

import attnlib

finite = st.floats(-50, 50, allow_nan=False, allow_infinity=False)
sizes = st.integers(1, 6)


@st.composite
def qkv(draw):
    n_q, n_k, d_k, d_v = draw(sizes), draw(sizes), draw(sizes), draw(sizes)
    Q = draw(arrays(np.float64, (n_q, d_k), elements=finite))
    K = draw(arrays(np.float64, (n_k, d_k), elements=finite))
    V = draw(arrays(np.float64, (n_k, d_v), elements=finite))
    return Q, K, V


@settings(max_examples=60, deadline=None)
@given(qkv())
def test_weight_rows_sum_to_one(args):
    _, weights = attnlib.attention(*args)
    assert np.all(weights >= 0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(arrays(np.float64, st.tuples(sizes, sizes), elements=finite), st.floats(-1e3, 1e3))
def test_softmax_ignores_a_shift_of_each_row(x, c):
    np.testing.assert_allclose(attnlib.softmax(x + c), attnlib.softmax(x), rtol=1e-9, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(qkv(), st.randoms(use_true_random=False))
def test_permuting_keys_with_their_values_changes_nothing(args, random):
    Q, K, V = args
    order = list(range(len(K)))
    random.shuffle(order)
    output, weights = attnlib.attention(Q, K, V)
    output_p, weights_p = attnlib.attention(Q, K[order], V[order])
    np.testing.assert_allclose(output_p, output, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(weights_p, weights[:, order], rtol=1e-9, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(qkv())
def test_identical_keys_give_the_mean_of_the_values(args):
    Q, K, V = args
    K_same = np.repeat(K[:1], len(K), axis=0)  # every key the same
    output, _ = attnlib.attention(Q, K_same, V)
    np.testing.assert_allclose(output, np.broadcast_to(V.mean(axis=0), output.shape), atol=1e-9)


@settings(max_examples=60, deadline=None)
@given(qkv(), st.data())
def test_masked_weights_are_exactly_zero(args, data):
    Q, K, V = args
    mask = data.draw(arrays(bool, (len(Q), len(K))))
    mask[:, data.draw(st.integers(0, len(K) - 1))] = True  # one allowed key per row at least
    _, weights = attnlib.attention(Q, K, V, mask=mask)
    assert np.all(weights[~mask] == 0.0)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0, rtol=1e-12)


@settings(max_examples=40, deadline=None)
@given(qkv(), st.sampled_from([np.float32, np.float64]), st.integers(1, 4))
def test_float32_stays_float32_and_blocked_agrees(args, dtype, block_size):
    # entries up to 5: float32 rounds a score of size s by about s * 6e-8, and the weights
    # move by that much relative, so the scores are kept small enough for a 1e-4 tolerance
    args = [M / 10 for M in args]
    Q, K, V = (M.astype(dtype) for M in args)
    output, weights = attnlib.attention(Q, K, V)
    blocked = attnlib.blocked_attention(Q, K, V, block_size=block_size)
    assert output.dtype == weights.dtype == blocked.dtype == dtype
    exact, _ = attnlib.attention(*(M.astype(dtype).astype(np.float64) for M in args))
    tol = 1e-4 if dtype == np.float32 else 1e-9
    scale = max(1.0, float(np.abs(V).max()))
    np.testing.assert_allclose(output, exact, atol=tol * scale, rtol=tol)
    np.testing.assert_allclose(blocked, output, atol=tol * scale, rtol=tol)
