"""Every bad input a learner is likely to pass gets a message naming function, symbol and sizes."""

import re

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
