"""Sliding-window attention: the window mask against a mask written with loops, its edge cases
(w = 1, w >= n is the causal mask, n_q != n_k bottom-right), and decoding through a ring of w
slots, which equals attention with the windowed causal mask at every step while the ring never
holds more than w tokens; dtypes kept; errors named with sizes."""

import numpy as np
import pytest

from attnlib import RingKVCache, attention, causal_mask, sliding_window_mask
from tests.reference import attention_loop


def window_loop(n_q, n_k, w, causal=True, align="top_left"):
    """The window as lists of 0/1, one entry at a time: query i sits at position p."""
    rows = []
    for i in range(n_q):
        p = i + (n_k - n_q if align == "bottom_right" else 0)
        row = []
        for j in range(n_k):
            if causal:
                row.append(1 if p - w + 1 <= j <= p else 0)  # keys p - w + 1 .. p
            else:
                row.append(1 if -w < p - j < w else 0)  # fewer than w places either side
        rows.append(row)
    return rows


def windowed_reference(Q, K, V, w):
    """Windowed causal attention written with loops (tests/reference.py), never with a ring."""
    n = len(Q)
    output, _ = attention_loop(Q.tolist(), K.tolist(), V.tolist(), mask=window_loop(n, n, w))
    return np.array(output)  # (n, d_v)


SIZES = [(1, 1, 1), (3, 3, 2), (4, 7, 3), (7, 4, 2), (6, 6, 9), (5, 9, 1), (9, 5, 4)]


@pytest.mark.parametrize("n_q, n_k, w", SIZES)
@pytest.mark.parametrize("causal", [True, False])
@pytest.mark.parametrize("align", ["top_left", "bottom_right"])
def test_the_mask_matches_the_loop(n_q, n_k, w, causal, align):
    got = sliding_window_mask(n_q, n_k, w=w, causal=causal, align=align)
    assert got.dtype == bool and got.shape == (n_q, n_k)
    np.testing.assert_array_equal(got, np.array(window_loop(n_q, n_k, w, causal, align), bool))


def test_a_window_of_one_is_the_diagonal():
    np.testing.assert_array_equal(sliding_window_mask(5, w=1), np.eye(5, dtype=bool))
    np.testing.assert_array_equal(sliding_window_mask(5, w=1, causal=False), np.eye(5, dtype=bool))


@pytest.mark.parametrize("n_q, n_k", [(5, 5), (3, 7), (7, 3)])
@pytest.mark.parametrize("extra", [0, 1, 10])
@pytest.mark.parametrize("align", ["top_left", "bottom_right"])
def test_a_window_of_n_or_more_is_the_causal_mask(n_q, n_k, extra, align):
    w = max(n_q, n_k) + extra
    np.testing.assert_array_equal(
        sliding_window_mask(n_q, n_k, w=w, align=align), causal_mask(n_q, n_k, align=align)
    )
    assert sliding_window_mask(n_q, n_k, w=w, causal=False).all()  # the window alone: every key


def test_the_window_is_w_keys_counted_with_the_query_itself():
    # the off-by-one guard: row 9 of a window of 4 sees keys 6, 7, 8, 9 and nothing else
    mask = sliding_window_mask(12, w=4)
    assert np.flatnonzero(mask[9]).tolist() == [6, 7, 8, 9]
    assert mask.sum(axis=1).tolist() == [1, 2, 3] + [4] * 9
    assert np.flatnonzero(sliding_window_mask(12, w=4, causal=False)[6]).tolist() == [
        3,
        4,
        5,
        6,
        7,
        8,
        9,
    ]


def test_bottom_right_puts_the_queries_at_the_newest_positions():
    # 2 new queries over 6 keys: they are tokens 4 and 5, and see keys 2..4 and 3..5
    mask = sliding_window_mask(2, 6, w=3, align="bottom_right")
    assert [np.flatnonzero(row).tolist() for row in mask] == [[2, 3, 4], [3, 4, 5]]
    top_left = sliding_window_mask(2, 6, w=3)
    assert [np.flatnonzero(row).tolist() for row in top_left] == [[0], [0, 1]]


def test_the_allowed_count_is_n_w_minus_w_w_minus_1_over_2():
    for n in (1, 4, 9, 30):
        for w in range(1, n + 1):
            assert int(sliding_window_mask(n, w=w).sum()) == n * w - w * (w - 1) // 2


@pytest.mark.parametrize("n, w, d_k, d_v", [(9, 3, 4, 2), (7, 1, 3, 5), (5, 5, 2, 3), (4, 6, 5, 1)])
def test_ring_decoding_equals_windowed_attention_at_every_step(n, w, d_k, d_v):
    rng = np.random.default_rng(100 * n + w)
    Q, K, V = rng.normal(size=(n, d_k)), rng.normal(size=(n, d_k)), rng.normal(size=(n, d_v))
    full = windowed_reference(Q, K, V, w)  # (n, d_v), loops only
    full_lib, _ = attention(Q, K, V, mask=sliding_window_mask(n, w=w))
    np.testing.assert_allclose(full_lib, full, rtol=1e-12, atol=1e-12)
    ring = RingKVCache(w, d_k, d_v)
    for t in range(n):
        ring.append(K[t], V[t])  # write first, then attend
        assert len(ring) == min(t + 1, w) and ring.keys.shape == (min(t + 1, w), d_k)
        assert ring.positions.tolist() == list(range(max(0, t - w + 1), t + 1))
        out, _ = attention(Q[t : t + 1], ring.keys, ring.values)
        np.testing.assert_allclose(out[0], full[t], rtol=1e-12, atol=1e-12)
    assert ring.n_seen == n and ring._K.shape == (w, d_k)  # the memory stayed w rows


def test_the_ring_overwrites_the_oldest_slot():
    ring = RingKVCache(4, d_k=1, d_v=1)
    ring.append(np.arange(10.0)[:, None], np.arange(10.0)[:, None])  # tokens 0 .. 9 at once
    assert ring.slot_positions.tolist() == [8, 9, 6, 7]  # token t in slot t % 4
    assert ring.positions.tolist() == [6, 7, 8, 9]
    assert ring.keys[:, 0].tolist() == [6.0, 7.0, 8.0, 9.0]


def test_slot_order_does_not_change_the_output():
    # attention is a sum over keys: reading the slots as stored gives the same row
    rng = np.random.default_rng(5)
    K, V = rng.normal(size=(7, 3)), rng.normal(size=(7, 2))
    q = rng.normal(size=(1, 3))
    ring = RingKVCache(3, 3, 2)
    ring.append(K, V)
    by_age, _ = attention(q, ring.keys, ring.values)
    as_stored, _ = attention(q, ring._K, ring._V)
    np.testing.assert_allclose(as_stored, by_age, rtol=1e-12)


def test_an_empty_ring_reads_no_rows():
    ring = RingKVCache(3, 2, 4)
    assert ring.keys.shape == (0, 2) and ring.values.shape == (0, 4) and len(ring) == 0
    assert ring.slot_positions.tolist() == [-1, -1, -1]


@pytest.mark.parametrize("dtype", [np.float32, np.float16, np.float64])
def test_the_ring_keeps_its_dtype(dtype):
    ring = RingKVCache(2, 2, 3, dtype=dtype)
    ring.append(np.ones((3, 2)), np.ones((3, 3)))  # float64 rows, cast into the ring
    K, V = ring.read()
    assert K.dtype == V.dtype == dtype
    out, _ = attention(np.ones((1, 2), dtype=dtype), K, V)
    assert out.dtype == dtype


def test_reading_cannot_change_the_ring():
    ring = RingKVCache(2, 2, 2)
    ring.append([1.0, 2.0], [3.0, 4.0])
    for rows in (ring.keys, ring.values, ring.positions, ring.slot_positions):
        with pytest.raises(ValueError, match="read-only"):
            rows[0] = 0


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: sliding_window_mask(3, w=0), ValueError, r"sliding_window_mask: w must be a positive whole number \(the number of keys a query may see\), got 0\."),
        (lambda: sliding_window_mask(3, w=2.0), TypeError, r"sliding_window_mask: w must be a positive whole number .*got 2\.0\."),
        (lambda: sliding_window_mask(3, 0, w=2), ValueError, r"sliding_window_mask: n_k must be a positive whole number, got 0\."),
        (lambda: sliding_window_mask(3, w=2, align="bottom"), ValueError, r"sliding_window_mask: align must be 'top_left' or 'bottom_right', got 'bottom'\."),
        (lambda: sliding_window_mask(3, w=2, causal="yes"), TypeError, r"sliding_window_mask: causal must be True or False, got 'yes'\."),
        (lambda: RingKVCache(0, 2, 2), ValueError, r"RingKVCache: w must be a positive whole number \(the number of tokens the ring keeps\), got 0\."),
        (lambda: RingKVCache(2, 2, 2, dtype=int), TypeError, r"RingKVCache: dtype must be float16, float32 or float64, got int64\."),
        (lambda: RingKVCache(2, 2, 3).append([1, 2, 3], [1, 2, 3]), ValueError, r"RingKVCache.append: k has 3 columns, but this cache keeps rows of width d_k = 2\."),
        (lambda: RingKVCache(2, 2, 3).append([1, 2], [1, 2]), ValueError, r"RingKVCache.append: v has 2 columns, but this cache keeps rows of width d_v = 3\."),
        (lambda: RingKVCache(2, 2, 3).append(np.ones((2, 2)), np.ones((3, 3))), ValueError, r"RingKVCache.append: k has 2 rows and v has 3; each key needs one value\."),
        (lambda: RingKVCache(2, 2, 3).append(np.ones((1, 1, 2)), np.ones(3)), ValueError, r"RingKVCache.append: k must be one row or a matrix of rows .*got shape \(1, 1, 2\)\."),
    ],
)  # fmt: skip
def test_errors_name_the_function_the_symbol_and_the_sizes(call, error, message):
    with pytest.raises(error, match=message):
        call()
