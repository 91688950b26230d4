"""Gradients of attention: the softmax Jacobian and the backward pass.

numpy only. The forward pass is ``S = Q K^T / sqrt(d_k)``, ``A = softmax(S)``,
``output = A V``. Given ``dOutput``, the gradient of some scalar loss with
respect to the output, :func:`attention_backward` returns the gradients with
respect to Q, K and V, one chain-rule step per line. Each step's rule is the rate of
``sum(G * f(M))`` with G, the gradient of the step's result, held fixed.
"""

import numpy as np

from ._checks import (
    ScoresOverflow,
    as_array,
    as_mask,
    batch_shape,
    dtypes,
    finite_product,
    overflow_error,
    same_n_k,
    same_size,
)
from .core import _attend
from .heads import _merge, _split, multi_head_attention


def softmax_jacobian(p):
    """The Jacobian of softmax, written in its own output: ``diag(p) - p p^T``.

    Entry ``[i, j]`` is ``d p_i / d x_j = p_i (delta_ij - p_j)``, where ``delta_ij``
    is 1 when ``i = j`` and 0 otherwise: a weight grows with its own score and
    shrinks when any other score grows. The chain rule multiplies a gradient by a
    Jacobian's transpose; this one is its own transpose.

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
        dQ, dK, dV = _backward(Q, K, V, dOutput, allowed)
    except ScoresOverflow:
        raise overflow_error(where, Q, K, work) from None
    grads = (_unbroadcast(g, shape) for g, shape in zip((dQ, dK, dV), shapes, strict=True))
    return tuple(g.astype(out, copy=False) for g in grads)


def _backward(Q, K, V, dOutput, allowed, dWeights=None):
    """dQ, dK, dV of checked inputs of one dtype (batch axes broadcast, not summed).

    ``dWeights``, when given, is the gradient of the loss with respect to the weights
    A themselves (a loss that reads the weights); it adds to the path from dOutput.
    Raises :class:`ScoresOverflow` as :func:`attnlib.core._attend` does.
    """
    output, A = _attend(Q, K, V, allowed)  # (..., n_q, d_v), (..., n_q, n_k)
    d_k = Q.shape[-1]
    dV = np.swapaxes(A, -1, -2) @ dOutput  # (n_k, n_q) @ (n_q, d_v) -> (n_k, d_v)
    dA = dOutput @ np.swapaxes(V, -1, -2)  # (n_q, d_v) @ (d_v, n_k) -> (n_q, n_k)
    if dWeights is None:
        # each row through its softmax Jacobian: (diag(a) - a a^T) dA_i = a * (dA_i - a . dA_i),
        # and a . dA_i = sum_j a_j (dOutput_i . V_j) = dOutput_i . output_i: no n x n product
        dA -= (dOutput * output).sum(axis=-1, keepdims=True)  # (n_q, n_k) - (n_q, 1)
    else:
        dA = dA + dWeights  # both paths reach A; then through the Jacobian as above
        dA -= (A * dA).sum(axis=-1, keepdims=True)  # (n_q, n_k) - (n_q, 1)
    dS = np.multiply(dA, A, out=dA)  # (n_q, n_k), in place
    dQ = dS @ K / np.sqrt(Q.dtype.type(d_k))  # (n_q, n_k) @ (n_k, d_k) -> (n_q, d_k)
    dK = np.swapaxes(dS, -1, -2) @ Q / np.sqrt(Q.dtype.type(d_k))  # (n_k, n_q) @ (n_q, d_k)
    return dQ, dK, dV


def _sum_batch(G, ndim):
    """Sum a per-example weight gradient over the leading (batch) axes, to ``ndim`` axes."""
    extra = G.ndim - ndim
    return G.sum(axis=tuple(range(extra))) if extra else G


def self_attention_backward(X, W_Q, W_K, W_V, dOutput, mask=None, dWeights=None):
    """Gradients of self-attention with respect to X, W_Q, W_K and W_V.

    The forward pass is ``Q, K, V = X W_Q, X W_K, X W_V`` and
    ``output = softmax(Q K^T / sqrt(d_k)) V``. From dQ, dK, dV (as in
    :func:`attention_backward`) each weight gets ``dW = X^T dQ`` (and likewise for
    K and V), and X, which made all three, gets the sum of three paths:
    ``dX = dQ W_Q^T + dK W_K^T + dV W_V^T``.

    Parameters
    ----------
    X : array_like of shape (..., n, d_model)
    W_Q, W_K : array_like of shape (d_model, d_k)
    W_V : array_like of shape (d_model, d_v)
    dOutput : array_like of shape (..., n, d_v)
        The gradient of a scalar loss with respect to the output.
    mask : array_like of bool, broadcastable to (..., n, n), optional
        The same mask as in the forward pass.
    dWeights : array_like of shape (..., n, n), optional
        The gradient of the loss with respect to the weights A, for a loss that reads
        the weights themselves (e.g. ``-log A[i, j]``); pass zeros as dOutput if the
        loss does not read the output.

    Returns
    -------
    dX : ndarray of shape (..., n, d_model)
    dW_Q, dW_K : ndarray of shape (d_model, d_k)
    dW_V : ndarray of shape (d_model, d_v)
        The weights are shared by every sequence of a batch, so their gradients are
        summed over the batch axes. float32 for float32 inputs, float16 for float16
        (computed in float32), float64 for integers, bools and lists.

    Examples
    --------
    With W_Q = 0 every score is 0 and each weight is 1/2, so the output is the mean
    of the value rows and X's gradient through V is shared equally:

    >>> X, W_0, W_1 = [[1, 0], [0, 1]], [[0], [0]], [[1], [1]]
    >>> dX, dW_Q, dW_K, dW_V = self_attention_backward(X, W_0, W_1, W_1, [[1], [1]])
    >>> dW_V  # X^T (A^T dOutput), and A^T dOutput = (1, 1)
    array([[1.],
           [1.]])
    >>> dX  # only the V path is non-zero here: dV W_V^T
    array([[1., 1.],
           [1., 1.]])
    """
    where = "self_attention_backward"
    X = as_array(X, "X", where)
    d_model, n = X.shape[-1], X.shape[-2]
    W_Q, W_K, W_V = (
        as_array(W, name, where, min_ndim=1)
        for W, name in ((W_Q, "W_Q"), (W_K, "W_K"), (W_V, "W_V"))
    )
    for name, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V)):
        if W.ndim != 2:
            raise ValueError(f"{where}: {name} must be 2-D, got shape {W.shape}.")
        if W.shape[0] != d_model:
            raise ValueError(
                f"{where}: X has {d_model} columns but {name} has {W.shape[0]} rows; "
                "they must match."
            )
    same_size("d_k", where, W_Q=W_Q.shape[1], W_K=W_K.shape[1])
    dOutput = as_array(dOutput, "dOutput", where)
    output_shape = (*X.shape[:-1], W_V.shape[1])  # (..., n, d_v)
    if dOutput.shape != output_shape:
        raise ValueError(
            f"{where}: dOutput must have the output's shape (..., n, d_v) = "
            f"{output_shape}, got {dOutput.shape}."
        )
    scores_shape = (*X.shape[:-1], n)  # (..., n, n)
    if dWeights is not None:
        dWeights = as_array(dWeights, "dWeights", where)
        if dWeights.shape != scores_shape:
            raise ValueError(
                f"{where}: dWeights must have the weights' shape (..., n, n) = "
                f"{scores_shape}, got {dWeights.shape}."
            )
    allowed = None if mask is None else as_mask(mask, scores_shape, where)
    arrays = (X, W_Q, W_K, W_V, dOutput) + (() if dWeights is None else (dWeights,))
    work, out = dtypes(*arrays)
    X, W_Q, W_K, W_V, dOutput = (A.astype(work, copy=False) for A in arrays[:5])
    if dWeights is not None:
        dWeights = dWeights.astype(work, copy=False)
    with np.errstate(over="ignore", invalid="ignore"):
        Q, K, V = X @ W_Q, X @ W_K, X @ W_V  # (n, d_model) @ (d_model, d_k) -> (n, d_k)
    for P, what in ((Q, "X @ W_Q"), (K, "X @ W_K"), (V, "X @ W_V")):
        finite_product(P, what, where)
    try:
        dQ, dK, dV = _backward(Q, K, V, dOutput, allowed, dWeights)  # (n, d_k), (n, d_k), (n, d_v)
    except ScoresOverflow:
        raise overflow_error(where, Q, K, work, names="X, W_Q or W_K") from None
    X_T = np.swapaxes(X, -1, -2)  # (d_model, n)
    dW_Q = _sum_batch(X_T @ dQ, 2)  # (d_model, n) @ (n, d_k) -> (d_model, d_k)
    dW_K = _sum_batch(X_T @ dK, 2)  # (d_model, n) @ (n, d_k) -> (d_model, d_k)
    dW_V = _sum_batch(X_T @ dV, 2)  # (d_model, n) @ (n, d_v) -> (d_model, d_v)
    dX = dQ @ W_Q.T + dK @ W_K.T + dV @ W_V.T  # three paths, each (n, d_model)
    return tuple(g.astype(out, copy=False) for g in (dX, dW_Q, dW_K, dW_V))


def multi_head_attention_backward(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads, dOutput, mask=None):
    """Gradients of :func:`attnlib.multi_head_attention` with respect to every input.

    The layer ends with ``output = M W_O``, M the merged heads, so ``dW_O = M^T dOutput``
    and ``dM = dOutput W_O^T``. Split like M, ``dM`` is each head's dOutput; each head
    is then one attention (see :func:`attention_backward`), and its dQ, dK, dV, merged
    again, reach the weights and the inputs as in :func:`self_attention_backward`. For
    self-attention (the same X as ``X_q`` and ``X_kv``) the gradient of X is
    ``dX_q + dX_kv``.

    Parameters
    ----------
    X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads, mask
        As for :func:`attnlib.multi_head_attention`.
    dOutput : array_like of shape (..., n_q, d_out)
        The gradient of a scalar loss with respect to the layer's output.

    Returns
    -------
    dX_q : ndarray of shape (..., n_q, d_model)
        One path, through the queries.
    dX_kv : ndarray of the shape of X_kv
        Two paths, through the keys and the values.
    dW_Q, dW_K, dW_V, dW_O : ndarray of the shapes of W_Q, W_K, W_V, W_O
        Summed over the batch axes. float32 when every input is float32, float64 for
        integers, bools, lists or any float64 input.

    Examples
    --------
    One token attends to itself with weight 1, so the layer is ``X W_V W_O``:

    >>> grads = multi_head_attention_backward([[1, 2]], [[1, 2]], [[1], [0]], [[1], [0]],
    ...                                       [[1], [1]], [[2]], 1, dOutput=[[1]])
    >>> grads[-1]  # dW_O = M^T dOutput, M = X W_V = 3
    array([[3.]])
    >>> grads[1]  # dX_kv through V: dOutput W_O^T W_V^T = 2 (1, 1)
    array([[2., 2.]])
    """
    where = "multi_head_attention_backward"
    try:  # the forward pass checks every input once; its errors are renamed, einops-style
        output, _ = multi_head_attention(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads, mask)
    except (TypeError, ValueError) as err:
        message = str(err).replace("multi_head_attention:", f"{where}:", 1)
        raise type(err)(message) from None
    dOutput = as_array(dOutput, "dOutput", where)
    if dOutput.shape != output.shape:
        raise ValueError(
            f"{where}: dOutput must have the output's shape (..., n_q, d_out) = "
            f"{output.shape}, got {dOutput.shape}."
        )
    arrays = [as_array(A, "A", where, min_ndim=1) for A in (X_q, X_kv, W_Q, W_K, W_V, W_O)]
    work, out = dtypes(*arrays, dOutput)
    X_q, X_kv, W_Q, W_K, W_V, W_O, dOutput = (
        A.astype(work, copy=False) for A in (*arrays, dOutput)
    )
    n_q, n_k = X_q.shape[-2], X_kv.shape[-2]
    allowed = None
    if mask is not None:
        allowed = as_mask(mask, (*output.shape[:-2], n_heads, n_q, n_k), where)
    Q = _split(X_q @ W_Q, n_heads)  # (h, n_q, d_k)
    K = _split(X_kv @ W_K, n_heads)  # (h, n_k, d_k)
    V = _split(X_kv @ W_V, n_heads)  # (h, n_k, d_v)
    heads, _ = _attend(Q, K, V, allowed)  # (h, n_q, d_v)
    M = _merge(heads)  # (n_q, h * d_v): the merged heads
    dW_O = _sum_batch(np.swapaxes(M, -1, -2) @ dOutput, 2)  # (h * d_v, n_q) @ (n_q, d_out)
    dM = dOutput @ W_O.T  # (n_q, d_out) @ (d_out, h * d_v) -> (n_q, h * d_v)
    dQ, dK, dV = _backward(Q, K, V, _split(dM, n_heads), allowed)  # per head
    dQ, dK, dV = _merge(dQ), _merge(dK), _merge(dV)  # (n_q, h * d_k), (n_k, ...), (n_k, ...)
    dW_Q = _sum_batch(np.swapaxes(X_q, -1, -2) @ dQ, 2)  # (d_model, n_q) @ (n_q, h * d_k)
    dW_K = _sum_batch(np.swapaxes(X_kv, -1, -2) @ dK, 2)  # (d_model_kv, n_k) @ (n_k, h * d_k)
    dW_V = _sum_batch(np.swapaxes(X_kv, -1, -2) @ dV, 2)  # (d_model_kv, n_k) @ (n_k, h * d_v)
    dX_q = _unbroadcast(dQ @ W_Q.T, X_q.shape)  # one path: (n_q, d_model)
    dX_kv = _unbroadcast(dK @ W_K.T + dV @ W_V.T, X_kv.shape)  # two paths: (n_k, d_model_kv)
    grads = (dX_q, dX_kv, dW_Q, dW_K, dW_V, dW_O)
    return tuple(g.astype(out, copy=False) for g in grads)


def central_difference(f, X, h=1e-6):
    """The gradient of a number ``f(X)``, measured by nudging one entry of X at a time.

    Entry ``[i]`` is ``(f(X + h e_i) - f(X - h e_i)) / 2h``: nudge entry i up by h and down
    by h, and divide the change in ``f`` by the distance between the two nudges. Two calls
    of ``f`` per entry: too slow to train with, the independent check of any derived
    gradient.

    Parameters
    ----------
    f : callable
        Takes an array shaped like ``X`` and returns one number (a loss).
    X : array_like of any shape
        The point to measure at; it is not changed.
    h : float, optional
        The size of the nudge. 1e-6 leaves a rounding error near 1e-10 in float64.

    Returns
    -------
    ndarray of X's shape, float64
        Entry ``[i]`` is the measured ``d f / d X[i]``.

    Examples
    --------
    >>> central_difference(lambda x: float((x**2).sum()), [3.0, -1.0]).round(6)
    array([ 6., -2.])
    """
    X = np.array(X, dtype=np.float64)  # a float64 copy: the caller's array is never nudged
    if not callable(f):
        raise TypeError(f"central_difference: f must be a function of X, got {type(f).__name__}.")
    if not h > 0:
        raise ValueError(f"central_difference: the nudge h must be positive, got {h}.")
    grad = np.zeros_like(X)
    for index in np.ndindex(X.shape):
        up, down = X.copy(), X.copy()
        up[index] += h
        down[index] -= h
        grad[index] = (float(f(up)) - float(f(down))) / (2 * h)
    return grad


def relative_error(got, want):
    """How far ``got`` is from ``want``, relative to the size of ``want``.

    The largest entry of ``|got - want|`` divided by the largest entry of ``|want|``:
    below 1e-6 means the two agree to about six digits where ``want`` is large.

    Parameters
    ----------
    got, want : array_like of the same shape
        ``want`` must have an entry that is not 0.

    Returns
    -------
    float

    Examples
    --------
    >>> relative_error([2.0, 4.5], [2.0, 4.0])
    0.125
    """
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        raise ValueError(
            f"relative_error: got and want must have the same shape, but got has {got.shape} "
            f"and want has {want.shape}."
        )
    scale = np.abs(want).max(initial=0.0)
    if scale == 0:
        raise ValueError("relative_error: want is all zeros, so no error is relative to it.")
    return float(np.abs(got - want).max() / scale)
