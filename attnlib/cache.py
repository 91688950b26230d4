"""A key-value cache for decoding one token at a time (numpy only).

A decoder that writes token t needs the keys and values of tokens 0 to t. Those of the
earlier tokens never change (the causal mask keeps every token blind to later ones), so a
decoder keeps them: each step appends the new token's key and value and attends with the
new query over everything kept so far. This module holds one head's cache; a model keeps
one per layer and key-value head, which is where the memory formula
``2 x layers x n x kv_heads x d_head x bytes`` comes from (lesson 21). ``RingKVCache`` keeps
only the last ``w`` tokens, for sliding-window attention (lesson 23).
"""

import numpy as np

from ._checks import as_array, whole_number

_FLOATS = (np.float16, np.float32, np.float64)


def _float_dtype(dtype, where):
    try:
        dtype = np.dtype(dtype)
    except TypeError:
        raise TypeError(
            f"{where}: dtype must be float16, float32 or float64, got {dtype!r}."
        ) from None
    if dtype not in _FLOATS:
        raise TypeError(f"{where}: dtype must be float16, float32 or float64, got {dtype.name}.")
    return dtype


def _new_rows(k, v, d_k, d_v, where):
    """The new tokens' keys and values as matrices of rows, checked against the cache's widths."""
    k, v = as_array(k, "k", where, min_ndim=1), as_array(v, "v", where, min_ndim=1)
    for x, name in ((k, "k"), (v, "v")):
        if x.ndim > 2:
            raise ValueError(
                f"{where}: {name} must be one row or a matrix of rows (one per new token), "
                f"got shape {x.shape}."
            )
    k, v = np.atleast_2d(k), np.atleast_2d(v)  # (d,) -> (1, d): one new token
    for x, name, width, symbol in ((k, "k", d_k, "d_k"), (v, "v", d_v, "d_v")):
        if x.shape[-1] != width:
            raise ValueError(
                f"{where}: {name} has {x.shape[-1]} columns, but this cache keeps rows of "
                f"width {symbol} = {width}."
            )
    if k.shape[0] != v.shape[0]:
        raise ValueError(
            f"{where}: k has {k.shape[0]} rows and v has {v.shape[0]}; each key needs one value."
        )
    return k, v


class KVCache:
    """The keys and values of the tokens read so far, one row per token, up to ``max_len``.

    The memory is set aside once (``max_len`` rows), as vLLM, TensorRT-LLM and the
    static cache of Hugging Face transformers do (its default cache concatenates
    instead), so appending never copies what is already stored. Rows are kept in the
    cache's ``dtype``: a float32 cache hands back float32 keys and values.

    Parameters
    ----------
    max_len : int
        The most tokens the cache can hold.
    d_k, d_v : int
        The width of a key and of a value.
    dtype : float16, float32 or float64, default float64

    Attributes
    ----------
    keys : ndarray of shape (n, d_k)
        The keys of the ``n`` tokens appended so far, oldest first (a read-only view).
    values : ndarray of shape (n, d_v)
        Their values, in the same order (a read-only view).

    Examples
    --------
    Birds' and eat's keys and values from the worked example:

    >>> cache = KVCache(max_len=3, d_k=2, d_v=2)
    >>> cache.append([3, 0], [0, 4])  # birds: k = (3, 0), v = (0, 4)
    >>> cache.append([1, 2], [4, 2])  # eat
    >>> len(cache)
    2
    >>> cache.keys
    array([[3., 0.],
           [1., 2.]])
    >>> cache.append([[2, 1], [0, 0]], [[2, 4], [0, 0]])
    Traceback (most recent call last):
    ...
    ValueError: KVCache.append: 2 more tokens do not fit: the cache holds 2 of max_len = 3.
    """

    def __init__(self, max_len, d_k, d_v, dtype=np.float64):
        where = "KVCache"
        self.max_len = whole_number(max_len, "max_len", where)
        self.d_k = whole_number(d_k, "d_k", where)
        self.d_v = whole_number(d_v, "d_v", where)
        self.dtype = _float_dtype(dtype, where)
        self._K = np.zeros((self.max_len, self.d_k), dtype=self.dtype)  # (max_len, d_k)
        self._V = np.zeros((self.max_len, self.d_v), dtype=self.dtype)  # (max_len, d_v)
        self._n = 0

    def __len__(self):
        return self._n

    def __repr__(self):
        return (
            f"KVCache({self._n} of max_len={self.max_len} tokens, d_k={self.d_k}, "
            f"d_v={self.d_v}, dtype={self.dtype.name})"
        )

    def append(self, k, v):
        """Store the keys and values of one or more new tokens after those already kept.

        Parameters
        ----------
        k : array_like of shape (d_k,) or (n_new, d_k)
            One key (a single row) or one row per new token.
        v : array_like of shape (d_v,) or (n_new, d_v)
            Their values, one per key.
        """
        k, v = _new_rows(k, v, self.d_k, self.d_v, "KVCache.append")  # (n_new, d_k), (n_new, d_v)
        n_new = k.shape[0]
        if self._n + n_new > self.max_len:
            raise ValueError(
                f"KVCache.append: {n_new} more tokens do not fit: the cache holds {self._n} of "
                f"max_len = {self.max_len}."
            )
        self._K[self._n : self._n + n_new] = k  # cast to the cache's dtype
        self._V[self._n : self._n + n_new] = v
        self._n += n_new

    def _view(self, M):
        view = M[: self._n]  # rows 0 .. n - 1: the tokens kept so far
        view.flags.writeable = False  # a view: the cache itself stays writable
        return view

    @property
    def keys(self):
        return self._view(self._K)

    @property
    def values(self):
        return self._view(self._V)

    def read(self):
        """The keys and values kept so far: ``(keys, values)``, shapes (n, d_k) and (n, d_v).

        >>> cache = KVCache(4, d_k=2, d_v=3, dtype="float32")
        >>> cache.append([[1, 2], [3, 4]], [[1, 0, 0], [0, 1, 0]])
        >>> K, V = cache.read()
        >>> K.shape, V.shape, K.dtype
        ((2, 2), (2, 3), dtype('float32'))
        """
        return self.keys, self.values


class RingKVCache:
    """The keys and values of the last ``w`` tokens only: a ring of ``w`` slots.

    Sliding-window attention (lesson 23) lets a token see only itself and the ``w - 1``
    tokens before it, so a decoder needs no older key. Token t is written to slot
    ``t % w``: once the ring is full, each new token overwrites the oldest one. The
    memory stays ``w`` rows however many tokens pass through.

    Parameters
    ----------
    w : int
        The window: how many tokens the ring keeps.
    d_k, d_v : int
        The width of a key and of a value.
    dtype : float16, float32 or float64, default float64

    Attributes
    ----------
    keys : ndarray of shape (min(n, w), d_k)
        The live keys, oldest first (a read-only copy), after ``n`` tokens were appended.
    values : ndarray of shape (min(n, w), d_v)
        Their values, in the same order.
    positions : ndarray of int, shape (min(n, w),)
        The position of each live token in the whole sequence, oldest first.
    slot_positions : ndarray of int, shape (w,)
        The position of the token each slot holds, -1 for a slot not yet written.

    Examples
    --------
    A window of two over birds, eat and seeds: seeds overwrites birds in slot 0.

    >>> ring = RingKVCache(w=2, d_k=2, d_v=2)
    >>> ring.append([3, 0], [0, 4])  # birds
    >>> ring.append([1, 2], [4, 2])  # eat
    >>> ring.append([2, 1], [2, 4])  # seeds
    >>> ring.slot_positions, ring.positions
    (array([2, 1]), array([1, 2]))
    >>> ring.keys  # eat, then seeds
    array([[1., 2.],
           [2., 1.]])
    >>> len(ring), ring.n_seen
    (2, 3)
    """

    def __init__(self, w, d_k, d_v, dtype=np.float64):
        where = "RingKVCache"
        self.w = whole_number(w, "w", where, of=" (the number of tokens the ring keeps)")
        self.d_k = whole_number(d_k, "d_k", where)
        self.d_v = whole_number(d_v, "d_v", where)
        self.dtype = _float_dtype(dtype, where)
        self._K = np.zeros((self.w, self.d_k), dtype=self.dtype)  # (w, d_k): one slot per row
        self._V = np.zeros((self.w, self.d_v), dtype=self.dtype)  # (w, d_v)
        self._slot_positions = np.full(self.w, -1)  # (w,): -1 = not yet written
        self.n_seen = 0  # tokens appended so far, overwritten ones included

    def __len__(self):
        return min(self.n_seen, self.w)

    def __repr__(self):
        return (
            f"RingKVCache({len(self)} of w={self.w} slots live, {self.n_seen} tokens seen, "
            f"d_k={self.d_k}, d_v={self.d_v}, dtype={self.dtype.name})"
        )

    def append(self, k, v):
        """Write one or more new tokens, each into slot ``t % w`` over the oldest token.

        Parameters
        ----------
        k : array_like of shape (d_k,) or (n_new, d_k)
            One key (a single row) or one row per new token, oldest first.
        v : array_like of shape (d_v,) or (n_new, d_v)
            Their values, one per key.

        Notes
        -----
        After a chunk of several tokens the ring holds the last ``w`` of them only: the
        chunk's earlier queries would find later keys there and miss older ones, so decode
        one token per step, as lesson 23 does, or give each query its own window.
        """
        k, v = _new_rows(k, v, self.d_k, self.d_v, "RingKVCache.append")  # (n_new, d)
        for k_t, v_t in zip(k, v, strict=True):
            slot = self.n_seen % self.w  # the oldest slot once the ring is full
            self._K[slot], self._V[slot] = k_t, v_t  # cast to the cache's dtype
            self._slot_positions[slot] = self.n_seen
            self.n_seen += 1

    def _by_age(self, M):
        order = np.argsort(self._slot_positions)[self.w - len(self) :]  # live slots, oldest first
        rows = M[order]  # (min(n, w), d): a copy
        rows.flags.writeable = False
        return rows

    @property
    def keys(self):
        return self._by_age(self._K)

    @property
    def values(self):
        return self._by_age(self._V)

    @property
    def positions(self):
        return self._by_age(self._slot_positions)

    @property
    def slot_positions(self):
        view = self._slot_positions.view()
        view.flags.writeable = False
        return view

    def read(self):
        """The live keys and values, oldest first: ``(keys, values)``.

        >>> ring = RingKVCache(3, d_k=2, d_v=1, dtype="float32")
        >>> ring.append(np.arange(10).reshape(5, 2), np.arange(5).reshape(5, 1))
        >>> K, V = ring.read()
        >>> K.shape, K.dtype, V[:, 0]  # tokens 2, 3, 4 survive
        ((3, 2), dtype('float32'), array([2., 3., 4.], dtype=float32))
        """
        return self.keys, self.values
