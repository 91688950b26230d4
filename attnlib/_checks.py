"""Input checks shared by the public functions: one message style everywhere.

Every message starts with the public function's name, names the symbol from the
formula (Q, K, V, X, W, S, mask) and says the sizes it saw, so a learner can fix
the call without reading a traceback.
"""

import numpy as np


def _kind(x):
    return type(x).__name__


def as_array(x, name, where, min_ndim=2, allow_neg_inf=False):
    """Return ``x`` as a float64 array, or raise an error a learner can act on.

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
    """
    if x is None or x is Ellipsis:
        raise TypeError(f"{where}: {name} must be an array of numbers, got {x!r}.")
    try:
        arr = np.asarray(x)
    except ValueError as err:  # ragged nested lists
        raise ValueError(f"{where}: {name} has rows of different lengths ({err}).") from None
    if arr.dtype == bool or not (
        np.issubdtype(arr.dtype, np.integer) or np.issubdtype(arr.dtype, np.floating)
    ):
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
    arr = np.asarray(arr, dtype=np.float64)  # no copy when it is float64 already
    if np.isfinite(arr).all():  # one pass in the common case; locate the culprit otherwise
        return arr
    bad = np.isnan(arr) | np.isposinf(arr) | (np.isneginf(arr) & (not allow_neg_inf))
    if bad.any():
        index = tuple(int(i) for i in np.argwhere(bad)[0])
        raise ValueError(
            f"{where}: {name} must be finite, but {name}{list(index)} is {arr[index]}."
        )
    return arr


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


def batch_shape(where, **arrays):
    """The broadcast shape of the leading (batch, head) axes of two matrices."""
    (a, A), (b, B) = arrays.items()
    try:
        return np.broadcast_shapes(A.shape[:-2], B.shape[:-2])
    except ValueError:
        raise ValueError(
            f"{where}: the batch axes of {a} {A.shape[:-2]} and {b} {B.shape[:-2]} "
            "do not broadcast."
        ) from None


def as_mask(mask, scores_shape, where):
    """Check a boolean mask against scores of shape (..., n_q, n_k); True = may attend."""
    arr = np.asarray(mask)
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
    return np.broadcast_to(arr, scores_shape)


def no_empty_rows(allowed, where, why="its mask row is all False"):
    """Raise when some query row may attend to no key at all."""
    empty = ~allowed.any(axis=-1)  # (..., n_q)
    if empty.any():
        index = [int(i) for i in np.argwhere(empty)[0]]
        row, batch = index[-1], index[:-1]
        at = f" in batch {tuple(batch)}" if batch else ""
        raise ValueError(f"{where}: query row {row}{at} may attend to no key ({why}).")
