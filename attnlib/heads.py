"""Multi-head attention: split the widths into heads, attend per head, merge, project.

numpy only. Shapes follow the course glossary, with ``h`` heads of width ``d_head``:
X_q (..., n_q, d_model), X_kv (..., n_k, d_model_kv), W_Q (d_model, h * d_k),
W_K (d_model_kv, h * d_k), W_V (d_model_kv, h * d_v), W_O (h * d_v, d_out): the keys and
values are made from X_kv, so their weights take its width. Self-attention passes the same X twice;
cross-attention passes queries from one sequence and keys and values from another.

Grouped-query attention (``n_kv_heads`` < ``n_heads``) gives W_K and W_V only
``n_kv_heads`` heads: query heads ``g * group`` to ``(g + 1) * group - 1`` share key-value
head ``g``, with ``group = n_heads / n_kv_heads``. ``n_kv_heads = 1`` is multi-query
attention; ``n_kv_heads = n_heads`` is plain multi-head attention. A decoder's key-value
cache then holds ``n_kv_heads`` heads instead of ``n_heads``.
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
    whole_number,
)
from .core import _attend


def _width_per_head(width, n_heads, symbol, where):
    if width % n_heads:
        raise ValueError(
            f"{where}: {symbol} has {width} columns, which do not split evenly into "
            f"{n_heads} heads."
        )
    return width // n_heads


def split_heads(X, n_heads):
    """Cut the columns of each token row into ``n_heads`` blocks, one per head.

    Head ``h`` gets columns ``h * d_head`` to ``(h + 1) * d_head`` of every row;
    the token order inside each head is unchanged.

    Parameters
    ----------
    X : array_like of shape (..., n, d_model)
        One row per token, ``d_model = n_heads * d_head``.
    n_heads : int

    Returns
    -------
    ndarray of shape (..., n_heads, n, d_head)
        The dtype of ``X`` for float arrays; float64 for integers, bools and lists.

    Examples
    --------
    >>> split_heads([[1, 2, 3, 4], [5, 6, 7, 8], [9, 10, 11, 12]], n_heads=2)
    array([[[ 1.,  2.],
            [ 5.,  6.],
            [ 9., 10.]],
    <BLANKLINE>
           [[ 3.,  4.],
            [ 7.,  8.],
            [11., 12.]]])
    """
    X = as_array(X, "X", "split_heads")
    n_heads = whole_number(n_heads, "n_heads", "split_heads")
    _width_per_head(X.shape[-1], n_heads, "X", "split_heads")
    return _split(X, n_heads)


def _split(X, n_heads):
    """split_heads of a checked X whose width divides evenly."""
    *batch, n, d_model = X.shape
    X = X.reshape(*batch, n, n_heads, d_model // n_heads)  # (n, d_model) -> (n, h, d_head)
    return np.swapaxes(X, -2, -3)  # (n, h, d_head) -> (h, n, d_head)


def merge_heads(H):
    """Undo :func:`split_heads`: put the heads side by side again in each token row.

    Parameters
    ----------
    H : array_like of shape (..., n_heads, n, d_head)

    Returns
    -------
    ndarray of shape (..., n, n_heads * d_head)
        Row ``i`` is head 0's row ``i``, then head 1's row ``i``, and so on.
        The dtype of ``H`` for float arrays; float64 for integers, bools and lists.

    Examples
    --------
    >>> merge_heads([[[1, 2], [5, 6]], [[3, 4], [7, 8]]])
    array([[1., 2., 3., 4.],
           [5., 6., 7., 8.]])
    """
    return _merge(as_array(H, "H", "merge_heads", min_ndim=3))


def _merge(H):
    """merge_heads of a checked H."""
    *batch, n_heads, n, d_head = H.shape
    H = np.swapaxes(H, -2, -3)  # (h, n, d_head) -> (n, h, d_head)
    return H.reshape(*batch, n, n_heads * d_head)  # -> (n, h * d_head)


def multi_head_attention(X_q, X_kv, W_Q, W_K, W_V, W_O, n_heads, mask=None, n_kv_heads=None):
    """Multi-head attention: project, split into heads, attend per head, merge, project.

    Each head ``h`` computes ``softmax(Q_h K_h^T / sqrt(d_k)) V_h`` with its own
    slice of the columns of ``W_Q``, ``W_K`` and ``W_V``; ``d_k`` is the width of
    one head, not ``d_model``. The merged heads go through ``W_O``. With
    ``n_kv_heads`` (grouped-query attention) W_K and W_V have that many heads, and
    query head ``h`` uses key-value head ``h // (n_heads // n_kv_heads)``: the same
    as multi-head attention with each key-value head repeated for its group.

    Parameters
    ----------
    X_q : array_like of shape (..., n_q, d_model)
        The rows that ask (queries).
    X_kv : array_like of shape (..., n_k, d_model_kv)
        The rows that answer (keys and values). Pass ``X_q`` again for
        self-attention; another sequence for cross-attention.
    W_Q : array_like of shape (d_model, n_heads * d_k)
    W_K : array_like of shape (d_model_kv, n_kv_heads * d_k)
    W_V : array_like of shape (d_model_kv, n_kv_heads * d_v)
    W_O : array_like of shape (n_heads * d_v, d_out)
    n_heads : int
        The number of query heads.
    mask : array_like of bool, broadcastable to (..., n_heads, n_q, n_k), optional
        ``True`` where query i may attend to key j; an (n_q, n_k) mask applies to
        every head.
    n_kv_heads : int, optional
        The number of key-value heads, a divisor of ``n_heads``; ``n_heads`` when
        not given (plain multi-head attention).

    Returns
    -------
    output : ndarray of shape (..., n_q, d_out)
    weights : ndarray of shape (..., n_heads, n_q, n_k)
        One weight matrix per head; each row sums to 1. Both float32 when
        every input is float32, float16 for float16 (computed in float32),
        float64 for integers, bools, lists or any float64 input.

    Examples
    --------
    Two heads of width 1: head 0 reads column 0, head 1 reads column 1.

    >>> I = [[1, 0], [0, 1]]
    >>> output, weights = multi_head_attention([[1, 0]], [[1, 0], [0, 1]], I, I, I, I, 2)
    >>> weights.shape
    (2, 1, 2)
    >>> weights[1]  # head 1: the query's column 1 is 0, so both keys score 0
    array([[0.5, 0.5]])

    Two query heads sharing one key-value head of width 1 (multi-query attention):

    >>> _, weights = multi_head_attention([[1, 2]], [[1, 0], [0, 1]], I, [[1], [0]],
    ...                                   [[1], [1]], [[1], [1]], 2, n_kv_heads=1)
    >>> weights.round(3)  # one shared key per token, scores (1, 0); head 1's query is 2: (2, 0)
    array([[[0.731, 0.269]],
    <BLANKLINE>
           [[0.881, 0.119]]])
    """
    where = "multi_head_attention"
    n_heads = whole_number(n_heads, "n_heads", where)
    n_kv = n_heads if n_kv_heads is None else whole_number(n_kv_heads, "n_kv_heads", where)
    if n_heads % n_kv:
        raise ValueError(
            f"{where}: n_heads = {n_heads} query heads do not split into n_kv_heads = {n_kv} "
            "equal groups; n_heads must be a multiple of n_kv_heads."
        )
    X_q, X_kv = as_array(X_q, "X_q", where), as_array(X_kv, "X_kv", where)
    W_Q, W_K, W_V, W_O = (
        as_array(W, name, where, min_ndim=1)
        for W, name in ((W_Q, "W_Q"), (W_K, "W_K"), (W_V, "W_V"), (W_O, "W_O"))
    )
    for name, W in (("W_Q", W_Q), ("W_K", W_K), ("W_V", W_V), ("W_O", W_O)):
        if W.ndim != 2:
            raise ValueError(f"{where}: {name} must be 2-D, got shape {W.shape}.")
    for X, x_name, W, w_name in (
        (X_q, "X_q", W_Q, "W_Q"),
        (X_kv, "X_kv", W_K, "W_K"),
        (X_kv, "X_kv", W_V, "W_V"),
    ):
        if X.shape[-1] != W.shape[0]:
            raise ValueError(
                f"{where}: {x_name} has {X.shape[-1]} columns but {w_name} has "
                f"{W.shape[0]} rows; they must match."
            )
    if n_kv == n_heads and W_Q.shape[1] != W_K.shape[1]:
        raise ValueError(
            f"{where}: W_Q and W_K must have the same number of columns (n_heads * d_k), "
            f"but W_Q has {W_Q.shape[1]} and W_K has {W_K.shape[1]}."
        )
    d_k = _width_per_head(W_Q.shape[1], n_heads, "W_Q", where)
    if W_K.shape[1] != n_kv * d_k:
        raise ValueError(
            f"{where}: W_K must have n_kv_heads * d_k = {n_kv} * {d_k} = {n_kv * d_k} columns "
            f"(d_k = {d_k} from W_Q's {W_Q.shape[1]} columns over {n_heads} heads), "
            f"but it has {W_K.shape[1]}."
        )
    d_v = _width_per_head(W_V.shape[1], n_kv, "W_V", where)
    if W_O.shape[0] != n_heads * d_v:
        merged = "the columns of W_V" if n_kv == n_heads else f"{n_heads} * {d_v}"
        raise ValueError(
            f"{where}: W_O has {W_O.shape[0]} rows but the merged heads have "
            f"{n_heads * d_v} columns (n_heads * d_v, {merged}); they must match."
        )
    batch = batch_shape(where, X_q=X_q, X_kv=X_kv)
    h_batch = (*batch, n_heads)  # (..., h): the weights' leading axes
    allowed = None
    if mask is not None:
        allowed = as_mask(mask, (*h_batch, X_q.shape[-2], X_kv.shape[-2]), where)

    work, out = dtypes(X_q, X_kv, W_Q, W_K, W_V, W_O)
    X_q, X_kv, W_Q, W_K, W_V, W_O = (
        A.astype(work, copy=False) for A in (X_q, X_kv, W_Q, W_K, W_V, W_O)
    )
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow is named just below
        XW_Q, XW_K, XW_V = X_q @ W_Q, X_kv @ W_K, X_kv @ W_V
    Q = _split(finite_product(XW_Q, "X_q @ W_Q", where), n_heads)  # (h, n_q, d_k)
    K = _split(finite_product(XW_K, "X_kv @ W_K", where), n_kv)  # (h_kv, n_k, d_k)
    V = _split(finite_product(XW_V, "X_kv @ W_V", where), n_kv)  # (h_kv, n_k, d_v)
    group = n_heads // n_kv  # query heads per key-value head
    K, V = np.repeat(K, group, axis=-3), np.repeat(V, group, axis=-3)  # (h_kv, ...) -> (h, ...)
    try:
        heads, weights = _attend(Q, K, V, allowed)  # (h, n_q, d_v), (h, n_q, n_k)
    except ScoresOverflow:
        raise overflow_error(where, Q, K, work, names="X_q, X_kv, W_Q or W_K") from None
    with np.errstate(over="ignore", invalid="ignore"):
        output = _merge(heads) @ W_O  # (n_q, h * d_v) @ (h * d_v, d_out) -> (n_q, d_out)
    output = finite_product(output, "the merged heads @ W_O", where)
    return output.astype(out, copy=False), weights.astype(out, copy=False)
