"""KVCache: decoding token by token (or a few tokens at a time) over the cache gives, at
every step, the rows of full causal attention; dtypes kept; errors named with sizes."""

import numpy as np
import pytest

from attnlib import KVCache, attention, causal_mask
from tests.reference import attention_loop


def causal_reference(Q, K, V):
    """Full causal attention written with loops (tests/reference.py), never with the cache."""
    n = Q.shape[0]
    output, _ = attention_loop(Q.tolist(), K.tolist(), V.tolist(), mask=np.tril(np.ones((n, n))))
    return np.array(output)  # (n, d_v)


@pytest.mark.parametrize("n, d_k, d_v", [(7, 4, 3), (5, 2, 6), (1, 3, 2)])
def test_one_token_at_a_time_equals_causal_attention_at_every_step(n, d_k, d_v):
    rng = np.random.default_rng(n * 10 + d_k)
    Q, K, V = rng.normal(size=(n, d_k)), rng.normal(size=(n, d_k)), rng.normal(size=(n, d_v))
    full = causal_reference(Q, K, V)  # (n, d_v)
    cache = KVCache(max_len=n + 2, d_k=d_k, d_v=d_v)
    for t in range(n):
        cache.append(K[t], V[t])  # first store the new token's key and value ...
        out, weights = attention(Q[t : t + 1], cache.keys, cache.values)  # ... then attend
        assert cache.keys.shape == (t + 1, d_k) and weights.shape == (1, t + 1)
        np.testing.assert_allclose(out[0], full[t], rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("chunks", [(3, 1, 4), (1, 1, 2, 4), (8,)])
def test_several_new_queries_at_once_need_the_bottom_right_mask(chunks):
    rng = np.random.default_rng(len(chunks))
    n, d_k, d_v = sum(chunks), 5, 3
    Q, K, V = rng.normal(size=(n, d_k)), rng.normal(size=(n, d_k)), rng.normal(size=(n, d_v))
    full = causal_reference(Q, K, V)
    cache, start = KVCache(n, d_k, d_v), 0
    for size in chunks:
        rows = slice(start, start + size)
        cache.append(K[rows], V[rows])
        n_k = len(cache)
        mask = causal_mask(size, n_k, align="bottom_right")  # query i sits at n_k - size + i
        out, _ = attention(Q[rows], cache.keys, cache.values, mask=mask)
        np.testing.assert_allclose(out, full[rows], rtol=1e-12, atol=1e-12)
        start += size


def test_a_top_left_mask_over_the_cache_is_wrong():
    # the guard the test above relies on: with cached keys, top-left hides each new token's own key
    rng = np.random.default_rng(3)
    Q, K, V = rng.normal(size=(5, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    full = causal_reference(Q, K, V)
    cache = KVCache(5, 4, 2)
    cache.append(K, V)
    out, _ = attention(Q[3:], cache.keys, cache.values, mask=causal_mask(2, 5))  # top-left
    assert not np.allclose(out, full[3:])


def test_appending_after_attending_misses_the_new_token():
    rng = np.random.default_rng(4)
    Q, K, V = rng.normal(size=(4, 3)), rng.normal(size=(4, 3)), rng.normal(size=(4, 2))
    full = causal_reference(Q, K, V)
    cache = KVCache(4, 3, 2)
    cache.append(K[0], V[0])
    out, _ = attention(Q[1:2], cache.keys, cache.values)  # eat's query before eat's key is in
    assert not np.allclose(out[0], full[1])


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
def test_the_cache_keeps_its_dtype(dtype):
    cache = KVCache(3, 2, 4, dtype=dtype)
    cache.append(np.ones(2), np.ones(4))  # float64 rows are stored in the cache's dtype
    K, V = cache.read()
    assert K.dtype == V.dtype == np.dtype(dtype)
    out, _ = attention(np.ones((1, 2), dtype=dtype), K, V)
    assert out.dtype == np.dtype(dtype)


def test_reads_are_read_only_views_that_follow_later_appends():
    cache = KVCache(3, 1, 1)
    cache.append([1.0], [2.0])
    with pytest.raises(ValueError, match="read-only"):
        cache.keys[0, 0] = 5.0
    cache.append([[3.0], [4.0]], [[5.0], [6.0]])
    np.testing.assert_array_equal(cache.keys[:, 0], [1.0, 3.0, 4.0])
    np.testing.assert_array_equal(cache.values[:, 0], [2.0, 5.0, 6.0])
    assert len(cache) == 3 and "3 of max_len=3" in repr(cache)


@pytest.mark.parametrize(
    "k, v, message",
    [
        (
            np.ones(3),
            np.ones(2),
            r"KVCache.append: k has 3 columns, but this cache keeps rows of width d_k = 4\.",
        ),
        (
            np.ones(4),
            np.ones(5),
            r"KVCache.append: v has 5 columns, but this cache keeps rows of width d_v = 2\.",
        ),
        (
            np.ones((2, 4)),
            np.ones((3, 2)),
            r"KVCache.append: k has 2 rows and v has 3; each key needs one value\.",
        ),
        (
            np.ones((1, 1, 4)),
            np.ones((1, 2)),
            r"KVCache.append: k must be one row or a matrix .* got shape \(1, 1, 4\)\.",
        ),
        ([np.nan] * 4, np.ones(2), r"KVCache.append: k must be finite, but k\[0\] is nan\."),
    ],
)
def test_wrong_rows_are_named(k, v, message):
    cache = KVCache(5, d_k=4, d_v=2)
    with pytest.raises(ValueError, match=message):
        cache.append(k, v)
    assert len(cache) == 0  # nothing half-stored


def test_an_overfull_cache_names_its_sizes_and_keeps_what_it_holds():
    cache = KVCache(4, d_k=2, d_v=2)
    cache.append(np.ones((3, 2)), np.ones((3, 2)))
    with pytest.raises(
        ValueError,
        match=r"KVCache.append: 2 more tokens do not fit: the cache holds 3 of max_len = 4\.",
    ):
        cache.append(np.zeros((2, 2)), np.zeros((2, 2)))
    assert len(cache) == 3 and cache.keys.sum() == 6


@pytest.mark.parametrize(
    "args, error, message",
    [
        ((0, 2, 2), ValueError, r"KVCache: max_len must be a positive whole number, got 0\."),
        ((4, 2.0, 2), TypeError, r"KVCache: d_k must be a positive whole number, got 2\.0\."),
        ((4, 2, -1), ValueError, r"KVCache: d_v must be a positive whole number, got -1\."),
        (
            (4, 2, 2, np.int64),
            TypeError,
            r"KVCache: dtype must be float16, float32 or float64, got int64\.",
        ),
        (
            (4, 2, 2, "floaty"),
            TypeError,
            r"KVCache: dtype must be float16, float32 or float64, got 'floaty'\.",
        ),
    ],
)
def test_bad_sizes_are_named(args, error, message):
    with pytest.raises(error, match=message):
        KVCache(*args)
