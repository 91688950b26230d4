"""Blocked attention and the online softmax agree with the full computation.

Sizes are unequal everywhere (n_q = 3, n_k = 5, d_k = 4, d_v = 2) so a transpose
or a wrong axis cannot pass by symmetry.
"""

import math
import re
import tracemalloc

import numpy as np
import pytest

import attnlib
from attnlib import example

N_Q, N_K, D_K, D_V = 3, 5, 4, 2


def random_qkv(seed, n_q=N_Q, n_k=N_K, d_k=D_K, d_v=D_V, spread=1.0):
    rng = np.random.default_rng(seed)
    Q = rng.normal(size=(n_q, d_k)) * spread
    K = rng.normal(size=(n_k, d_k)) * spread
    V = rng.normal(size=(n_k, d_v))
    return Q, K, V


def online_loop(row, block_size):
    """The lesson's by-hand loop: one row, running max m and running sum l."""
    m, l = -math.inf, 0.0  # noqa: E741
    for start in range(0, len(row), block_size):
        block = row[start : start + block_size]
        m_new = max(m, *block)
        l = l * math.exp(m - m_new) + sum(math.exp(s - m_new) for s in block)  # noqa: E741
        m = m_new
    return [math.exp(s - m) / l for s in row]


@pytest.mark.parametrize("block_size", [1, 2, 3, 4, 5, 6, 100])
def test_blocked_equals_full_attention(block_size):
    Q, K, V = random_qkv(seed=block_size)
    output = attnlib.blocked_attention(Q, K, V, block_size=block_size)
    full_output, _ = attnlib.attention(Q, K, V)
    assert output.shape == (N_Q, D_V)
    np.testing.assert_allclose(output, full_output, rtol=0, atol=1e-10)


def test_blocked_equals_full_on_a_longer_input_with_a_ragged_last_block():
    Q, K, V = random_qkv(seed=11, n_q=37, n_k=301, d_k=16, d_v=7)
    output = attnlib.blocked_attention(Q, K, V, block_size=64)  # 301 = 4 * 64 + 45
    np.testing.assert_allclose(output, attnlib.attention(Q, K, V)[0], rtol=0, atol=1e-10)


def test_blocked_survives_scores_around_1e3():
    # scores of order 1e3: a naive exp overflows, the running max keeps every exp <= 1
    Q, K, V = random_qkv(seed=3, spread=30.0)
    assert np.abs(Q @ K.T / np.sqrt(D_K)).max() > 700
    output = attnlib.blocked_attention(Q, K, V, block_size=2)
    assert np.all(np.isfinite(output))
    np.testing.assert_allclose(output, attnlib.attention(Q, K, V)[0], rtol=0, atol=1e-10)


def test_blocked_when_a_later_block_raises_the_max():
    # the largest score sits in the last block, so the old sums must be rescaled
    Q = np.array([[1.0, 0.0, 0.0, 0.0]])
    K = np.array([[0.0] * 4, [1.0, 0, 0, 0], [2.0, 0, 0, 0], [3.0, 0, 0, 0], [40.0, 0, 0, 0]])
    V = np.arange(10.0).reshape(N_K, D_V)
    output = attnlib.blocked_attention(Q, K, V, block_size=2)
    np.testing.assert_allclose(output, attnlib.attention(Q, K, V)[0], rtol=0, atol=1e-10)


def test_blocked_broadcasts_batch_axes():
    rng = np.random.default_rng(5)
    Q = rng.normal(size=(2, N_Q, D_K))
    K = rng.normal(size=(N_K, D_K))
    V = rng.normal(size=(2, N_K, D_V))
    output = attnlib.blocked_attention(Q, K, V, block_size=2)
    assert output.shape == (2, N_Q, D_V)
    np.testing.assert_allclose(output, attnlib.attention(Q, K, V)[0], rtol=0, atol=1e-10)


def test_blocked_reproduces_the_document_output():
    Q, K, V = (example.X @ W for W in (example.W_Q, example.W_K, example.W_V))
    output = attnlib.blocked_attention(Q, K, V, block_size=2)
    assert example.compare("output", output).ok


def test_blocked_never_holds_the_n_q_by_n_k_matrix():
    # not a timing: the peak of numpy's allocations must stay below one n x n float64 matrix
    Q, K, V = random_qkv(seed=8, n_q=1024, n_k=1024, d_k=8, d_v=8)
    one_matrix = 1024 * 1024 * 8
    tracemalloc.start()
    attnlib.blocked_attention(Q, K, V, block_size=32)
    _, peak_blocked = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    attnlib.attention(Q, K, V)
    _, peak_full = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak_full > one_matrix  # the measurement does see numpy's arrays
    assert peak_blocked < one_matrix / 4


@pytest.mark.parametrize("block_size", [1, 2, 3, 5, 8])
def test_online_softmax_equals_softmax(block_size):
    x = np.random.default_rng(block_size).normal(size=(N_Q, N_K)) * 10
    weights = attnlib.online_softmax(x, block_size=block_size)
    np.testing.assert_allclose(weights, attnlib.softmax(x), rtol=1e-13, atol=0)
    np.testing.assert_allclose(weights.sum(axis=-1), np.ones(N_Q), rtol=1e-13)
    for row, expected in zip(x.tolist(), weights, strict=True):
        np.testing.assert_allclose(online_loop(row, block_size), expected, rtol=1e-13)


def test_online_softmax_on_large_scores():
    weights = attnlib.online_softmax([1000.0, 998.0, 1001.0, -5.0, 1000.0], block_size=2)
    assert np.all(np.isfinite(weights))
    np.testing.assert_allclose(weights, attnlib.softmax([1000, 998, 1001, -5, 1000]))


def test_online_softmax_on_the_document_row():
    scaled_row1 = np.array([[3.0, 9.0, 6.0]]) / np.sqrt(example.d_k)  # (1, n_k)
    weights = attnlib.online_softmax(scaled_row1, block_size=1)
    assert example.compare("softmax_row1_scaled", weights).ok


# ---------------------------------------------------------------- errors


@pytest.mark.parametrize(
    "args, error, message",
    [
        (
            (None, "K", "V"),
            TypeError,
            r"blocked_attention: Q must be an array of numbers, got None\.",
        ),
        (([1.0, 2.0, 3.0, 4.0], "K", "V"), ValueError, r"blocked_attention: Q must be 2-D or more"),
        (
            ("Q", np.ones((N_K, 3)), "V"),
            ValueError,
            r"blocked_attention: d_k must match, but Q has 4 and K has 3\.",
        ),
        (
            ("Q", "K", np.ones((4, D_V))),
            ValueError,
            r"blocked_attention: n_k must match, but K has 5 rows and V has 4\. "
            r"Each key needs one value\.",
        ),
        (
            (np.ones((2, N_Q, D_K)), np.ones((3, N_K, D_K)), "V"),
            ValueError,
            r"blocked_attention: the batch axes of Q \(2,\) and K \(3,\) do not broadcast\.",
        ),
        (
            (np.ones((2, N_Q, D_K)), "K", np.ones((3, N_K, D_V))),
            ValueError,
            r"blocked_attention: the batch axes of Q \(2,\) and V \(3,\) do not broadcast\.",
        ),
        (
            ("Q", np.where(np.eye(N_K, D_K) > 0, np.nan, 1.0), "V"),
            ValueError,
            r"blocked_attention: K must be finite, but K\[0, 0\] is nan\.",
        ),
    ],
)
def test_blocked_attention_errors(args, error, message):
    Q, K, V = random_qkv(seed=0)
    given = {"Q": Q, "K": K, "V": V}
    args = [given[a] if isinstance(a, str) else a for a in args]
    with pytest.raises(error, match=message):
        attnlib.blocked_attention(*args)


@pytest.mark.parametrize(
    "block_size, error",
    [(0, ValueError), (-3, ValueError), (2.5, TypeError), (True, TypeError), ("4", TypeError),
     (None, TypeError)],
)  # fmt: skip
def test_block_size_must_be_a_positive_whole_number(block_size, error):
    Q, K, V = random_qkv(seed=0)
    message = r"^blocked_attention: block_size must be a positive whole number of keys, got "
    with pytest.raises(error, match=message + re.escape(repr(block_size)) + r"\.$"):
        attnlib.blocked_attention(Q, K, V, block_size=block_size)
    message = message.replace("blocked_attention", "online_softmax")
    with pytest.raises(error, match=message):
        attnlib.online_softmax(Q, block_size=block_size)


@pytest.mark.parametrize(
    "x, error, message",
    [
        (3.0, ValueError, r"online_softmax: x must be 1-D or more, got shape \(\)\."),
        ([0.0, 1.0, np.inf], ValueError, r"online_softmax: x must be finite, but x\[2\] is inf"),
        ([0.0, np.nan], ValueError, r"online_softmax: x must be finite, but x\[1\] is nan"),
        (
            [[0.0, 1.0], [-np.inf, -np.inf]],
            ValueError,
            r"^online_softmax: query row 1 may attend to no key \(every score in it is -inf\)\.$",
        ),
        (
            [-np.inf, -np.inf],
            ValueError,
            r"^online_softmax: the row may attend to no key \(every score in it is -inf\)\.$",
        ),
        (None, TypeError, r"online_softmax: x must be an array of numbers, got None"),
    ],
)
def test_online_softmax_errors(x, error, message):
    with pytest.raises(error, match=message):
        attnlib.online_softmax(x)


def test_query_blocks_of_any_size_give_the_same_output():
    rng = np.random.default_rng(11)
    Q, K, V = rng.normal(size=(7, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))
    full = attnlib.attention(Q, K, V)[0]
    for query_block_size in (1, 2, 3, 7, 100):
        out = attnlib.blocked_attention(Q, K, V, block_size=2, query_block_size=query_block_size)
        np.testing.assert_allclose(out, full, rtol=1e-10, atol=1e-12)


def test_query_block_size_must_be_a_positive_whole_number():
    with pytest.raises(
        ValueError,
        match=r"^blocked_attention: query_block_size must be a positive whole number of "
        r"queries, got 0\.$",
    ):
        attnlib.blocked_attention(np.ones((3, 4)), np.ones((5, 4)), np.ones((5, 2)), 2, 0)


@pytest.mark.parametrize("block_size", [1, 2, 3, 5])
def test_online_softmax_treats_minus_inf_as_softmax_does(block_size):
    # a hidden key, and a whole first block of hidden keys, as a mask makes them
    x = np.array([[-np.inf, -np.inf, -np.inf, 1.0, 2.0], [0.5, -np.inf, 3.0, -np.inf, 1.0]])
    weights = attnlib.online_softmax(x, block_size=block_size)
    assert np.isfinite(weights).all()
    np.testing.assert_allclose(weights, attnlib.softmax(x), rtol=1e-13, atol=0)
    assert (weights[np.isneginf(x)] == 0).all()
