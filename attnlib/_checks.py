"""Input checks shared by the public functions: one message style everywhere.

Each public function checks its inputs here, once, at the door, and then calls
private kernels that check nothing. Every message starts with the name of the
public function that was called, names the symbol from the formula (Q, K, V, X,
W, S, mask) and says the sizes it saw, so a learner can fix the call without
reading a traceback.

Dtypes: float32 and float64 arrays keep their dtype; float16 is computed in
float32 and handed back as float16; integers, bools and lists are computed in
float64.
"""

import sys

import numpy as np

# the public functions that take ``mask=``: a masked array's mask belongs there
_TAKES_MASK = ("attention", "attention_weights", "attention_backward", "multi_head_attention")


def _kind(x):
    return type(x).__name__


def _is_masked_array(x):
    # numpy.ma is imported only by code that uses it: if it is not loaded, x is not one
    ma = sys.modules.get("numpy.ma")
    return ma is not None and isinstance(x, ma.MaskedArray)


def as_array(x, name, where, min_ndim=2, allow_neg_inf=False):
    """Return ``x`` as a float array, or raise an error a learner can act on.

    float16, float32 and float64 arrays keep their dtype; integers, bools and
    lists become float64.

    Parameters
    ----------
    x : array_like
        The value passed in by the caller.
    name : str
        The symbol from the formula, e.g. ``"Q"``.
    where : str
        The public function that was called, e.g. ``"qk_scores"``.
    min_ndim : int
        1 for a single row (softmax), 2 for a matrix of token rows.
    allow_neg_inf : bool
        Scores may hold ``-inf`` (the additive form of a mask); data may not.

    Examples
    --------
    >>> as_array([[1, 2]], "Q", "qk_scores").dtype
    dtype('float64')
    >>> as_array(np.ones((1, 2), dtype=np.float32), "Q", "qk_scores").dtype
    dtype('float32')
    >>> as_array([1, 2], "Q", "qk_scores")
    Traceback (most recent call last):
    ...
    ValueError: qk_scores: Q must be 2-D or more (one row per token), got shape (2,).
    """
    if x is None or x is Ellipsis:
        raise TypeError(f"{where}: {name} must be an array of numbers, got {x!r}.")
    if _is_masked_array(x):
        if where in _TAKES_MASK:
            fix = "pass the plain array, and the keys to hide as mask= (True = may attend)"
        else:
            fix = (
                f"{where} has no mask=: pass plain scores with -inf where a key is hidden "
                f"({name}.filled(-np.inf)), or use attention_weights(Q, K, mask=...)"
            )
        raise TypeError(
            f"{where}: {name} is a numpy masked array, whose mask would be silently ignored; {fix}."
        )
    try:
        arr = np.asarray(x)
    except ValueError:  # ragged nested lists
        raise ValueError(
            f"{where}: {name} has rows of different lengths; every row needs the same "
            "number of entries."
        ) from None
    if arr.dtype == bool or np.issubdtype(arr.dtype, np.integer):
        arr = arr.astype(np.float64)  # whole numbers and 0/1 flags: computed in float64
    elif not np.issubdtype(arr.dtype, np.floating):
        raise TypeError(
            f"{where}: {name} must hold real numbers, got {_kind(x)} with dtype {arr.dtype}."
        )
    if arr.ndim < min_ndim:
        what = "1-D or more" if min_ndim == 1 else f"{min_ndim}-D or more (one row per token)"
        raise ValueError(f"{where}: {name} must be {what}, got shape {arr.shape}.")
    if 0 in arr.shape:
        raise ValueError(
            f"{where}: {name} is empty (shape {arr.shape}); every axis needs at least one entry."
        )
    if np.isfinite(arr).all():  # one pass in the common case; locate the culprit otherwise
        return arr
    bad = np.isnan(arr) | np.isposinf(arr) | (np.isneginf(arr) & (not allow_neg_inf))
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{where}: {name} must be finite, but {name}{list(index)} is {arr[index]}."
        )
    return arr


def dtypes(*arrays):
    """The dtype to compute in and the dtype to hand back, for checked float arrays.

    The widest input wins (float32 with float64 gives float64). float16 is
    computed in float32: its largest number, 65504, is too small for sums of
    products and for ``exp``.

    >>> dtypes(np.ones(2, np.float16), np.ones(2, np.float16))
    (dtype('float32'), dtype('float16'))
    >>> dtypes(np.ones(2, np.float32), np.ones(2))
    (dtype('float64'), dtype('float64'))
    """
    out = np.result_type(*arrays)
    work = np.dtype(np.float32) if out == np.float16 else out
    return work, out


def whole_number(value, name, where, of=""):
    """A positive whole number (int or numpy integer, not bool), or a named error.

    The same rule everywhere: the wrong kind of object is a ``TypeError``, a
    number below 1 a ``ValueError``.

    >>> whole_number(3, "n_heads", "split_heads")
    3
    >>> whole_number(2.0, "n_heads", "split_heads")
    Traceback (most recent call last):
    ...
    TypeError: split_heads: n_heads must be a positive whole number, got 2.0.
    >>> whole_number(0, "n_q", "causal_mask")
    Traceback (most recent call last):
    ...
    ValueError: causal_mask: n_q must be a positive whole number, got 0.
    """
    rule = f"{where}: {name} must be a positive whole number{of}"
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{rule}, got {value!r}.")
    if value < 1:
        raise ValueError(f"{rule}, got {int(value)}.")
    return int(value)


def as_axis(axis, shape, where):
    """An axis of an array of ``shape`` as a number from 0 to ndim - 1, or a named error.

    >>> as_axis(-1, (2, 3), "softmax")
    1
    >>> as_axis(None, (2, 3), "softmax")
    Traceback (most recent call last):
    ...
    TypeError: softmax: axis must be a whole number (-1 for the last axis, the keys), got None.
    """
    if isinstance(axis, (bool, np.bool_)) or not isinstance(axis, (int, np.integer)):
        raise TypeError(
            f"{where}: axis must be a whole number (-1 for the last axis, the keys), got {axis!r}."
        )
    if not -len(shape) <= axis < len(shape):
        raise ValueError(f"{where}: axis {int(axis)} is out of range for shape {tuple(shape)}.")
    return int(axis) % len(shape)


def same_size(symbol, where, hint="", **sizes):
    """Raise unless every size in ``sizes`` is equal.

    >>> same_size("d_k", "qk_scores", Q=2, K=2)
    >>> same_size("d_k", "qk_scores", Q=3, K=2)
    Traceback (most recent call last):
    ...
    ValueError: qk_scores: d_k must match, but Q has 3 and K has 2.
    """
    (a, size_a), (b, size_b) = sizes.items()
    if size_a != size_b:
        raise ValueError(
            f"{where}: {symbol} must match, but {a} has {size_a} and {b} has {size_b}.{hint}"
        )


def same_n_k(where, K, V):
    """Each key needs one value: K and V have the same number of rows."""
    if K.shape[-2] != V.shape[-2]:
        raise ValueError(
            f"{where}: n_k must match, but K has {K.shape[-2]} rows and V has "
            f"{V.shape[-2]}. Each key needs one value."
        )


def batch_shape(where, **arrays):
    """The broadcast shape of the leading (batch, head) axes of two or more matrices.

    >>> batch_shape("attention", Q=np.ones((2, 3, 4)), K=np.ones((5, 4)))
    (2,)
    >>> batch_shape("attention", Q=np.ones((2, 3, 4)), K=np.ones((5, 4)), V=np.ones((3, 5, 2)))
    Traceback (most recent call last):
    ...
    ValueError: attention: the batch axes of Q (2,) and V (3,) do not broadcast.
    """
    try:
        return np.broadcast_shapes(*(A.shape[:-2] for A in arrays.values()))
    except ValueError:
        pass
    # broadcasting fails only if some pair fails: name the first such pair
    named = list(arrays.items())
    for i, (a, A) in enumerate(named):
        for b, B in named[i + 1 :]:
            try:
                np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
            except ValueError:
                raise ValueError(
                    f"{where}: the batch axes of {a} {A.shape[:-2]} and {b} {B.shape[:-2]} "
                    "do not broadcast."
                ) from None
    raise AssertionError("unreachable: pairwise broadcastable shapes broadcast together")


def as_mask(mask, scores_shape, where):
    """Check a boolean mask against scores of shape (..., n_q, n_k); True = may attend.

    Returns the mask broadcast to ``scores_shape`` (a view, no copy), after
    checking that every query row may attend to at least one key.
    """
    if _is_masked_array(mask):
        raise TypeError(
            f"{where}: mask is a numpy masked array; pass a plain boolean array "
            "(True = the query may attend to the key)."
        )
    try:
        arr = np.asarray(mask)
    except ValueError:  # ragged nested lists
        raise ValueError(
            f"{where}: mask has rows of different lengths; it needs one True/False per key "
            f"in every row, shape (..., n_q, n_k) = {tuple(scores_shape)}."
        ) from None
    if arr.dtype != bool:
        raise TypeError(
            f"{where}: mask must be boolean (True = the query may attend to the key), "
            f"got dtype {arr.dtype}."
        )
    try:
        out_shape = np.broadcast_shapes(arr.shape, scores_shape)
    except ValueError:
        out_shape = None
    if out_shape != tuple(scores_shape):
        raise ValueError(
            f"{where}: mask of shape {arr.shape} does not broadcast to the scores' "
            f"shape {tuple(scores_shape)} (..., n_q, n_k)."
        )
    allowed = np.broadcast_to(arr, scores_shape)
    no_empty_rows(allowed, where)
    return allowed


def no_empty_rows(allowed, where, why="its mask row is all False"):
    """Raise when some query row may attend to no key at all."""
    empty = ~allowed.any(axis=-1)  # (..., n_q), or a single flag for one row
    if not empty.any():
        return
    if empty.ndim == 0:  # a single row of scores
        raise ValueError(f"{where}: the row may attend to no key ({why}).")
    index = [int(i) for i in np.argwhere(empty)[0]]
    row, batch = index[-1], index[:-1]
    at = f" in batch {tuple(batch)}" if batch else ""
    raise ValueError(f"{where}: query row {row}{at} may attend to no key ({why}).")


def _scientific(log10):
    """A positive number given by its base-10 logarithm, as text: 2.5e+310."""
    exponent = int(np.floor(log10))
    return f"{10 ** (log10 - exponent):.1f}e{exponent:+d}"


def overflow_error(where, Q, K, dtype, scaled=True, names="Q and K"):
    """The error for scores ``Q K^T`` (divided by sqrt(d_k) when ``scaled``) that overflow.

    Works out the largest |score| without overflowing, from Q and K divided by
    their largest entries, so the message can say how far past the limit it is.
    """
    top_q, top_k = float(np.abs(Q).max()), float(np.abs(K).max())
    Q_unit, K_unit = Q / top_q, np.swapaxes(K / top_k, -1, -2)  # entries in [-1, 1]
    largest = 0.0
    for start in range(0, Q.shape[-2], 256):  # a few rows at a time: never an n x n matrix
        largest = max(largest, float(np.abs(Q_unit[..., start : start + 256, :] @ K_unit).max()))
    log10 = np.log10(largest) + np.log10(top_q) + np.log10(top_k)
    if scaled:
        log10 -= np.log10(Q.shape[-1]) / 2
    limit = float(np.finfo(dtype).max)
    score = "q . k / sqrt(d_k)" if scaled else "q . k"
    return ValueError(
        f"{where}: the scores overflow {np.dtype(dtype).name}: the largest |{score}| is about "
        f"{_scientific(log10)}, past the largest {np.dtype(dtype).name}, {limit:.1e}. "
        f"Scale {names} down (the largest |entries| of Q and K are {top_q:.1e} and "
        f"{top_k:.1e})."
    )


def finite_product(P, what, where):
    """Raise when a product of finite arrays overflowed to inf (or inf - inf = nan)."""
    if not np.isfinite(P).all():
        raise ValueError(
            f"{where}: {what} overflows {P.dtype.name} (some entry is inf or nan); "
            "scale the inputs down."
        )
    return P


class ScoresOverflow(ArithmeticError):
    """Raised by a kernel when finite inputs gave scores of inf or nan.

    Kernels check nothing and know no public name: the public function that
    called the kernel catches this once and raises :func:`overflow_error` under
    its own name (the einops way).
    """
