"""Attention, one formula step per function: softmax(Q K^T / sqrt(d_k)) V.

numpy only. Shapes follow the course glossary: X (n, d_model), W (d_model, d_k),
Q (..., n_q, d_k), K (..., n_k, d_k), V (..., n_k, d_v), scores S (..., n_q, n_k).
Leading axes (batch, heads) broadcast. Everything is computed in float64.
"""

import numpy as np

from ._checks import as_array, as_mask, batch_shape, no_empty_rows, same_size


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
    return X @ W  # (n, d_model) @ (d_model, d_out) -> (n, d_out)


def qk_scores(Q, K):
    """Dot product of every query with every key: ``Q @ K^T``.

    Parameters
    ----------
    Q : array_like of shape (..., n_q, d_k)
    K : array_like of shape (..., n_k, d_k)

    Returns
    -------
    ndarray of shape (..., n_q, n_k)
        Entry ``[i, j]`` is ``Q[i] . K[j]``.

    Examples
    --------
    >>> qk_scores([[1, 4]], [[3, 0], [1, 2]])
    array([[3., 9.]])
    """
    Q, K = as_array(Q, "Q", "qk_scores"), as_array(K, "K", "qk_scores")
    same_size("d_k", "qk_scores", Q=Q.shape[-1], K=K.shape[-1])
    batch_shape("qk_scores", Q=Q, K=K)
    return Q @ np.swapaxes(K, -1, -2)  # (n_q, d_k) @ (d_k, n_k) -> (n_q, n_k)


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

    Examples
    --------
    >>> scale_scores([[3, 9, 6]], d_k=4)
    array([[1.5, 4.5, 3. ]])
    """
    S = as_array(S, "S", "scale_scores", min_ndim=1, allow_neg_inf=True)
    if isinstance(d_k, bool) or not isinstance(d_k, (int, np.integer)) or d_k < 1:
        raise ValueError(f"scale_scores: d_k must be a positive whole number, got {d_k!r}.")
    return S / np.sqrt(d_k)


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

    Examples
    --------
    >>> softmax([0, 0, 0, 0])
    array([0.25, 0.25, 0.25, 0.25])
    >>> softmax([1000, 1000])  # a naive exp overflows here
    array([0.5, 0.5])
    """
    x = as_array(x, "x", "softmax", min_ndim=1, allow_neg_inf=True)
    if not -x.ndim <= axis < x.ndim:
        raise ValueError(f"softmax: axis {axis} is out of range for shape {x.shape}.")
    return _stable_softmax(x, axis)


def _stable_softmax(x, axis=-1, in_place=False):
    """Softmax of checked scores; with ``in_place`` it reuses ``x`` (n x n memory saved)."""
    top = x.max(axis=axis, keepdims=True)  # (..., 1) along the axis
    # a row of all -inf has max -inf: it may attend to no key, and exp would give 0 / 0
    no_empty_rows(np.moveaxis(top > -np.inf, axis, -1), "softmax", "every score in it is -inf")
    # subtract the row max: softmax ignores shifts, and exp overflows past ~709
    z = np.subtract(x, top, out=x if in_place else None)
    np.exp(z, out=z)
    z /= z.sum(axis=axis, keepdims=True)
    return z


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
        Each row sums to 1; masked entries are exactly 0.

    Examples
    --------
    >>> attention_weights([[1, 0]], [[2, 0], [2, 0]])
    array([[0.5, 0.5]])
    >>> attention_weights([[1, 0]], [[2, 0], [2, 0]], mask=[[True, False]])
    array([[1., 0.]])
    """
    S = qk_scores(Q, K)  # (..., n_q, n_k); checks Q and K
    d_k = np.shape(Q)[-1]
    # the steps of scale_scores and softmax, on the fresh array S in place: the inputs were
    # checked once above, and an n x n matrix is the one thing worth not copying
    S /= np.sqrt(d_k)
    if mask is not None:
        allowed = as_mask(mask, S.shape, "attention_weights")
        no_empty_rows(allowed, "attention_weights")
        np.copyto(S, -np.inf, where=~allowed)
    return _stable_softmax(S, axis=-1, in_place=True)


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

    Examples
    --------
    >>> output, weights = attention([[1, 0]], [[2, 0], [2, 0]], [[4, 0], [0, 2]])
    >>> output
    array([[2., 1.]])
    """
    K = as_array(K, "K", "attention")
    V = as_array(V, "V", "attention")
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(
            f"attention: n_k must match, but K has {K.shape[-2]} rows and V has "
            f"{V.shape[-2]}. Each key needs one value."
        )
    batch_shape("attention", K=K, V=V)
    weights = attention_weights(Q, K, mask=mask)  # (..., n_q, n_k)
    output = weights @ V  # (n_q, n_k) @ (n_k, d_v) -> (n_q, d_v)
    return output, weights
