"""Attention in blocks of keys, without ever holding the n_q x n_k matrix.

Full attention builds every score ``S = Q K^T / sqrt(d_k)`` at once: n_q * n_k
numbers, 2 GiB in float64 at n = 16384. Softmax only needs two numbers per query
row to normalise, its maximum ``m`` and its sum ``l = sum_j exp(s_j - m)``, and
both can be kept as *running* values while the keys are read a block at a time.
When a new block raises the maximum from ``m_old`` to ``m_new``, everything
summed so far is multiplied by ``exp(m_old - m_new)``, which re-measures it
against the new maximum (lesson 12 derives this with sympy). The same factor
rescales the running weighted sum of values, so the output comes out exact.

numpy only. Shapes: Q (..., n_q, d_k), K (..., n_k, d_k), V (..., n_k, d_v).
"""

import numpy as np

from ._checks import as_array, batch_shape, same_size


def _block_size(block_size, where, name="block_size", of="keys"):
    if (
        isinstance(block_size, bool)
        or not isinstance(block_size, (int, np.integer))
        or block_size < 1
    ):
        raise ValueError(
            f"{where}: {name} must be a positive whole number of {of}, got {block_size!r}."
        )
    return int(block_size)


def online_softmax(x, block_size=128):
    """Softmax along the last axis, reading it in blocks with a running max and sum.

    One pass over the blocks keeps, for each row, the largest entry seen so far
    ``m`` and the sum ``l`` of ``exp(entry - m)`` over the entries seen so far.
    When a block raises the maximum, the old sum is multiplied by
    ``exp(m_old - m_new)``. At the end ``exp(x - m) / l`` is the softmax.

    Parameters
    ----------
    x : array_like of shape (..., n_k)
        Finite scores, one row per query.
    block_size : int
        How many entries of a row are read at a time.

    Returns
    -------
    ndarray of the same shape as ``x``
        Equal to ``attnlib.softmax(x)``; each row sums to 1.

    Examples
    --------
    >>> online_softmax([0, 0, 0, 0], block_size=2)
    array([0.25, 0.25, 0.25, 0.25])
    >>> online_softmax([1000, 1000], block_size=1)  # the running max keeps exp small
    array([0.5, 0.5])
    """
    x = as_array(x, "x", "online_softmax", min_ndim=1)
    block_size = _block_size(block_size, "online_softmax")
    m = np.full(x.shape[:-1] + (1,), -np.inf)  # (..., 1) running max of each row
    # (..., 1) running sum of exp(x - m): l as in the FlashAttention paper
    l = np.zeros(x.shape[:-1] + (1,))  # noqa: E741
    for start in range(0, x.shape[-1], block_size):
        x_b = x[..., start : start + block_size]  # (..., b)
        m_new = np.maximum(m, x_b.max(axis=-1, keepdims=True))
        # exp(m_old - m_new) re-measures the old sum against the new max (0 on the first block)
        l = l * np.exp(m - m_new) + np.exp(x_b - m_new).sum(axis=-1, keepdims=True)  # noqa: E741
        m = m_new
    return np.exp(x - m) / l


def blocked_attention(Q, K, V, block_size=128, query_block_size=1024):
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
        How many keys (and their values) are read at a time.
    query_block_size : int
        How many queries are answered at a time. Each block of queries is
        independent of the others: only the keys need the online softmax.

    Returns
    -------
    output : ndarray of shape (..., n_q, d_v)
        ``softmax(Q K^T / sqrt(d_k)) V``.

    Examples
    --------
    Two equal keys share the weight: the output is the mean of the two values.

    >>> blocked_attention([[1, 0]], [[2, 0], [2, 0]], [[4, 0], [0, 2]], block_size=1)
    array([[2., 1.]])
    """
    where = "blocked_attention"
    Q, K, V = as_array(Q, "Q", where), as_array(K, "K", where), as_array(V, "V", where)
    same_size("d_k", where, Q=Q.shape[-1], K=K.shape[-1])
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(
            f"{where}: n_k must match, but K has {K.shape[-2]} rows and V has "
            f"{V.shape[-2]}. Each key needs one value."
        )
    batch_shape(where, Q=Q, K=K)
    batch_shape(where, K=K, V=V)
    batch = batch_shape(where, Q=Q, V=V)
    batch = np.broadcast_shapes(batch, K.shape[:-2])
    block_size = _block_size(block_size, where)
    query_block_size = _block_size(query_block_size, where, "query_block_size", "queries")
    n_q, d_v = Q.shape[-2], V.shape[-1]
    output = np.empty((*batch, n_q, d_v))
    for start in range(0, n_q, query_block_size):
        rows = slice(start, start + query_block_size)
        output[..., rows, :] = _attend_over_key_blocks(Q[..., rows, :], K, V, block_size)
    return output  # (..., n_q, d_v)


def _attend_over_key_blocks(Q, K, V, block_size):
    """Online softmax over blocks of keys for one block of (checked) queries."""
    d_k, n_q, n_k, d_v = Q.shape[-1], Q.shape[-2], K.shape[-2], V.shape[-1]
    batch = np.broadcast_shapes(Q.shape[:-2], K.shape[:-2], V.shape[:-2])
    m = np.full((*batch, n_q, 1), -np.inf)  # running max of each query's scores
    # running sum of exp(score - m), the softmax's denominator so far
    l = np.zeros((*batch, n_q, 1))  # noqa: E741
    acc = np.zeros((*batch, n_q, d_v))  # running sum of exp(score - m) * value row
    for start in range(0, n_k, block_size):
        K_b = K[..., start : start + block_size, :]  # (b, d_k)
        V_b = V[..., start : start + block_size, :]  # (b, d_v)
        S_b = Q @ np.swapaxes(K_b, -1, -2)  # (n_q, d_k) @ (d_k, b) -> (n_q, b)
        S_b /= np.sqrt(d_k)
        m_new = np.maximum(m, S_b.max(axis=-1, keepdims=True))  # (n_q, 1)
        # exp(m_old - m_new) <= 1 re-measures the old sums against the new max
        # (it is exp(-inf) = 0 on the first block, when nothing has been summed yet)
        old_to_new = np.exp(m - m_new)  # (n_q, 1)
        S_b -= m_new  # every entry <= 0 now, so exp cannot overflow
        P_b = np.exp(S_b, out=S_b)  # (n_q, b), in place: no second block-sized array
        l = l * old_to_new + P_b.sum(axis=-1, keepdims=True)  # noqa: E741
        acc = acc * old_to_new + P_b @ V_b  # (n_q, b) @ (b, d_v) -> (n_q, d_v)
        m = m_new
    return acc / l  # (n_q, d_v): divide by the softmax's denominator once, at the end
