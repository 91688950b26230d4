"""Gradients of attention: the softmax Jacobian and the backward pass.

numpy only. The forward pass is ``S = Q K^T / sqrt(d_k)``, ``A = softmax(S)``,
``output = A V``. Given ``dOutput``, the gradient of some scalar loss with
respect to the output, :func:`attention_backward` returns the gradients with
respect to Q, K and V, one chain-rule step per line.
"""

import numpy as np

from ._checks import as_array
from .core import attention


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
        changes nothing).

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
    diag = p[..., :, None] * np.eye(p.shape[-1])  # (..., n, n), p on the diagonal
    outer = p[..., :, None] * p[..., None, :]  # (..., n, 1) * (..., 1, n) -> (..., n, n)
    return diag - outer


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
    output, A = attention(Q, K, V, mask=mask)  # (..., n_q, d_v), (..., n_q, n_k)
    if dOutput.shape != output.shape:
        raise ValueError(
            f"{where}: dOutput must have the output's shape (..., n_q, d_v) = "
            f"{output.shape}, got {dOutput.shape}."
        )
    d_k = Q.shape[-1]
    AT = np.swapaxes(A, -1, -2)  # (n_k, n_q)
    dV = AT @ dOutput  # (n_k, n_q) @ (n_q, d_v) -> (n_k, d_v)
    dA = dOutput @ np.swapaxes(V, -1, -2)  # (n_q, d_v) @ (d_v, n_k) -> (n_q, n_k)
    # each row through its softmax Jacobian: (diag(a) - a a^T) dA_i = a * (dA_i - a . dA_i)
    dS = A * (dA - (A * dA).sum(axis=-1, keepdims=True))  # (n_q, n_k)
    dQ = dS @ K / np.sqrt(d_k)  # (n_q, n_k) @ (n_k, d_k) -> (n_q, d_k)
    dK = np.swapaxes(dS, -1, -2) @ Q / np.sqrt(d_k)  # (n_k, n_q) @ (n_q, d_k) -> (n_k, d_k)
    return dQ, dK, dV
