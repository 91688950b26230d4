"""Masks: construction, combination, and masked attention against a slow loop."""

import re

import numpy as np
import pytest

import attnlib
from attnlib import additive_mask, causal_mask, padding_mask

N_Q, N_K, D_K, D_V = 3, 5, 4, 2


def loop_masked_attention(Q, K, V, mask):
    """Masked attention written like lesson 10: one query, then only its allowed keys."""
    n_q, d_k = Q.shape
    output = np.zeros((n_q, V.shape[1]))
    weights = np.zeros((n_q, K.shape[0]))
    for i in range(n_q):
        allowed = [j for j in range(K.shape[0]) if mask[i, j]]
        scores = [sum(Q[i, t] * K[j, t] for t in range(d_k)) / np.sqrt(d_k) for j in allowed]
        top = max(scores)
        e = [np.exp(s - top) for s in scores]
        for j, e_j in zip(allowed, e, strict=True):
            weights[i, j] = e_j / sum(e)
            output[i] += weights[i, j] * V[j]
    return output, weights


def random_qkv(rng, n_q=N_Q, n_k=N_K):
    return (
        rng.normal(size=(n_q, D_K)),
        rng.normal(size=(n_k, D_K)),
        rng.normal(size=(n_k, D_V)),
    )


# --- causal_mask -------------------------------------------------------------------------


def test_causal_mask_square_is_lower_triangle():
    expected = np.array([[1, 0, 0], [1, 1, 0], [1, 1, 1]], dtype=bool)
    np.testing.assert_array_equal(causal_mask(3), expected)


def test_causal_mask_unequal_matches_loop():
    mask = causal_mask(N_Q, N_K)
    assert mask.shape == (N_Q, N_K) and mask.dtype == bool
    for i in range(N_Q):
        for j in range(N_K):
            assert mask[i, j] == (j <= i)


def test_causal_mask_more_queries_than_keys_sees_every_key_late():
    mask = causal_mask(5, 3)
    assert mask.shape == (5, 3)
    assert mask[3:].all()


@pytest.mark.parametrize("n_q, n_k", [(3, 5), (5, 3), (4, 4), (1, 6)])
def test_causal_mask_bottom_right_matches_loop(n_q, n_k):
    mask = causal_mask(n_q, n_k, align="bottom_right")
    assert mask.shape == (n_q, n_k) and mask.dtype == bool
    for i in range(n_q):
        for j in range(n_k):
            assert mask[i, j] == (j <= n_k - n_q + i)
    assert mask[-1].all()  # the newest query sees every key


def test_causal_mask_alignments_agree_on_square_masks():
    np.testing.assert_array_equal(causal_mask(4, align="bottom_right"), causal_mask(4))


def test_bottom_right_is_the_last_rows_of_the_square_mask():
    # the queries are the newest 2 of 5 tokens: rows 3 and 4 of the 5 x 5 causal mask
    np.testing.assert_array_equal(causal_mask(2, 5, align="bottom_right"), causal_mask(5)[3:])


def test_bottom_right_with_more_queries_than_keys_is_refused_by_attention():
    rng = np.random.default_rng(8)
    Q, K, V = random_qkv(rng, n_q=5, n_k=3)
    mask = causal_mask(5, 3, align="bottom_right")  # rows 0 and 1 see no key
    assert not mask[:2].any() and mask[2:].any(axis=-1).all()
    with pytest.raises(ValueError, match=r"^attention: query row 0 may attend to no key"):
        attnlib.attention(Q, K, V, mask=mask)


@pytest.mark.parametrize(
    "align, error",
    [("bottom-right", ValueError), ("top", ValueError), ("", ValueError), (1, TypeError), (None, TypeError)],
)  # fmt: skip
def test_causal_mask_bad_align(align, error):
    with pytest.raises(
        error,
        match=r"^causal_mask: align must be 'top_left' or 'bottom_right', got "
        + re.escape(repr(align))
        + r"\.$",
    ):
        causal_mask(3, 5, align=align)


def test_causal_mask_align_is_keyword_only():
    with pytest.raises(TypeError):
        causal_mask(3, 5, "bottom_right")


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((0,), ValueError, r"^causal_mask: n_q must be a positive whole number, got 0\.$"),
        ((3, 0), ValueError, r"^causal_mask: n_k must be a positive whole number, got 0\.$"),
        ((2.5,), TypeError, r"^causal_mask: n_q must be a positive whole number, got 2\.5\.$"),
        ((2.0,), TypeError, r"^causal_mask: n_q must be a positive whole number, got 2\.0\.$"),
        ((3, True), TypeError, r"^causal_mask: n_k must be a positive whole number, got True\.$"),
    ],
)
def test_causal_mask_errors(args, error, message):
    with pytest.raises(error, match=message):
        causal_mask(*args)


# --- padding_mask ------------------------------------------------------------------------


def test_padding_mask_from_lengths():
    mask = padding_mask([5, 2, 4])
    assert mask.shape == (3, 1, N_K)
    expected = np.array([[1, 1, 1, 1, 1], [1, 1, 0, 0, 0], [1, 1, 1, 1, 0]], dtype=bool)
    np.testing.assert_array_equal(mask[:, 0, :], expected)


def test_padding_mask_one_length_and_explicit_n_k():
    mask = padding_mask(2, n_k=N_K)
    np.testing.assert_array_equal(mask, [[True, True, False, False, False]])


def test_padding_mask_from_flags_matches_lengths():
    flags = np.array([[True, True, True, False, False], [True, True, True, True, True]])
    np.testing.assert_array_equal(padding_mask(flags), padding_mask([3, 5]))


def test_padding_mask_flags_allow_holes():
    flags = [False, True, False, True, True]  # left padding, or a gap
    np.testing.assert_array_equal(padding_mask(flags), [flags])


@pytest.mark.parametrize(
    ("args", "kwargs", "error", "message"),
    [
        (([3, 6],), {"n_k": 5}, ValueError, r"lengths \[3, 6\] do not fit in n_k = 5 keys"),
        (([3, -1],), {}, ValueError, r"padding_mask: lengths must be 0 or more, got \[3, -1\]"),
        (([2.0, 3.0],), {}, TypeError, r"padding_mask: valid must be lengths .*dtype float64"),
        (([[1, 2]],), {}, TypeError, r"padding_mask: valid must be lengths .*shape \(1, 2\)"),
        (([True, False],), {"n_k": 2}, ValueError, r"give n_k only with lengths; .*n_k = 2"),
        ((np.array(True),), {}, ValueError, r"padding_mask: valid flags need one entry per key"),
        (
            ([3],),
            {"n_k": 0},
            ValueError,
            r"padding_mask: n_k must be a positive whole number, got 0",
        ),
    ],
)
def test_padding_mask_errors(args, kwargs, error, message):
    with pytest.raises(error, match=message):
        padding_mask(*args, **kwargs)


# --- combining, additive form -----------------------------------------------------------


def test_causal_and_padding_combine_by_broadcasting():
    mask = causal_mask(N_Q, N_K) & padding_mask([2, 5], n_k=N_K)
    assert mask.shape == (2, N_Q, N_K)
    for b, length in enumerate([2, 5]):
        for i in range(N_Q):
            for j in range(N_K):
                assert mask[b, i, j] == (j <= i and j < length)


def test_additive_mask_values():
    np.testing.assert_array_equal(
        additive_mask(np.array([[True, False, True]])), [[0.0, -np.inf, 0.0]]
    )


def test_additive_mask_gives_the_same_weights_as_boolean():
    rng = np.random.default_rng(1)
    Q, K, _ = random_qkv(rng)
    mask = causal_mask(N_Q, N_K)
    S = attnlib.scale_scores(attnlib.qk_scores(Q, K), D_K)
    np.testing.assert_allclose(
        attnlib.softmax(S + additive_mask(mask)), attnlib.attention_weights(Q, K, mask=mask)
    )


def test_additive_mask_rejects_numbers():
    with pytest.raises(TypeError, match=r"additive_mask: mask must be boolean .*got dtype int64"):
        additive_mask(np.array([[1, 0]]))


# --- masked attention against the loop ----------------------------------------------------


@pytest.mark.parametrize(
    "mask",
    [
        causal_mask(N_Q, N_K),
        padding_mask(3, n_k=N_K)[0] & np.ones((N_Q, 1), dtype=bool),
        causal_mask(N_Q, N_K) & padding_mask([True, False, True, True, False])[0],
        np.array(
            [[0, 1, 0, 1, 1], [1, 0, 0, 0, 0], [1, 1, 1, 1, 1]], dtype=bool
        ),  # an arbitrary pattern
    ],
    ids=["causal", "padding", "causal&flags", "arbitrary"],
)
def test_masked_attention_matches_loop(mask):
    rng = np.random.default_rng(2)
    Q, K, V = random_qkv(rng)
    output, weights = attnlib.attention(Q, K, V, mask=mask)
    ref_output, ref_weights = loop_masked_attention(Q, K, V, mask)
    np.testing.assert_allclose(weights, ref_weights, rtol=1e-12, atol=1e-15)
    np.testing.assert_allclose(output, ref_output, rtol=1e-12, atol=1e-15)
    assert (weights[~mask] == 0).all()
    np.testing.assert_allclose(weights.sum(axis=-1), 1.0)


def test_batched_masked_attention_matches_loop_per_sequence():
    rng = np.random.default_rng(3)
    lengths = [5, 2]
    Q = rng.normal(size=(2, N_Q, D_K))
    K = rng.normal(size=(2, N_K, D_K))
    V = rng.normal(size=(2, N_K, D_V))
    mask = causal_mask(N_Q, N_K) & padding_mask(lengths, n_k=N_K)  # (2, n_q, n_k)
    output, weights = attnlib.attention(Q, K, V, mask=mask)
    assert output.shape == (2, N_Q, D_V) and weights.shape == (2, N_Q, N_K)
    for b in range(2):
        ref_output, ref_weights = loop_masked_attention(Q[b], K[b], V[b], mask[b])
        np.testing.assert_allclose(output[b], ref_output, rtol=1e-12, atol=1e-15)
        np.testing.assert_allclose(weights[b], ref_weights, rtol=1e-12, atol=1e-15)


def test_all_true_mask_changes_nothing():
    rng = np.random.default_rng(4)
    Q, K, V = random_qkv(rng)
    full, _ = attnlib.attention(Q, K, V)
    masked, _ = attnlib.attention(Q, K, V, mask=np.ones((N_Q, N_K), dtype=bool))
    np.testing.assert_allclose(masked, full)


def test_fully_masked_row_raises_naming_the_row():
    rng = np.random.default_rng(5)
    Q, K, V = random_qkv(rng)
    mask = causal_mask(N_Q, N_K).copy()
    mask[1] = False
    with pytest.raises(
        ValueError,
        match=r"^attention: query row 1 may attend to no key \(its mask row is all False\)",
    ):
        attnlib.attention(Q, K, V, mask=mask)


def test_fully_masked_row_in_a_batch_names_the_sequence():
    rng = np.random.default_rng(6)
    Q = rng.normal(size=(2, N_Q, D_K))
    K = rng.normal(size=(2, N_K, D_K))
    V = rng.normal(size=(2, N_K, D_V))
    flags = np.array([[True] * N_K, [False, False, True, True, True]])  # left padding
    mask = causal_mask(N_Q, N_K) & padding_mask(flags)
    with pytest.raises(ValueError, match=r"query row 0 in batch \(1,\) may attend to no key"):
        attnlib.attention(Q, K, V, mask=mask)


def test_mask_of_the_wrong_shape_is_refused():
    rng = np.random.default_rng(7)
    Q, K, V = random_qkv(rng)
    with pytest.raises(ValueError, match=r"mask of shape \(3, 3\) does not broadcast .*\(3, 5\)"):
        attnlib.attention(Q, K, V, mask=causal_mask(3))
