"""Attention, one formula step per function: softmax(Q K^T / sqrt(d_k)) V.

numpy only. Shapes follow the course glossary: X (n, d_model), W (d_model, d_k),
Q (..., n_q, d_k), K (..., n_k, d_k), V (..., n_k, d_v), scores S (..., n_q, n_k).
Leading axes (batch, heads) broadcast.

Dtypes: float32 in, float32 out; float16 in, float16 out, computed in float32;
integers, bools and lists are computed in float64 (so the lessons' worked
example is exact to float64). Mixed inputs give the widest of their dtypes.

Each public function checks its inputs once, at the door (``_checks``), then
calls private kernels (``_scores``, ``_attend``, ``_exp_normalise``) that check
nothing, so every error names the function the learner called.
"""

import math

import numpy as np

from ._checks import (
    ScoresOverflow,
    as_array,
    as_axis,
    as_mask,
    batch_shape,
    dtypes,
    finite_product,
    no_empty_rows,
    overflow_error,
    same_n_k,
    same_size,
    whole_number,
)

# A block of score rows about this big stays in the CPU's cache while it is scaled,
# exponentiated and normalised in place: each step then costs no trip to main memory.
# At least 64 rows, so that Q_block @ K^T stays an efficient matrix product.
_BLOCK_BYTES = 2**18
_MIN_ROWS = 64


def project(X, W):
    """Project token vectors with a weight matrix: ``X @ W``.

    Parameters
    ----------
    X : array_like of shape (..., n, d_model)
        One row per token.
    W : array_like of shape (d_model, d_out)
        A learned projection, such as ``W_Q``, ``W_K`` or ``W_V``.

    Returns
    -------
    ndarray of shape (..., n, d_out)
        float32 for float32 inputs, float16 for float16 (computed in float32),
        float64 for integers, bools and lists.

    Examples
    --------
    >>> project([[1, 0, 2, 0]], [[1, 2], [1, 0], [0, 1], [0, 1]])
    array([[1., 4.]])
    """
    X = as_array(X, "X", "project")
    W = as_array(W, "W", "project")
    if W.ndim != 2:
        raise ValueError(f"project: W must be 2-D (d_model, d_out), got shape {W.shape}.")
    if X.shape[-1] != W.shape[0]:
        raise ValueError(
            f"project: d_model must match, but X has {X.shape[-1]} columns and W has "
            f"{W.shape[0]} rows."
        )
    work, out = dtypes(X, W)
    with np.errstate(over="ignore", invalid="ignore"):  # overflow is named just below
        XW = X.astype(work, copy=False) @ W.astype(
            work, copy=False
        )  # (n, d_model) @ (d_model, d_out)
    return finite_product(XW.astype(out, copy=False), "X @ W", "project")


def _scores(Q, K):
    """``Q @ K^T`` of checked inputs; an overflow gives inf for the caller to name."""
    with np.errstate(over="ignore", invalid="ignore"):
        return Q @ np.swapaxes(K, -1, -2)  # (n_q, d_k) @ (d_k, n_k) -> (n_q, n_k)


def qk_scores(Q, K):
    """Dot product of every query with every key: ``Q @ K^T``.

    Parameters
    ----------
    Q : array_like of shape (..., n_q, d_k)
    K : array_like of shape (..., n_k, d_k)

    Returns
    -------
    ndarray of shape (..., n_q, n_k)
        Entry ``[i, j]`` is ``Q[i] . K[j]``. float32 for float32 inputs, float16
        for float16 (computed in float32), float64 for integers, bools and lists.

    Examples
    --------
    >>> qk_scores([[1, 4]], [[3, 0], [1, 2]])
    array([[3., 9.]])
    """
    where = "qk_scores"
    Q, K = as_array(Q, "Q", where), as_array(K, "K", where)
    same_size("d_k", where, Q=Q.shape[-1], K=K.shape[-1])
    batch_shape(where, Q=Q, K=K)
    work, out = dtypes(Q, K)
    S = _scores(Q.astype(work, copy=False), K.astype(work, copy=False))
    with np.errstate(over="ignore"):  # float16 holds up to 65504: an overflow is named below
        S = S.astype(out, copy=False)
    if not np.isfinite(S).all():  # finite inputs, but some product grew past the dtype's range
        raise overflow_error(where, Q, K, out, scaled=False)
    return S


def scale_scores(S, d_k):
    """Divide the scores by the square root of the key width: ``S / sqrt(d_k)``.

    Parameters
    ----------
    S : array_like of shape (..., n_q, n_k)
    d_k : int
        The width of each query and key vector (not d_model, not d_v).

    Returns
    -------
    ndarray of shape (..., n_q, n_k)
        The dtype of ``S`` for float32 and float16; float64 for integers and lists.

    Examples
    --------
    >>> scale_scores([[3, 9, 6]], d_k=4)
    array([[1.5, 4.5, 3. ]])
    """
    S = as_array(S, "S", "scale_scores", min_ndim=1, allow_neg_inf=True)
    d_k = whole_number(d_k, "d_k", "scale_scores")
    work, out = dtypes(S)
    # sqrt taken in the working dtype, so float32 scores stay float32
    return (S / np.sqrt(work.type(d_k))).astype(out, copy=False)


def _exp_normalise(S, top):
    """In place, along the last axis: ``S <- exp(S - top) / sum(exp(S - top))``."""
    # subtract the row max: softmax ignores shifts, and exp overflows past ~709
    S -= top
    np.exp(S, out=S)
    total = S.sum(axis=-1, keepdims=True)  # (..., 1), at least 1: the max gives exp(0)
    S *= np.reciprocal(total, out=total)  # one division per row, then n_k multiplications
    return S


def softmax(x, axis=-1):
    """Normalise scores to weights: along the axis, every entry positive, summing to 1.

    Parameters
    ----------
    x : array_like of shape (..., n_k)
        Scores; ``-inf`` marks a key that may not be attended to.
    axis : int
        The axis that sums to 1: the keys, which is the last axis.

    Returns
    -------
    ndarray of the same shape as ``x``
        The dtype of ``x`` for float32; float16 in, float16 out (computed in
        float32); float64 for integers, bools and lists.

    Examples
    --------
    >>> softmax([0, 0, 0, 0])
    array([0.25, 0.25, 0.25, 0.25])
    >>> softmax([1000, 1000])  # a naive exp overflows here
    array([0.5, 0.5])
    >>> softmax([0, -np.inf])  # exp(-inf) = 0: the second key gets no weight
    array([1., 0.])
    """
    x = as_array(x, "x", "softmax", min_ndim=1, allow_neg_inf=True)
    axis = as_axis(axis, x.shape, "softmax")
    work, out = dtypes(x)
    z = np.moveaxis(x, axis, -1).astype(work)  # a copy: the weights are built in it
    top = z.max(axis=-1, keepdims=True)  # (..., 1)
    # a row of all -inf has max -inf: it may attend to no key, and exp would give 0 / 0
    no_empty_rows(top > -np.inf, "softmax", "every score in it is -inf")
    return np.moveaxis(_exp_normalise(z, top), -1, axis).astype(out, copy=False)


def _attend(Q, K, V, allowed):
    """``softmax(Q K^T / sqrt(d_k))`` and its product with V, for checked inputs.

    Q, K (and V, which may be None for the weights alone) share one float dtype;
    ``allowed`` is None or a boolean mask of the scores' shape. The weights are
    built a block of query rows at a time: each step runs in place on a block
    that stays in the CPU's cache. Raises :class:`ScoresOverflow` when finite
    inputs give a score of inf or nan.

    Returns
    -------
    output : ndarray of shape (..., n_q, d_v), or None without V
    weights : ndarray of shape (..., n_q, n_k)
    """
    n_q, d_k, n_k = Q.shape[-2], Q.shape[-1], K.shape[-2]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2])
    weights = np.empty((*batch, n_q, n_k), dtype=Q.dtype)
    K_T = np.swapaxes(K, -1, -2)  # (d_k, n_k)
    sqrt_d_k = np.sqrt(Q.dtype.type(d_k))  # in Q's dtype, so float32 stays float32
    rows_per_block = max(_MIN_ROWS, _BLOCK_BYTES // (math.prod(batch) * n_k * weights.itemsize))
    for start in range(0, n_q, rows_per_block):
        rows = slice(start, start + rows_per_block)
        S = weights[..., rows, :]  # a block of the scores, turned into weights in place
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is caught below
            # dividing each query by sqrt(d_k) divides its scores q . k by sqrt(d_k): the
            # same formula, on b * d_k numbers instead of b * n_k
            np.matmul(Q[..., rows, :] / sqrt_d_k, K_T, out=S)  # (b, d_k) @ (d_k, n_k)
        if allowed is not None:
            np.copyto(S, -np.inf, where=~allowed[..., rows, :])  # exp(-inf) = 0: no weight
        top = S.max(axis=-1, keepdims=True)  # (b, 1)
        if not np.isfinite(top).all():  # inf or nan: products of finite inputs overflowed
            raise ScoresOverflow
        _exp_normalise(S, top)
    if V is None:
        return None, weights
    return weights @ V, weights  # (n_q, n_k) @ (n_k, d_v) -> (n_q, d_v)


def _check_qk(Q, K, where):
    """Q and K as float arrays with matching d_k, or a named error."""
    Q, K = as_array(Q, "Q", where), as_array(K, "K", where)
    same_size("d_k", where, Q=Q.shape[-1], K=K.shape[-1])
    return Q, K


def _scores_shape(Q, K, batch):
    return (*batch, Q.shape[-2], K.shape[-2])  # (..., n_q, n_k)


def attention_weights(Q, K, mask=None):
    """Attention weights: ``softmax(Q K^T / sqrt(d_k))``, one row per query.

    Parameters
    ----------
    Q : array_like of shape (..., n_q, d_k)
    K : array_like of shape (..., n_k, d_k)
    mask : array_like of bool, broadcastable to (..., n_q, n_k), optional
        ``True`` where query i may attend to key j (PyTorch's convention).

    Returns
    -------
    ndarray of shape (..., n_q, n_k)
        Each row sums to 1; masked entries are exactly 0. float32 for float32
        inputs, float16 for float16 (softmax computed in float32), float64 for
        integers, bools and lists.

    Examples
    --------
    >>> attention_weights([[1, 0]], [[2, 0], [2, 0]])
    array([[0.5, 0.5]])
    >>> attention_weights([[1, 0]], [[2, 0], [2, 0]], mask=[[True, False]])
    array([[1., 0.]])
    """
    where = "attention_weights"
    Q, K = _check_qk(Q, K, where)
    batch = batch_shape(where, Q=Q, K=K)
    allowed = None if mask is None else as_mask(mask, _scores_shape(Q, K, batch), where)
    work, out = dtypes(Q, K)
    try:
        _, weights = _attend(Q.astype(work, copy=False), K.astype(work, copy=False), None, allowed)
    except ScoresOverflow:
        raise overflow_error(where, Q, K, work) from None
    return weights.astype(out, copy=False)


def attention(Q, K, V, mask=None):
    """Scaled dot-product attention: ``softmax(Q K^T / sqrt(d_k)) V``.

    Parameters
    ----------
    Q : array_like of shape (..., n_q, d_k)
    K : array_like of shape (..., n_k, d_k)
    V : array_like of shape (..., n_k, d_v)
    mask : array_like of bool, broadcastable to (..., n_q, n_k), optional
        ``True`` where query i may attend to key j.

    Returns
    -------
    output : ndarray of shape (..., n_q, d_v)
        Row i is a blend of the rows of V, weighted by row i of ``weights``.
    weights : ndarray of shape (..., n_q, n_k)
        Both float32 for float32 inputs, float16 for float16 (computed in
        float32), float64 for integers, bools and lists.

    Examples
    --------
    >>> output, weights = attention([[1, 0]], [[2, 0], [2, 0]], [[4, 0], [0, 2]])
    >>> output
    array([[2., 1.]])
    """
    where = "attention"
    Q, K = _check_qk(Q, K, where)
    V = as_array(V, "V", where)
    same_n_k(where, K, V)
    batch_shape(where, Q=Q, K=K, V=V)  # the output's batch axes: Q's, K's and V's together
    qk_batch = batch_shape(where, Q=Q, K=K)  # the weights' batch axes
    allowed = None if mask is None else as_mask(mask, _scores_shape(Q, K, qk_batch), where)
    work, out = dtypes(Q, K, V)
    try:
        output, weights = _attend(*(A.astype(work, copy=False) for A in (Q, K, V)), allowed)
    except ScoresOverflow:
        raise overflow_error(where, Q, K, work) from None
    return output.astype(out, copy=False), weights.astype(out, copy=False)
