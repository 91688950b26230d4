"""Every bad input a learner is likely to pass gets a message naming function, symbol and sizes."""

import re
import warnings

import numpy as np
import pytest

import attnlib

rng = np.random.default_rng(0)
Q, K, V = rng.normal(size=(3, 4)), rng.normal(size=(5, 4)), rng.normal(size=(5, 2))


def test_qk_scores_names_mismatched_d_k():
    with pytest.raises(ValueError, match=r"^qk_scores: d_k must match, but Q has 3 and K has 2\.$"):
        attnlib.qk_scores(np.ones((3, 3)), np.ones((5, 2)))


def test_attention_names_mismatched_n_k():
    with pytest.raises(
        ValueError,
        match=r"^attention: n_k must match, but K has 5 rows and V has 4\. Each key needs one value\.$",
    ):
        attnlib.attention(Q, K, np.ones((4, 2)))


def test_project_names_mismatched_d_model():
    with pytest.raises(
        ValueError, match=r"^project: d_model must match, but X has 4 columns and W has 3 rows\.$"
    ):
        attnlib.project(np.ones((3, 4)), np.ones((3, 2)))


def test_project_needs_a_2d_weight_matrix():
    with pytest.raises(ValueError, match=r"^project: W must be 2-D \(d_model, d_out\), got shape"):
        attnlib.project(np.ones((3, 4)), np.ones((2, 4, 2)))


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: attnlib.qk_scores([1, 4], K), r"qk_scores: Q must be 2-D or more \(one row per token\), got shape \(2,\)\."),
        (lambda: attnlib.attention(Q, K, [1.0] * 5), r"attention: V must be 2-D or more \(one row per token\), got shape \(5,\)\."),
        (lambda: attnlib.project([1, 0, 2, 0], np.ones((4, 2))), r"project: X must be 2-D or more"),
        (lambda: attnlib.softmax(3.0), r"softmax: x must be 1-D or more, got shape \(\)\."),
    ],
)  # fmt: skip
def test_wrong_ndim(call, message):
    with pytest.raises(ValueError, match="^" + message):
        call()


@pytest.mark.parametrize(
    "args, message",
    [
        ((np.ones((0, 4)), K, V), r"^attention: Q is empty \(shape \(0, 4\)\)"),
        ((Q, np.ones((0, 4)), np.ones((0, 2))), r"^attention: K is empty \(shape \(0, 4\)\)"),
        ((Q, K, np.ones((5, 0))), r"^attention: V is empty \(shape \(5, 0\)\)"),
    ],
)
def test_empty_sequences(args, message):
    with pytest.raises(ValueError, match=message):
        attnlib.attention(*args)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_nan_and_inf_in_inputs_are_located(bad):
    Q_bad = Q.copy()
    Q_bad[2, 1] = bad
    with pytest.raises(
        ValueError, match=re.escape(f"attention: Q must be finite, but Q[2, 1] is {bad}.")
    ):
        attnlib.attention(Q_bad, K, V)


def test_nan_in_scores_is_refused_by_softmax():
    with pytest.raises(ValueError, match=r"^softmax: x must be finite, but x\[1\] is nan\.$"):
        attnlib.softmax([0.0, np.nan])


@pytest.mark.parametrize(
    "bad, kind",
    [(None, r"got None"), (..., r"got Ellipsis"), ("abc", r"got str with dtype <U3"),
     ([["a", "b"]], r"got list with dtype <U1"), ([[1j, 2]], r"got list with dtype complex128")],
)  # fmt: skip
def test_non_numeric_input_is_a_type_error(bad, kind):
    with pytest.raises(TypeError, match=r"^qk_scores: Q must .*" + kind):
        attnlib.qk_scores(bad, K)


def test_ragged_rows():
    with pytest.raises(ValueError, match=r"^qk_scores: Q has rows of different lengths"):
        attnlib.qk_scores([[1, 2], [3]], [[1, 2]])


def test_mask_of_the_wrong_shape():
    with pytest.raises(
        ValueError,
        match=r"^attention: mask of shape \(5, 3\) does not broadcast to the scores' "
        r"shape \(3, 5\) \(\.\.\., n_q, n_k\)\.$",
    ):
        attnlib.attention(Q, K, V, mask=np.ones((5, 3), dtype=bool))


@pytest.mark.parametrize("mask", [np.ones((3, 5)), np.ones((3, 5), dtype=int)])
def test_mask_of_the_wrong_dtype(mask):
    with pytest.raises(
        TypeError,
        match=r"^attention: mask must be boolean \(True = the query may attend to the key\), got dtype",
    ):
        attnlib.attention(Q, K, V, mask=mask)


def test_fully_masked_row_is_named_not_nan():
    mask = np.ones((3, 5), dtype=bool)
    mask[2] = False
    with pytest.raises(
        ValueError,
        match=r"^attention: query row 2 may attend to no key \(its mask row is all False\)\.$",
    ):
        attnlib.attention(Q, K, V, mask=mask)


def test_fully_masked_row_in_a_batch_names_the_batch():
    mask = np.ones((2, 3, 5), dtype=bool)
    mask[1, 0] = False
    Q2 = np.stack([Q, Q])  # (batch, n_q, d_k)
    with pytest.raises(
        ValueError, match=r"^attention: query row 0 in batch \(1,\) may attend to no key"
    ):
        attnlib.attention(Q2, K, V, mask=mask)


def test_softmax_row_of_minus_inf():
    with pytest.raises(
        ValueError,
        match=r"^softmax: query row 1 may attend to no key \(every score in it is -inf\)\.$",
    ):
        attnlib.softmax([[0.0, 1.0], [-np.inf, -np.inf]])


def test_batch_axes_that_do_not_broadcast():
    with pytest.raises(
        ValueError, match=r"^qk_scores: the batch axes of Q \(2,\) and K \(3,\) do not broadcast\.$"
    ):
        attnlib.qk_scores(np.ones((2, 3, 4)), np.ones((3, 5, 4)))


@pytest.mark.parametrize(
    "d_k, error",
    [(0, ValueError), (-2, ValueError), (2.5, TypeError), (True, TypeError), ("2", TypeError)],
)
def test_scale_needs_a_positive_whole_d_k(d_k, error):
    with pytest.raises(
        error,
        match=r"^scale_scores: d_k must be a positive whole number, got " + re.escape(repr(d_k)),
    ):
        attnlib.scale_scores([[1.0]], d_k)


def test_softmax_axis_out_of_range():
    with pytest.raises(ValueError, match=r"^softmax: axis 2 is out of range for shape \(2, 3\)\.$"):
        attnlib.softmax(np.ones((2, 3)), axis=2)


# --- issue 9: each error names the function that was called ---------------------------------

mask_35 = np.tril(np.ones((3, 5), dtype=bool))


@pytest.mark.parametrize(
    "call, error, message",
    [
        (lambda: attnlib.attention("x", K, V), TypeError, r"attention: Q must hold real numbers"),
        (lambda: attnlib.attention(Q, np.ones((5, 3)), V), ValueError, r"attention: d_k must match, but Q has 4 and K has 3\."),
        (lambda: attnlib.attention_weights(Q, K, mask=np.ones((3, 5))), TypeError, r"attention_weights: mask must be boolean"),
        (lambda: attnlib.attention_backward(Q, K, V, np.ones((3, 2)), mask=np.ones((3, 5))), TypeError, r"attention_backward: mask must be boolean"),
        (lambda: attnlib.attention_backward(Q, K, V, np.ones((3, 2)), mask=~mask_35 & False), ValueError, r"attention_backward: query row 0 may attend to no key"),
        (lambda: attnlib.blocked_attention(Q, "K", V), TypeError, r"blocked_attention: K must hold real numbers"),
    ],
)  # fmt: skip
def test_errors_name_the_public_function_not_an_inner_one(call, error, message):
    with pytest.raises(error, match="^" + message):
        call()


def test_softmax_1d_row_of_minus_inf_is_named_not_an_index_error():
    with pytest.raises(
        ValueError,
        match=r"^softmax: the row may attend to no key \(every score in it is -inf\)\.$",
    ):
        attnlib.softmax([-np.inf, -np.inf])


# --- overflow: finite inputs whose scores do not fit -------------------------------------------

BIG = 1e155  # entries this size are finite, but their products pass 1.8e308
OVERFLOW = (
    r"the scores overflow float64: the largest \|q \. k / sqrt\(d_k\)\| is about "
    r"\d\.\de\+31\d, past the largest float64, 1\.8e\+308\. Scale {names} down"
)


@pytest.mark.parametrize(
    "name, call",
    [
        ("attention", lambda: attnlib.attention(Q * BIG, K * BIG, V)),
        ("attention_weights", lambda: attnlib.attention_weights(Q * BIG, K * BIG)),
        ("blocked_attention", lambda: attnlib.blocked_attention(Q * BIG, K * BIG, V, 2)),
        ("attention_backward", lambda: attnlib.attention_backward(Q * BIG, K * BIG, V, np.ones((3, 2)))),
        ("attention", lambda: attnlib.attention(Q * BIG, K * BIG, V, mask=mask_35)),
    ],
)  # fmt: skip
def test_overflowing_scores_are_a_named_error_not_nan(name, call):
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)  # the error alone: no stray warning
        with pytest.raises(ValueError, match="^" + name + ": " + OVERFLOW.format(names="Q and K")):
            call()


def test_overflow_message_gives_the_size_of_the_largest_score():
    # one score: 1e155 * 1e155 * 2 / sqrt(2) = 1.4e310, too big for float64 to hold
    Q1, K1 = np.array([[1e155, 1e155]]), np.array([[1e155, 1e155]])
    with pytest.raises(ValueError, match=r"largest \|q \. k / sqrt\(d_k\)\| is about 1\.4e\+310"):
        attnlib.attention(Q1, K1, [[1.0]])


def test_overflow_of_qk_scores_is_named():
    with pytest.raises(
        ValueError,
        match=r"^qk_scores: the scores overflow float64: the largest \|q \. k\| is about",
    ):
        attnlib.qk_scores(Q * BIG, K * BIG)


def test_multi_head_attention_overflow_names_its_own_inputs():
    X = rng.normal(size=(3, 4)) * 1e80
    W = np.eye(4) * 1e80  # projections of 1e160: the scores overflow, the projections do not
    with pytest.raises(
        ValueError,
        match=r"^multi_head_attention: the scores overflow float64: .* Scale X_q, X_kv, W_Q or W_K down",
    ):
        attnlib.multi_head_attention(X, X, W, W, np.eye(4), np.eye(4), 2)


def test_overflow_in_a_projection_is_named():
    X = np.ones((3, 4)) * 1e200
    with pytest.raises(ValueError, match=r"^project: X @ W overflows float64"):
        attnlib.project(X, np.ones((4, 2)) * 1e200)
    with pytest.raises(ValueError, match=r"^multi_head_attention: X_q @ W_Q overflows float64"):
        attnlib.multi_head_attention(
            X, X, np.ones((4, 4)) * 1e200, np.eye(4), np.eye(4), np.eye(4), 2
        )


def test_large_but_representable_scores_still_work():
    # scores of about 1e300 fit in float64: softmax puts all weight on the largest
    Q1, K1, V1 = np.array([[1e150, 0.0]]), np.array([[1e150, 0.0], [-1e150, 0.0]]), np.eye(2)
    output, weights = attnlib.attention(Q1, K1, V1)
    np.testing.assert_array_equal(weights, [[1.0, 0.0]])


# --- batch axes across Q, K and V; ragged masks; axes ----------------------------------------


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: attnlib.attention(np.ones((2, 3, 4)), np.ones((5, 4)), np.ones((3, 5, 2))), r"^attention: the batch axes of Q \(2,\) and V \(3,\) do not broadcast\.$"),
        (lambda: attnlib.attention(np.ones((3, 4)), np.ones((2, 5, 4)), np.ones((3, 5, 2))), r"^attention: the batch axes of K \(2,\) and V \(3,\) do not broadcast\.$"),
        (lambda: attnlib.attention_backward(np.ones((2, 3, 4)), np.ones((5, 4)), np.ones((3, 5, 2)), np.ones((3, 3, 2))), r"^attention_backward: the batch axes of Q \(2,\) and V \(3,\) do not broadcast\.$"),
        (lambda: attnlib.blocked_attention(np.ones((2, 3, 4)), np.ones((1, 5, 4)), np.ones((3, 5, 2))), r"^blocked_attention: the batch axes of Q \(2,\) and V \(3,\) do not broadcast\.$"),
    ],
)  # fmt: skip
def test_batch_axes_of_q_k_and_v_that_do_not_broadcast(call, message):
    with pytest.raises(ValueError, match=message):
        call()


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda m: attnlib.attention(Q, K, V, mask=m), "attention"),
        (lambda m: attnlib.attention_weights(Q, K, mask=m), "attention_weights"),
        (lambda m: attnlib.attention_backward(Q, K, V, np.ones((3, 2)), mask=m), "attention_backward"),
        (lambda m: attnlib.additive_mask(m), "additive_mask"),
        (lambda m: attnlib.padding_mask(m), "padding_mask"),
    ],
)  # fmt: skip
def test_ragged_mask(call, name):
    ragged = [[True, False, True, True, True], [True], [True, True]]
    with pytest.raises(
        ValueError, match=f"^{name}: " + r"(mask|valid) has rows of different lengths"
    ):
        call(ragged)


@pytest.mark.parametrize("axis", [None, 1.5, "0", True])
def test_softmax_axis_of_the_wrong_kind(axis):
    with pytest.raises(
        TypeError,
        match=r"^softmax: axis must be a whole number \(-1 for the last axis, the keys\), got "
        + re.escape(repr(axis)),
    ):
        attnlib.softmax(np.ones((2, 3)), axis=axis)


def test_softmax_axis_below_range():
    with pytest.raises(
        ValueError, match=r"^softmax: axis -3 is out of range for shape \(2, 3\)\.$"
    ):
        attnlib.softmax(np.ones((2, 3)), axis=-3)


# --- masked arrays: their mask would be ignored -------------------------------------------------


def test_softmax_refuses_a_masked_array():
    x = np.ma.masked_array([1.0, 2.0, 100.0], mask=[False, False, True])
    with pytest.raises(
        TypeError,
        match=r"^softmax: x is a numpy masked array, whose mask would be silently ignored; "
        r"softmax has no mask=: pass plain scores with -inf where a key is hidden "
        r"\(x\.filled\(-np\.inf\)\), or use attention_weights\(Q, K, mask=\.\.\.\)\.$",
    ):
        attnlib.softmax(x)
    np.testing.assert_allclose(attnlib.softmax(x.filled(-np.inf))[2], 0.0)  # the way it names


@pytest.mark.parametrize("where", ["Q", "K", "V"])
def test_attention_refuses_a_masked_array_and_points_to_mask(where):
    args = {"Q": Q, "K": K, "V": V}
    args[where] = np.ma.masked_array(args[where], mask=np.zeros(args[where].shape, dtype=bool))
    with pytest.raises(
        TypeError,
        match=f"^attention: {where} is a numpy masked array, whose mask would be silently "
        r"ignored; pass the plain array, and the keys to hide as mask= \(True = may attend\)\.$",
    ):
        attnlib.attention(**args)


# --- positive whole numbers: one rule, one exception type everywhere ----------------------------


@pytest.mark.parametrize(
    "call, name",
    [
        (lambda n: attnlib.causal_mask(n), "causal_mask: n_q"),
        (lambda n: attnlib.split_heads(np.ones((3, 4)), n), "split_heads: n_heads"),
        (lambda n: attnlib.scale_scores([[1.0]], n), "scale_scores: d_k"),
        (lambda n: attnlib.blocked_attention(Q, K, V, block_size=n), "blocked_attention: block_size"),
        (lambda n: attnlib.padding_mask([1], n_k=n), "padding_mask: n_k"),
        (lambda n: attnlib.multi_head_attention(Q, Q, np.eye(4), np.eye(4), np.eye(4), np.eye(4), n), "multi_head_attention: n_heads"),
    ],
)  # fmt: skip
def test_every_count_follows_the_same_rule(call, name):
    with pytest.raises(
        TypeError, match=f"^{name} must be a positive whole number.*, got 2\\.0\\.$"
    ):
        call(2.0)
    with pytest.raises(ValueError, match=f"^{name} must be a positive whole number.*, got 0\\.$"):
        call(0)
    call(np.int64(2))  # numpy integers are whole numbers too
