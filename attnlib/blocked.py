"""Attention in blocks of keys, without ever holding the n_q x n_k matrix.

Full attention builds every score ``S = Q K^T / sqrt(d_k)`` at once: n_q * n_k
numbers, 2 GiB in float64 at n = 16384. Softmax only needs two numbers per query
row to normalise, its maximum ``m`` and its sum ``l = sum_j exp(s_j - m)``, and
both can be kept as *running* values while the keys are read a block at a time.
When a new block raises the maximum from ``m_old`` to ``m_new``, everything
summed so far is multiplied by ``exp(m_old - m_new)``, which re-measures it
against the new maximum (lesson 22 derives this with sympy). The same factor
rescales the running weighted sum of values, so the output comes out exact.

numpy only. Shapes: Q (..., n_q, d_k), K (..., n_k, d_k), V (..., n_k, d_v).
"""

import numpy as np

from ._checks import (
    ScoresOverflow,
    as_array,
    batch_shape,
    dtypes,
    no_empty_rows,
    overflow_error,
    same_n_k,
    same_size,
    whole_number,
)


def online_softmax(x, block_size=128):
    """Softmax along the last axis, reading it in blocks with a running max and sum.

    One pass over the blocks keeps, for each row, the largest entry seen so far
    ``m`` and the sum ``l`` of ``exp(entry - m)`` over the entries seen so far.
    When a block raises the maximum, the old sum is multiplied by
    ``exp(m_old - m_new)``. At the end ``exp(x - m) / l`` is the softmax.

    Parameters
    ----------
    x : array_like of shape (..., n_k)
        Scores, one row per query; ``-inf`` marks a key that may not be
        attended to, as in ``attnlib.softmax``.
    block_size : int
        How many entries of a row are read at a time.

    Returns
    -------
    ndarray of the same shape as ``x``
        Equal to ``attnlib.softmax(x)``; each row sums to 1. The dtype of ``x``
        for float32; float16 in, float16 out (computed in float32); float64 for
        integers, bools and lists.

    Examples
    --------
    >>> online_softmax([0, 0, 0, 0], block_size=2)
    array([0.25, 0.25, 0.25, 0.25])
    >>> online_softmax([1000, 1000], block_size=1)  # the running max keeps exp small
    array([0.5, 0.5])
    >>> online_softmax([-np.inf, 0, 0], block_size=1)  # a block of only -inf adds nothing
    array([0. , 0.5, 0.5])
    """
    where = "online_softmax"
    x = as_array(x, "x", where, min_ndim=1, allow_neg_inf=True)
    block_size = whole_number(block_size, "block_size", where, of=" of keys")
    no_empty_rows((x > -np.inf), where, "every score in it is -inf")
    work, out = dtypes(x)
    x = x.astype(work, copy=False)
    m = np.full(x.shape[:-1] + (1,), -np.inf, dtype=work)  # (..., 1) running max of each row
    # (..., 1) running sum of exp(x - m): l as in the FlashAttention paper
    l = np.zeros(x.shape[:-1] + (1,), dtype=work)  # noqa: E741
    for start in range(0, x.shape[-1], block_size):
        x_b = x[..., start : start + block_size]  # (..., b)
        m_new = np.maximum(m, x_b.max(axis=-1, keepdims=True))
        # while a row has seen only -inf, m_new is -inf and exp(-inf - -inf) would be nan:
        # measure against 0 instead (its sum so far is 0, and exp(-inf - 0) = 0)
        m_ref = np.where(m_new > -np.inf, m_new, 0)
        # exp(m_old - m_new) re-measures the old sum against the new max (0 on the first block)
        l = l * np.exp(m - m_ref) + np.exp(x_b - m_ref).sum(axis=-1, keepdims=True)  # noqa: E741
        m = m_new
    return (np.exp(x - m) / l).astype(out, copy=False)


def blocked_attention(Q, K, V, block_size=512, query_block_size=1024):
    """Scaled dot-product attention computed over blocks of keys.

    Gives the same output as ``attnlib.attention(Q, K, V)[0]`` but holds only a
    (query_block_size, block_size) tile of the scores at a time, never the
    (n_q, n_k) matrix, so its memory grows like n, not n^2. The weights are never
    formed, so only the output is returned. No mask.

    Parameters
    ----------
    Q : array_like of shape (..., n_q, d_k)
    K : array_like of shape (..., n_k, d_k)
    V : array_like of shape (..., n_k, d_v)
    block_size : int
        How many keys (and their values) are read at a time. Fewer, larger
        blocks mean fewer steps; the default tile of 1024 x 512 scores is 4 MiB
        in float64.
    query_block_size : int
        How many queries are answered at a time. Each block of queries is
        independent of the others: only the keys need the online softmax.

    Returns
    -------
    output : ndarray of shape (..., n_q, d_v)
        ``softmax(Q K^T / sqrt(d_k)) V``. float32 for float32 inputs, float16
        for float16 (computed in float32), float64 for integers, bools and lists.

    Examples
    --------
    Two equal keys share the weight: the output is the mean of the two values.

    >>> blocked_attention([[1, 0]], [[2, 0], [2, 0]], [[4, 0], [0, 2]], block_size=1)
    array([[2., 1.]])
    """
    where = "blocked_attention"
    Q, K, V = as_array(Q, "Q", where), as_array(K, "K", where), as_array(V, "V", where)
    same_size("d_k", where, Q=Q.shape[-1], K=K.shape[-1])
    same_n_k(where, K, V)
    batch = batch_shape(where, Q=Q, K=K, V=V)
    block_size = whole_number(block_size, "block_size", where, of=" of keys")
    query_block_size = whole_number(query_block_size, "query_block_size", where, of=" of queries")
    work, out = dtypes(Q, K, V)
    Q, K, V = (A.astype(work, copy=False) for A in (Q, K, V))
    n_q, d_k, d_v = Q.shape[-2], Q.shape[-1], V.shape[-1]
    output = np.empty((*batch, n_q, d_v), dtype=work)
    try:
        for start in range(0, n_q, query_block_size):
            rows = slice(start, start + query_block_size)
            # dividing each query by sqrt(d_k) divides each of its scores q . k by sqrt(d_k)
            Q_b = Q[..., rows, :] / np.sqrt(work.type(d_k))  # (q, d_k)
            output[..., rows, :] = _attend_over_key_blocks(Q_b, K, V, block_size)
    except ScoresOverflow:
        raise overflow_error(where, Q, K, work) from None
    return output.astype(out, copy=False)  # (..., n_q, d_v)


def _attend_over_key_blocks(Q, K, V, block_size):
    """Online softmax over blocks of keys for one block of checked, pre-scaled queries."""
    n_q, n_k, d_v = Q.shape[-2], K.shape[-2], V.shape[-1]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full((*batch, n_q, 1), -np.inf, dtype=Q.dtype)  # running max of each query's scores
    # running sum of exp(score - m), the softmax's denominator so far
    l = np.zeros((*batch, n_q, 1), dtype=Q.dtype)  # noqa: E741
    acc = np.zeros((*batch, n_q, d_v), dtype=Q.dtype)  # running sum of exp(score - m) * value
    for start in range(0, n_k, block_size):
        K_b = K[..., start : start + block_size, :]  # (b, d_k)
        V_b = V[..., start : start + block_size, :]  # (b, d_v)
        with np.errstate(over="ignore", invalid="ignore"):  # an overflow is caught below
            S_b = Q @ np.swapaxes(K_b, -1, -2)  # (n_q, d_k) @ (d_k, b) -> (n_q, b), scaled
        top = S_b.max(axis=-1, keepdims=True)  # (n_q, 1)
        if not np.isfinite(top).all():  # inf or nan: products of finite inputs overflowed
            raise ScoresOverflow
        m_new = np.maximum(m, top)  # (n_q, 1)
        # exp(m_old - m_new) <= 1 re-measures the old sums against the new max
        # (it is exp(-inf) = 0 on the first block, when nothing has been summed yet)
        old_to_new = np.exp(m - m_new)  # (n_q, 1)
        S_b -= m_new  # every entry <= 0 now, so exp cannot overflow
        P_b = np.exp(S_b, out=S_b)  # (n_q, b), in place: no second block-sized array
        l = l * old_to_new + P_b.sum(axis=-1, keepdims=True)  # noqa: E741
        acc *= old_to_new
        acc += P_b @ V_b  # (n_q, b) @ (b, d_v) -> (n_q, d_v)
        m = m_new
    return acc / l  # (n_q, d_v): divide by the softmax's denominator once, at the end
