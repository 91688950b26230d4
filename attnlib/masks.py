"""Boolean attention masks: which keys each query may attend to (numpy only).

A mask has the scores' shape (..., n_q, n_k), or broadcasts to it, and holds
``True`` where query i may attend to key j (PyTorch's convention). Masks combine
with ``&``: ``causal_mask(3) & padding_mask([3, 2], n_k=3)`` has shape (2, 3, 3).
``attnlib.attention(Q, K, V, mask=...)`` takes any of them.
``sliding_window_mask`` keeps each query to the ``w`` nearest keys (lesson 28).
"""

import numpy as np

from ._checks import whole_number


def causal_mask(n_q, n_k=None, *, align="top_left"):
    """Query i may attend only to keys at or before its own position: no looking ahead.

    Parameters
    ----------
    n_q : int
        Number of queries (rows).
    n_k : int, optional
        Number of keys (columns); defaults to ``n_q``.
    align : {"top_left", "bottom_right"}
        Where the diagonal starts when ``n_q != n_k``.

        - ``"top_left"``: query i sees keys ``j <= i``, what PyTorch's
          ``is_causal`` does; a query past the last key sees every key.
        - ``"bottom_right"``: query i sees keys ``j <= n_k - n_q + i``, so the
          last query sees every key: the queries are the newest n_q tokens of
          n_k, as when keys and values are cached while generating. With more
          queries than keys, the first ``n_q - n_k`` rows see no key, and
          attention refuses such a mask with a named error.

    Returns
    -------
    ndarray of bool, shape (n_q, n_k)
        ``True`` where query i may attend to key j. Square masks are the same
        for both alignments: ``True`` on and below the diagonal.

    Examples
    --------
    >>> causal_mask(3)
    array([[ True, False, False],
           [ True,  True, False],
           [ True,  True,  True]])

    Two queries, four keys. Top-left: query 0 sees key 0 only. Bottom-right:
    the two queries are tokens 2 and 3 of four, so query 0 sees keys 0 to 2.

    >>> causal_mask(2, 4).astype(int)
    array([[1, 0, 0, 0],
           [1, 1, 0, 0]])
    >>> causal_mask(2, 4, align="bottom_right").astype(int)
    array([[1, 1, 1, 0],
           [1, 1, 1, 1]])
    """
    n_q = whole_number(n_q, "n_q", "causal_mask")
    n_k = n_q if n_k is None else whole_number(n_k, "n_k", "causal_mask")
    _check_align(align, "causal_mask")
    i = np.arange(n_q)[:, None]  # (n_q, 1) query positions
    j = np.arange(n_k)[None, :]  # (1, n_k) key positions
    if align == "bottom_right":
        return j <= n_k - n_q + i  # (n_q, n_k): the last query sees every key
    return j <= i  # (n_q, n_k)


def _check_align(align, where):
    if not isinstance(align, str):
        raise TypeError(f"{where}: align must be 'top_left' or 'bottom_right', got {align!r}.")
    if align not in ("top_left", "bottom_right"):
        raise ValueError(f"{where}: align must be 'top_left' or 'bottom_right', got {align!r}.")


def sliding_window_mask(n_q, n_k=None, *, w, causal=True, align="top_left"):
    """Query i may attend only to the ``w`` keys nearest its own position: a sliding window.

    Parameters
    ----------
    n_q : int
        Number of queries (rows).
    n_k : int, optional
        Number of keys (columns); defaults to ``n_q``.
    w : int
        The window, 1 or more. Causal: a query sees ``w`` keys, its own and the
        ``w - 1`` before it (the convention of the Hugging Face transformers library).
        Not causal: it sees keys less than ``w`` places away on either side,
        ``2 w - 1`` keys away from the edges.
    causal : bool, default True
        ``True``: never a key after the query. ``False``: the window alone.
    align : {"top_left", "bottom_right"}
        Where query i sits when ``n_q != n_k``, as in :func:`causal_mask`: at
        position ``p = i`` (top-left) or ``p = n_k - n_q + i`` (bottom-right, the
        queries are the newest ``n_q`` of ``n_k`` tokens, as with a cache).

    Returns
    -------
    ndarray of bool, shape (n_q, n_k)
        ``True`` where query i may attend to key j: ``p - w < j <= p`` when causal,
        ``|p - j| < w`` when not. With ``w >= n_k`` the causal window is
        :func:`causal_mask`.

    Examples
    --------
    Five tokens, a window of two: each sees itself and the one before.

    >>> sliding_window_mask(5, w=2).astype(int)
    array([[1, 0, 0, 0, 0],
           [1, 1, 0, 0, 0],
           [0, 1, 1, 0, 0],
           [0, 0, 1, 1, 0],
           [0, 0, 0, 1, 1]])
    >>> sliding_window_mask(3, w=2, causal=False).astype(int)
    array([[1, 1, 0],
           [1, 1, 1],
           [0, 1, 1]])

    Two new tokens over a cache of five (bottom-right): they sit at positions 3 and 4.

    >>> sliding_window_mask(2, 5, w=2, align="bottom_right").astype(int)
    array([[0, 0, 1, 1, 0],
           [0, 0, 0, 1, 1]])
    """
    where = "sliding_window_mask"
    n_q = whole_number(n_q, "n_q", where)
    n_k = n_q if n_k is None else whole_number(n_k, "n_k", where)
    w = whole_number(w, "w", where, of=" (the number of keys a query may see)")
    if not isinstance(causal, (bool, np.bool_)):
        raise TypeError(f"{where}: causal must be True or False, got {causal!r}.")
    _check_align(align, where)
    offset = n_k - n_q if align == "bottom_right" else 0
    p = np.arange(n_q)[:, None] + offset  # (n_q, 1) query positions
    j = np.arange(n_k)[None, :]  # (1, n_k) key positions
    if causal:
        return (j > p - w) & (j <= p)  # (n_q, n_k): the w keys up to and including p
    return np.abs(p - j) < w  # (n_q, n_k): fewer than w places away, either side


def padding_mask(valid, n_k=None):
    """Hide padded keys: each query may attend only to the real tokens.

    Parameters
    ----------
    valid : int, sequence of int, or array_like of bool of shape (..., n_k)
        Either the true length of each sequence (keys ``0..length-1`` are
        real), or one flag per key, ``True`` for a real token.
    n_k : int, optional
        Padded length, needed with lengths; defaults to the largest length.
        Must not be given with flags (their last axis is n_k).

    Returns
    -------
    ndarray of bool, shape (..., 1, n_k)
        The axis of length 1 stands for the queries, so the mask broadcasts
        to scores of shape (..., n_q, n_k) and combines with ``causal_mask``.

    Examples
    --------
    >>> padding_mask([3, 1]).astype(int)
    array([[[1, 1, 1]],
    <BLANKLINE>
           [[1, 0, 0]]])
    >>> padding_mask([True, True, False]).astype(int)
    array([[1, 1, 0]])
    """
    try:
        arr = np.asarray(valid)
    except ValueError:  # ragged nested lists of flags
        raise ValueError(
            "padding_mask: valid has rows of different lengths; flags need one entry per "
            "key in every row."
        ) from None
    if arr.dtype == bool:
        if arr.ndim == 0 or arr.shape[-1] == 0:
            raise ValueError(
                f"padding_mask: valid flags need one entry per key, got shape {arr.shape}."
            )
        if n_k is not None:
            raise ValueError(
                "padding_mask: give n_k only with lengths; flags of shape "
                f"{arr.shape} already have n_k = {arr.shape[-1]}."
            )
        return arr[..., None, :]  # (..., n_k) -> (..., 1, n_k)
    if not np.issubdtype(arr.dtype, np.integer) or arr.ndim > 1 or arr.size == 0:
        raise TypeError(
            "padding_mask: valid must be lengths (an int or a 1-D list of ints) or "
            f"boolean flags, got {type(valid).__name__} with dtype {arr.dtype} "
            f"and shape {arr.shape}."
        )
    if (arr < 0).any():
        raise ValueError(f"padding_mask: lengths must be 0 or more, got {arr.tolist()}.")
    n_k = int(arr.max()) if n_k is None else whole_number(n_k, "n_k", "padding_mask")
    if (arr > n_k).any():
        raise ValueError(f"padding_mask: lengths {arr.tolist()} do not fit in n_k = {n_k} keys.")
    lengths = arr[..., None, None]  # (batch, 1, 1), or (1, 1) for one int
    return np.arange(n_k) < lengths  # (batch, 1, n_k)


def additive_mask(mask):
    """The additive form of a boolean mask: 0 where allowed, ``-inf`` where not.

    Adding it to the scores before softmax gives the same weights as the
    boolean mask, because ``exp(-inf) = 0``.

    Parameters
    ----------
    mask : array_like of bool
        ``True`` where the query may attend to the key.

    Returns
    -------
    ndarray of float64, same shape as ``mask``

    Examples
    --------
    >>> additive_mask([[True, False], [True, True]])
    array([[  0., -inf],
           [  0.,   0.]])
    """
    try:
        arr = np.asarray(mask)
    except ValueError:  # ragged nested lists
        raise ValueError(
            "additive_mask: mask has rows of different lengths; it needs one True/False per "
            "key in every row."
        ) from None
    if arr.dtype != bool:
        raise TypeError(
            "additive_mask: mask must be boolean (True = the query may attend to the key), "
            f"got dtype {arr.dtype}."
        )
    return np.where(arr, 0.0, -np.inf)
