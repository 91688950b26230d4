"""Gradients of attention: the softmax Jacobian and the backward pass.

numpy only. The forward pass is ``S = Q K^T / sqrt(d_k)``, ``A = softmax(S)``,
``output = A V``. Given ``dOutput``, the gradient of some scalar loss with
respect to the output, :func:`attention_backward` returns the gradients with
respect to Q, K and V, one chain-rule step per line.
"""

import numpy as np

from ._checks import (
    ScoresOverflow,
    as_array,
    as_mask,
    batch_shape,
    dtypes,
    overflow_error,
    same_n_k,
    same_size,
)
from .core import _attend


def softmax_jacobian(p):
    """The Jacobian of softmax, written in its own output: ``diag(p) - p p^T``.

    Entry ``[i, j]`` is ``d p_i / d x_j = p_i (delta_ij - p_j)``: a weight grows
    with its own score and shrinks when any other score grows.

    Parameters
    ----------
    p : array_like of shape (..., n)
        Softmax weights (non-negative, summing to 1 along the last axis), not
        the scores that went in.

    Returns
    -------
    ndarray of shape (..., n, n)
        Symmetric; every row sums to 0 (adding a constant to all scores
        changes nothing). The dtype of ``p`` for float arrays (float16
        computed in float32); float64 for integers and lists.

    Examples
    --------
    >>> softmax_jacobian([0.5, 0.5])
    array([[ 0.25, -0.25],
           [-0.25,  0.25]])
    """
    p = as_array(p, "p", "softmax_jacobian", min_ndim=1)
    bad = (p < 0).any(axis=-1) | (np.abs(p.sum(axis=-1) - 1.0) > 1e-6)  # (...,)
    if bad.any():
        row = tuple(int(i) for i in np.argwhere(np.atleast_1d(bad))[0]) if p.ndim > 1 else ()
        at = f"row {list(row)} of p" if row else "p"
        raise ValueError(
            "softmax_jacobian: p must be softmax weights (non-negative, summing to 1 along "
            f"the last axis), but {at} sums to {float(p[row].sum()):.4g} with smallest entry "
            f"{float(p[row].min()):.4g}. Pass softmax(x), not the scores x."
        )
    work, out = dtypes(p)
    p = p.astype(work, copy=False)
    diag = p[..., :, None] * np.eye(p.shape[-1], dtype=work)  # (..., n, n), p on the diagonal
    outer = p[..., :, None] * p[..., None, :]  # (..., n, 1) * (..., 1, n) -> (..., n, n)
    return (diag - outer).astype(out, copy=False)


def _unbroadcast(grad, shape):
    """Sum a gradient over the axes its input was broadcast along, back to ``shape``."""
    extra = grad.ndim - len(shape)
    grad = grad.sum(axis=tuple(range(extra))) if extra else grad  # leading axes it lacked
    ones = tuple(i for i, size in enumerate(shape) if size == 1 and grad.shape[i] != 1)
    return grad.sum(axis=ones, keepdims=True) if ones else grad  # axes of length 1


def attention_backward(Q, K, V, dOutput, mask=None):
    """Gradients of attention with respect to Q, K and V, given ``dOutput``.

    Parameters
    ----------
    Q : array_like of shape (..., n_q, d_k)
    K : array_like of shape (..., n_k, d_k)
    V : array_like of shape (..., n_k, d_v)
    dOutput : array_like of shape (..., n_q, d_v)
        The gradient of a scalar loss with respect to ``attention(Q, K, V)[0]``.
    mask : array_like of bool, broadcastable to (..., n_q, n_k), optional
        The same mask as in the forward pass; masked keys get no gradient.

    Returns
    -------
    dQ : ndarray of shape (..., n_q, d_k)
    dK : ndarray of shape (..., n_k, d_k)
    dV : ndarray of shape (..., n_k, d_v)
        Each has its input's shape: a K or V shared by a batch of queries gets
        the sum of the batch's gradients. float32 for float32 inputs, float16
        for float16 (computed in float32), float64 for integers, bools and lists.

    Examples
    --------
    Equal scores give weights 1/2 each. Raising the score of key 0 (value 2) and
    lowering key 1's (value 0) raises ``dOutput . output``, so dQ points along
    ``K[0] - K[1]``, with size ``1/2 * 1 / sqrt(2)``:

    >>> K, V = [[1, 0], [0, 1]], [[2, 0], [0, 0]]
    >>> dQ, dK, dV = attention_backward([[0, 0]], K, V, dOutput=[[1, 1]])
    >>> dQ
    array([[ 0.35355339, -0.35355339]])
    >>> dV  # each value row receives dOutput times its weight 1/2
    array([[0.5, 0.5],
           [0.5, 0.5]])
    """
    where = "attention_backward"
    Q, K = as_array(Q, "Q", where), as_array(K, "K", where)
    V, dOutput = as_array(V, "V", where), as_array(dOutput, "dOutput", where)
    same_size("d_k", where, Q=Q.shape[-1], K=K.shape[-1])
    same_n_k(where, K, V)
    batch = batch_shape(where, Q=Q, K=K, V=V)
    output_shape = (*batch, Q.shape[-2], V.shape[-1])  # (..., n_q, d_v)
    if dOutput.shape != output_shape:
        raise ValueError(
            f"{where}: dOutput must have the output's shape (..., n_q, d_v) = "
            f"{output_shape}, got {dOutput.shape}."
        )
    qk_batch = batch_shape(where, Q=Q, K=K)
    allowed = None
    if mask is not None:
        allowed = as_mask(mask, (*qk_batch, Q.shape[-2], K.shape[-2]), where)
    work, out = dtypes(Q, K, V, dOutput)
    shapes = Q.shape, K.shape, V.shape
    Q, K, V, dOutput = (A.astype(work, copy=False) for A in (Q, K, V, dOutput))
    try:
        output, A = _attend(Q, K, V, allowed)  # (..., n_q, d_v), (..., n_q, n_k)
    except ScoresOverflow:
        raise overflow_error(where, Q, K, work) from None
    d_k = Q.shape[-1]
    dV = np.swapaxes(A, -1, -2) @ dOutput  # (n_k, n_q) @ (n_q, d_v) -> (n_k, d_v)
    dA = dOutput @ np.swapaxes(V, -1, -2)  # (n_q, d_v) @ (d_v, n_k) -> (n_q, n_k)
    # each row through its softmax Jacobian: (diag(a) - a a^T) dA_i = a * (dA_i - a . dA_i),
    # and a . dA_i = sum_j a_j (dOutput_i . V_j) = dOutput_i . output_i: no n x n product
    dA -= (dOutput * output).sum(axis=-1, keepdims=True)  # (n_q, n_k) - (n_q, 1)
    dS = np.multiply(dA, A, out=dA)  # (n_q, n_k), in place
    dQ = dS @ K / np.sqrt(work.type(d_k))  # (n_q, n_k) @ (n_k, d_k) -> (n_q, d_k)
    dK = np.swapaxes(dS, -1, -2) @ Q / np.sqrt(work.type(d_k))  # (n_k, n_q) @ (n_q, d_k)
    grads = (_unbroadcast(g, shape) for g, shape in zip((dQ, dK, dV), shapes, strict=True))
    return tuple(g.astype(out, copy=False) for g in grads)
