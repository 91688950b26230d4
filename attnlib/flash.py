"""FlashAttention in numpy: the tiled forward and the backward by recomputation.

The forward pass is blocked attention (``attnlib.blocked``) that also hands back, for
each query row, the log-sum-exp of its scaled scores, ``L = m + log(l)``. With ``L``
saved, any weight can be rebuilt from one tile of scores: ``P_ij = exp(s_ij - L_i)``.
So the backward pass never stores the (n_q, n_k) weights either: it recomputes each
tile's weights from Q, K and L, and needs one extra number per row,
``D_i = dOutput_i . output_i``, for the softmax step (lesson 24 derives it). Both passes hold
one (query tile, key tile) block of scores at a time: memory that grows like n, not n^2.

numpy only. Shapes: Q (..., n_q, d_k), K (..., n_k, d_k), V (..., n_k, d_v),
output and dOutput (..., n_q, d_v), L (..., n_q).
"""

import numpy as np

from ._checks import (
    ScoresOverflow,
    as_array,
    batch_shape,
    dtypes,
    overflow_error,
    same_n_k,
    same_size,
    whole_number,
)
from .grad import _unbroadcast


def _check_qkv(Q, K, V, where):
    Q, K, V = as_array(Q, "Q", where), as_array(K, "K", where), as_array(V, "V", where)
    same_size("d_k", where, Q=Q.shape[-1], K=K.shape[-1])
    same_n_k(where, K, V)
    return Q, K, V, batch_shape(where, Q=Q, K=K, V=V)


def _check_causal(causal, where):
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"{where}: causal must be True or False, got {causal!r}.")
    return bool(causal)


def _key_blocks(n_k, block_size, rows, causal):
    """Starts of the key blocks a tile of query ``rows`` reads; causal: none past its last row."""
    end = min(n_k, rows.stop) if causal else n_k  # top-left causal: query i sees keys j <= i
    return range(0, end, block_size)


def _tile_scores(Q_b, K, start, block_size, rows, causal):
    """Scaled scores of one (query tile, key block), -inf above the causal diagonal."""
    K_b = K[..., start : start + block_size, :]  # (b_k, d_k)
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is caught by the caller
        S_b = Q_b @ np.swapaxes(K_b, -1, -2)  # (b_q, d_k) @ (d_k, b_k) -> (b_q, b_k)
    if not np.isfinite(S_b).all():  # finite inputs whose products overflowed
        raise ScoresOverflow
    if causal:
        i = np.arange(rows.start, rows.start + Q_b.shape[-2])[:, None]  # (b_q, 1) positions
        j = np.arange(start, start + K_b.shape[-2])[None, :]  # (1, b_k) positions
        S_b = np.where(j <= i, S_b, -np.inf)  # the block on the diagonal is half hidden
    return S_b


def _forward(Q, K, V, block_size, query_block_size, causal):
    """The output and L of checked inputs of one float dtype (batch axes broadcast)."""
    n_q, n_k, d_k, d_v = Q.shape[-2], K.shape[-2], Q.shape[-1], V.shape[-1]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    output = np.empty((*batch, n_q, d_v), dtype=Q.dtype)
    L = np.empty((*batch, n_q), dtype=Q.dtype)
    for q_start in range(0, n_q, query_block_size):
        rows = slice(q_start, min(n_q, q_start + query_block_size))
        # dividing each query by sqrt(d_k) divides each of its scores q . k by sqrt(d_k)
        Q_b = Q[..., rows, :] / np.sqrt(Q.dtype.type(d_k))  # (b_q, d_k)
        m = np.full((*batch, Q_b.shape[-2], 1), -np.inf, dtype=Q.dtype)  # running max
        l = np.zeros_like(m)  # noqa: E741  running sum of exp(s - m)
        acc = np.zeros((*batch, Q_b.shape[-2], d_v), dtype=Q.dtype)  # running sum exp(s - m) v
        for start in _key_blocks(n_k, block_size, rows, causal):
            S_b = _tile_scores(Q_b, K, start, block_size, rows, causal)  # (b_q, b_k)
            m_new = np.maximum(m, S_b.max(axis=-1, keepdims=True))  # (b_q, 1)
            old_to_new = np.exp(m - m_new)  # (b_q, 1): re-measures the old sums; 0 at first
            P_b = np.exp(S_b - m_new)  # (b_q, b_k), every entry in [0, 1]
            l = l * old_to_new + P_b.sum(axis=-1, keepdims=True)  # noqa: E741
            acc = acc * old_to_new + P_b @ V[..., start : start + block_size, :]  # (b_q, d_v)
            m = m_new
        output[..., rows, :] = acc / l  # (b_q, d_v)
        L[..., rows] = (m + np.log(l))[..., 0]  # log sum_j exp(s_j), without overflow
    return output, L


def flash_attention(Q, K, V, block_size=128, query_block_size=1024, causal=False):
    """Attention in tiles, returning the output and each query row's log-sum-exp.

    The forward pass of FlashAttention: the online softmax of
    :func:`attnlib.blocked_attention` over blocks of keys, one tile of queries at a
    time, never holding the (n_q, n_k) scores. Besides the output it keeps one
    number per query row, ``L_i = log sum_j exp(s_ij)`` with ``s = Q K^T / sqrt(d_k)``,
    which is all :func:`flash_attention_backward` needs to rebuild any weight,
    ``A_ij = exp(s_ij - L_i)``.

    Parameters
    ----------
    Q : array_like of shape (..., n_q, d_k)
    K : array_like of shape (..., n_k, d_k)
    V : array_like of shape (..., n_k, d_v)
    block_size : int
        How many keys (and their values) are read at a time.
    query_block_size : int
        How many queries are answered at a time.
    causal : bool
        Query i sees keys ``j <= i`` only (top-left, as ``attnlib.causal_mask`` and
        PyTorch's ``is_causal``; the FlashAttention library aligns ``causal=True``
        bottom-right since version 2.1, which differs when ``n_q != n_k``); key blocks
        wholly after a tile's last query are never read.

    Returns
    -------
    output : ndarray of shape (..., n_q, d_v)
        ``softmax(Q K^T / sqrt(d_k)) V``, equal to ``attnlib.attention(Q, K, V)[0]``.
    L : ndarray of shape (..., n_q)
        The log-sum-exp of each query's scaled scores. Both float32 for float32
        inputs, float16 for float16 (computed in float32), float64 for integers,
        bools and lists.

    Examples
    --------
    Two equal scores of 0: weights 1/2 each, and L = log(e^0 + e^0) = log 2.

    >>> output, L = flash_attention([[1, 0]], [[0, 1], [0, 1]], [[4, 0], [0, 2]], block_size=1)
    >>> output
    array([[2., 1.]])
    >>> L  # log 2
    array([0.69314718])
    """
    where = "flash_attention"
    Q, K, V, _ = _check_qkv(Q, K, V, where)
    block_size = whole_number(block_size, "block_size", where, of=" of keys")
    query_block_size = whole_number(query_block_size, "query_block_size", where, of=" of queries")
    causal = _check_causal(causal, where)
    work, out = dtypes(Q, K, V)
    Q, K, V = (A.astype(work, copy=False) for A in (Q, K, V))
    try:
        output, L = _forward(Q, K, V, block_size, query_block_size, causal)
    except ScoresOverflow:
        raise overflow_error(where, Q, K, work) from None
    return output.astype(out, copy=False), L.astype(out, copy=False)


def _backward(Q, K, V, output, L, dOutput, block_size, query_block_size, causal):
    """dQ, dK, dV of checked inputs of one float dtype (batch axes broadcast, not summed)."""
    n_q, n_k, d_k = Q.shape[-2], K.shape[-2], Q.shape[-1]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    sqrt_d_k = np.sqrt(Q.dtype.type(d_k))
    dQ = np.zeros((*batch, n_q, d_k), dtype=Q.dtype)
    dK = np.zeros((*batch, n_k, d_k), dtype=Q.dtype)
    dV = np.zeros((*batch, n_k, V.shape[-1]), dtype=Q.dtype)
    # D_i = sum_j A_ij dA_ij = dO_i . O_i: one number per row, from two (n_q, d_v) arrays
    D = (dOutput * output).sum(axis=-1, keepdims=True)  # (n_q, 1)
    for q_start in range(0, n_q, query_block_size):
        rows = slice(q_start, min(n_q, q_start + query_block_size))
        Q_b = Q[..., rows, :] / sqrt_d_k  # (b_q, d_k), scaled once as in the forward pass
        dOutput_b, L_b, D_b = dOutput[..., rows, :], L[..., rows, None], D[..., rows, :]
        for start in _key_blocks(n_k, block_size, rows, causal):
            keys = slice(start, start + block_size)
            S_b = _tile_scores(Q_b, K, start, block_size, rows, causal)  # (b_q, b_k)
            # in place, as each step below, so one or two tiles are alive, no more (a copy
            # only when L has batch axes that Q and K lack: a V batched alone)
            S_b = np.subtract(S_b, L_b, out=S_b if S_b.ndim >= L_b.ndim else None)
            P_b = np.exp(S_b, out=S_b)  # (b_q, b_k): the tile's weights, rebuilt from L
            dV[..., keys, :] += np.swapaxes(P_b, -1, -2) @ dOutput_b  # (b_k, b_q) @ (b_q, d_v)
            dP_b = dOutput_b @ np.swapaxes(V[..., keys, :], -1, -2)  # (b_q, d_v) @ (d_v, b_k)
            dP_b -= D_b
            dS_scaled_b = np.multiply(P_b, dP_b, out=dP_b)  # (b_q, b_k): P * (dP - D)
            dQ[..., rows, :] += dS_scaled_b @ K[..., keys, :] / sqrt_d_k  # (b_q, d_k)
            dK[..., keys, :] += np.swapaxes(dS_scaled_b, -1, -2) @ Q_b  # (b_k, d_k)
    return dQ, dK, dV


def flash_attention_backward(
    Q, K, V, output, L, dOutput, block_size=128, query_block_size=1024, causal=False
):
    """Gradients of attention from the saved output and log-sum-exp, tile by tile.

    The backward pass of FlashAttention. It stores no (n_q, n_k) array: each tile's
    weights are recomputed, ``A_ij = exp(q_i . k_j / sqrt(d_k) - L_i)``, and the
    softmax step uses the row term ``D_i = dO_i . O_i`` in place of ``A_i . dA_i``.
    Gives the same gradients as :func:`attnlib.attention_backward`.

    Parameters
    ----------
    Q : array_like of shape (..., n_q, d_k)
    K : array_like of shape (..., n_k, d_k)
    V : array_like of shape (..., n_k, d_v)
    output : array_like of shape (..., n_q, d_v)
        The output of ``flash_attention(Q, K, V)``.
    L : array_like of shape (..., n_q)
        The log-sum-exp returned with it.
    dOutput : array_like of shape (..., n_q, d_v)
        The gradient of a scalar loss with respect to ``output``.
    block_size, query_block_size : int
        Keys and queries per tile, as in :func:`flash_attention`.
    causal : bool
        The same as in the forward pass.

    Returns
    -------
    dQ : ndarray of shape (..., n_q, d_k)
    dK : ndarray of shape (..., n_k, d_k)
    dV : ndarray of shape (..., n_k, d_v)
        Each has its input's shape (a K or V shared by a batch gets the batch's
        sum). float32 for float32 inputs, float16 for float16 (computed in
        float32), float64 for integers, bools and lists.

    Examples
    --------
    Equal scores, weights 1/2: each value row receives half of dOutput, as in
    ``attnlib.attention_backward``.

    >>> Q, K, V = [[0, 0]], [[1, 0], [0, 1]], [[2, 0], [0, 0]]
    >>> output, L = flash_attention(Q, K, V, block_size=1)
    >>> grads = flash_attention_backward(Q, K, V, output, L, dOutput=[[1, 1]], block_size=1)
    >>> dQ, dK, dV = grads
    >>> dQ
    array([[ 0.35355339, -0.35355339]])
    >>> dV
    array([[0.5, 0.5],
           [0.5, 0.5]])
    """
    where = "flash_attention_backward"
    Q, K, V, batch = _check_qkv(Q, K, V, where)
    output, dOutput = as_array(output, "output", where), as_array(dOutput, "dOutput", where)
    L = as_array(L, "L", where, min_ndim=1)
    output_shape = (*batch, Q.shape[-2], V.shape[-1])  # (..., n_q, d_v)
    for name, A in (("output", output), ("dOutput", dOutput)):
        if A.shape != output_shape:
            raise ValueError(
                f"{where}: {name} must have the output's shape (..., n_q, d_v) = "
                f"{output_shape}, got {A.shape}."
            )
    if L.shape != output_shape[:-1]:
        raise ValueError(
            f"{where}: L must have one entry per query row, shape (..., n_q) = "
            f"{output_shape[:-1]}, got {L.shape}. Pass the L that flash_attention returned."
        )
    block_size = whole_number(block_size, "block_size", where, of=" of keys")
    query_block_size = whole_number(query_block_size, "query_block_size", where, of=" of queries")
    causal = _check_causal(causal, where)
    work, out = dtypes(Q, K, V, output, L, dOutput)
    shapes = Q.shape, K.shape, V.shape
    Q, K, V, output, L, dOutput = (
        A.astype(work, copy=False) for A in (Q, K, V, output, L, dOutput)
    )
    try:
        grads = _backward(Q, K, V, output, L, dOutput, block_size, query_block_size, causal)
    except ScoresOverflow:
        raise overflow_error(where, Q, K, work) from None
    grads = (_unbroadcast(g, shape) for g, shape in zip(grads, shapes, strict=True))
    return tuple(g.astype(out, copy=False) for g in grads)
