"""split_heads, merge_heads and multi_head_attention against a per-head loop.

Sizes are unequal everywhere (n_q = 3, n_k = 5, d_model = 6, 2 heads of d_k = 4 and
d_v = 3) so a reshape without a transpose, or heads mixed with positions, fails.
"""

import numpy as np
import pytest

import attnlib
from attnlib import merge_heads, multi_head_attention, split_heads

N_Q, N_K, D_MODEL, D_KV, N_HEADS, D_K, D_V, D_OUT = 3, 5, 6, 7, 2, 4, 3, 6


def softmax_rows(S):
    e = np.exp(S - S.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


def loop_multi_head(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads, mask=None):
    """The slow reference, written like the lesson: one head at a time, column slices."""
    d_k, d_v = W_Q.shape[1] // n_heads, W_V.shape[1] // n_heads
    heads, weights = [], []
    for h in range(n_heads):
        Q = X_q @ W_Q[:, h * d_k : (h + 1) * d_k]
        K = X_kv @ W_K[:, h * d_k : (h + 1) * d_k]
        V = X_kv @ W_V[:, h * d_v : (h + 1) * d_v]
        S = Q @ K.T / np.sqrt(d_k)
        if mask is not None:
            S = np.where(mask, S, -np.inf)
        A = softmax_rows(S)
        heads.append(A @ V)
        weights.append(A)
    return np.concatenate(heads, axis=1) @ W_O, np.stack(weights)


@pytest.fixture
def cross():
    rng = np.random.default_rng(0)
    return dict(
        X_q=rng.normal(size=(N_Q, D_MODEL)),
        X_kv=rng.normal(size=(N_K, D_KV)),
        W_Q=rng.normal(size=(D_MODEL, N_HEADS * D_K)),
        W_K=rng.normal(size=(D_KV, N_HEADS * D_K)),
        W_V=rng.normal(size=(D_KV, N_HEADS * D_V)),
        W_O=rng.normal(size=(N_HEADS * D_V, D_OUT)),
        n_heads=N_HEADS,
    )


def test_split_heads_puts_column_blocks_in_heads():
    X = np.arange(N_Q * D_MODEL).reshape(N_Q, D_MODEL)  # 3 tokens, 6 columns, 3 heads of 2
    H = split_heads(X, 3)
    assert H.shape == (3, N_Q, 2)
    for h in range(3):
        np.testing.assert_array_equal(H[h], X[:, 2 * h : 2 * h + 2])


def test_split_heads_is_not_a_plain_reshape():
    X = np.arange(N_Q * D_MODEL).reshape(N_Q, D_MODEL)
    assert not np.array_equal(split_heads(X, 3), X.reshape(3, N_Q, 2))


def test_merge_undoes_split_with_batch_axes():
    X = np.random.default_rng(1).normal(size=(2, N_K, D_MODEL))
    H = split_heads(X, 3)
    assert H.shape == (2, 3, N_K, 2)
    np.testing.assert_array_equal(H[1, 2], X[1, :, 4:6])
    np.testing.assert_array_equal(merge_heads(H), X)


def test_merge_heads_matches_concatenation():
    H = np.random.default_rng(2).normal(size=(N_HEADS, N_K, D_V))
    np.testing.assert_array_equal(merge_heads(H), np.concatenate(list(H), axis=1))


def test_cross_attention_matches_loop(cross):
    output, weights = multi_head_attention(**cross)
    want_output, want_weights = loop_multi_head(**cross)
    assert output.shape == (N_Q, D_OUT)
    assert weights.shape == (N_HEADS, N_Q, N_K)
    np.testing.assert_allclose(output, want_output, rtol=1e-12)
    np.testing.assert_allclose(weights, want_weights, rtol=1e-12)
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0)


def test_self_attention_with_causal_mask_matches_loop(cross):
    X = cross["X_q"]
    W_K = cross["W_K"][:D_MODEL]
    W_V = cross["W_V"][:D_MODEL]
    args = dict(cross, X_kv=X, W_K=W_K, W_V=W_V)
    mask = np.tril(np.ones((N_Q, N_Q), dtype=bool))
    output, weights = multi_head_attention(**args, mask=mask)
    want_output, want_weights = loop_multi_head(**args, mask=mask)
    np.testing.assert_allclose(output, want_output, rtol=1e-12)
    np.testing.assert_allclose(weights, want_weights, rtol=1e-12)
    assert (weights[:, 0, 1:] == 0).all()


def test_one_head_is_plain_attention(cross):
    X_q, X_kv = cross["X_q"], cross["X_kv"]
    W_Q, W_K, W_V = cross["W_Q"][:, :D_K], cross["W_K"][:, :D_K], cross["W_V"][:, :D_V]
    output, weights = multi_head_attention(X_q, X_kv, W_Q, W_K, W_V, np.eye(D_V), 1)
    want_output, want_weights = attnlib.attention(X_q @ W_Q, X_kv @ W_K, X_kv @ W_V)
    np.testing.assert_allclose(output, want_output, rtol=1e-12)
    np.testing.assert_allclose(weights[0], want_weights, rtol=1e-12)


def test_worked_example_head_reproduces_document():
    from attnlib import example

    # head 0 uses the document's projections, head 1 something else
    rng = np.random.default_rng(3)
    W_Q = np.hstack([example.W_Q, rng.normal(size=(4, 2))])
    W_K = np.hstack([example.W_K, rng.normal(size=(4, 2))])
    W_V = np.hstack([example.W_V, rng.normal(size=(4, 2))])
    W_O = np.vstack([np.eye(2), np.zeros((2, 2))])  # keep head 0 only
    output, _ = multi_head_attention(example.X, example.X, W_Q, W_K, W_V, W_O, 2)
    assert example.compare("output", output).ok


def test_rows_permute_with_the_queries(cross):
    perm = [2, 0, 1]
    output, _ = multi_head_attention(**cross)
    permuted, _ = multi_head_attention(**dict(cross, X_q=cross["X_q"][perm]))
    np.testing.assert_allclose(permuted, output[perm], rtol=1e-12)


@pytest.mark.parametrize(
    "call, error, match",
    [
        (
            lambda: split_heads(np.ones((3, 6)), 4),
            ValueError,
            r"split_heads: X has 6 columns.*4 heads",
        ),
        (
            lambda: split_heads(np.ones((3, 6)), 0),
            ValueError,
            r"split_heads: n_heads must be a positive",
        ),
        (
            lambda: split_heads(np.ones((3, 6)), 2.0),
            TypeError,
            r"split_heads: n_heads .* got 2\.0",
        ),
        (lambda: split_heads(np.ones(6), 2), ValueError, r"split_heads: X must be 2-D or more"),
        (lambda: split_heads(None, 2), TypeError, r"split_heads: X must be an array"),
        (lambda: merge_heads(np.ones((3, 6))), ValueError, r"merge_heads: H must be 3-D or more"),
    ],
)
def test_split_and_merge_errors(call, error, match):
    with pytest.raises(error, match=match):
        call()


def _with(cross, **changes):
    return lambda: multi_head_attention(**dict(cross, **changes))


@pytest.mark.parametrize(
    "changes, match",
    [
        (
            dict(n_heads=3),
            r"multi_head_attention: W_Q has 8 columns, which do not split evenly into 3 heads",
        ),
        (
            dict(n_heads=-1),
            r"multi_head_attention: n_heads must be a positive whole number, got -1",
        ),
        (
            dict(X_q=np.ones((N_Q, 5))),
            r"multi_head_attention: X_q has 5 columns but W_Q has 6 rows",
        ),
        (
            dict(X_kv=np.ones((N_K, 6))),
            r"multi_head_attention: X_kv has 6 columns but W_K has 7 rows",
        ),
        (
            dict(W_K=np.ones((D_KV, 6))),
            r"multi_head_attention: W_Q and W_K must have the same number of columns .* "
            r"W_Q has 8 and W_K has 6",
        ),
        (
            dict(W_V=np.ones((D_KV, 5))),
            r"multi_head_attention: W_V has 5 columns, which do not split",
        ),
        (dict(W_V=np.ones((6, 6))), r"multi_head_attention: X_kv has 7 columns but W_V has 6 rows"),
        (
            dict(W_O=np.ones((4, 2))),
            r"multi_head_attention: W_O has 4 rows but the merged heads have 6",
        ),
        (dict(W_O=np.ones(6)), r"multi_head_attention: W_O must be 2-D, got shape \(6,\)"),
        (
            dict(X_q=np.ones((2, N_Q, D_MODEL)), X_kv=np.ones((3, N_K, D_KV))),
            r"multi_head_attention: the batch axes of X_q \(2,\) and X_kv \(3,\) do not broadcast",
        ),
        (
            dict(mask=np.ones((N_K, N_Q), dtype=bool)),
            r"multi_head_attention: mask of shape \(5, 3\) does not broadcast .* \(2, 3, 5\)",
        ),
        (
            dict(mask=np.eye(N_Q, N_K, dtype=bool) & False),
            r"multi_head_attention: query row 0 in batch \(0,\) may attend to no key",
        ),
    ],
)
def test_multi_head_attention_errors(cross, changes, match):
    with pytest.raises(ValueError, match=match):
        _with(cross, **changes)()


def test_mask_must_be_boolean(cross):
    with pytest.raises(TypeError, match=r"multi_head_attention: mask must be boolean"):
        multi_head_attention(**cross, mask=np.ones((N_Q, N_K)))
