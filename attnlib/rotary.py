"""Rotary position embeddings (RoPE): turn each query and key by its position (numpy only).

Lesson 12 added a position vector to each row of X. A rotary model instead turns the
queries and keys themselves: the pair of columns i of the row at position p is rotated by
the angle ``p theta_i``, with ``theta_i = base ** (-2 i / d)``. A rotation by ``p theta``
followed by the inverse of one by ``r theta`` is a rotation by ``(p - r) theta``, so the
score of a query at position p with a key at position r depends on the positions only
through ``p - r``.

Two layouts are in use. ``"interleaved"`` pairs neighbouring columns (0, 1), (2, 3), ...
(the RoFormer paper, GPT-J). ``"half"`` pairs column i with column ``i + d / 2``, so the
two halves turn together (GPT-NeoX, and the Llama code of Hugging Face transformers). The
two are the same rotation with the columns in another order.
"""

import numbers

import numpy as np

from ._checks import as_array, dtypes, whole_number

LAYOUTS = ("interleaved", "half")


def _check_base(base, where):
    if isinstance(base, (bool, np.bool_)) or not isinstance(base, numbers.Real):
        raise TypeError(f"{where}: base must be a real number, got {base!r}.")
    if not (np.isfinite(base) and base > 1):
        raise ValueError(f"{where}: base must be a finite number greater than 1, got {base}.")
    return float(base)


def _check_positions(positions, where):
    """The positions as a float64 vector (n,), or a named error."""
    if positions is None or isinstance(positions, (str, bytes)):
        raise TypeError(f"{where}: positions must be numbers, one per row, got {positions!r}.")
    p = np.asarray(positions)
    if p.dtype == bool or not (
        np.issubdtype(p.dtype, np.integer) or np.issubdtype(p.dtype, np.floating)
    ):
        raise TypeError(
            f"{where}: positions must be whole or real numbers, one per row, got dtype {p.dtype}."
        )
    if p.ndim != 1:
        raise ValueError(
            f"{where}: positions must be 1-D, one position per row, got shape {p.shape}."
        )
    if not np.isfinite(p).all():
        raise ValueError(f"{where}: positions must be finite, got {p.tolist()}.")
    return p.astype(np.float64)


def _angles(p, d, base):
    """``p theta_i`` for checked inputs: (n,) positions -> (n, d / 2) angles, float64."""
    i = np.arange(d // 2, dtype=np.float64)  # (d / 2,) pair index
    theta = base ** (-2 * i / d)  # (d / 2,) angle per position step, 1 down to base^(2/d - 1)
    return p[:, None] * theta[None, :]  # (n, 1) * (1, d / 2) -> (n, d / 2)


def rotary_angles(positions, d, base=10000.0):
    """The angle by which each pair of columns turns at each position: ``p theta_i``.

    ``theta_i = base ** (-2 i / d)`` for the pairs ``i = 0, ..., d / 2 - 1``: the first
    pair turns by 1 radian per position, the last by ``base ** (-(d - 2) / d)``: about
    ``1 / base`` only for large d (``d = 128``: ``1.15 / base``; ``d = 4``: ``100 / base``).

    Parameters
    ----------
    positions : array_like of shape (n,)
        One position per row: whole numbers, or any real numbers (for example positions
        divided by a factor to reach past the longest trained position).
    d : int
        The width of the rows to rotate, d_k; even (one angle per pair of columns).
    base : float
        Greater than 1; sets the slowest pair's step, ``base ** (-(d - 2) / d)``.

    Returns
    -------
    ndarray of shape (n, d / 2), float64
        Entry ``[j, i]`` is ``positions[j] * theta_i``.

    Examples
    --------
    With d = 4 the two pairs step by 1 and ``10000 ** (-1/2) = 0.01`` radians:

    >>> rotary_angles([0, 1, 2], 4)
    array([[0.  , 0.  ],
           [1.  , 0.01],
           [2.  , 0.02]])
    >>> rotary_angles([0, 1], 3)
    Traceback (most recent call last):
    ...
    ValueError: rotary_angles: d must be even (columns turn in pairs), got 3.
    """
    where = "rotary_angles"
    p = _check_positions(positions, where)
    d = whole_number(d, "d", where)
    if d % 2:
        raise ValueError(f"{where}: d must be even (columns turn in pairs), got {d}.")
    return _angles(p, d, _check_base(base, where))


def apply_rotary(X, positions, base=10000.0, layout="interleaved"):
    """Rotate each row of X by its position: the rotary embedding of queries or keys.

    Pair i of the row at position p is turned by the angle ``p theta_i``,
    ``theta_i = base ** (-2 i / d)``, counterclockwise::

        (x_a, x_b) -> (x_a cos(p theta_i) - x_b sin(p theta_i),
                       x_a sin(p theta_i) + x_b cos(p theta_i))

    with ``(a, b) = (2 i, 2 i + 1)`` for ``layout="interleaved"`` and
    ``(a, b) = (i, i + d / 2)`` for ``layout="half"``. Rotate Q with the queries'
    positions and K with the keys' positions, then score as usual: ``q_p . k_r`` then
    depends on the positions only through ``p - r``.

    Parameters
    ----------
    X : array_like of shape (..., n, d)
        Queries or keys, one row per token; d even. Leading axes (batch, heads) share
        the positions.
    positions : array_like of shape (n,)
        The position of each row: whole or real numbers, any order.
    base : float
        Greater than 1 (10000 in most models).
    layout : {"interleaved", "half"}
        Which columns form a pair (see above).

    Returns
    -------
    ndarray of shape (..., n, d)
        float32 in, float32 out (the angles are computed in float64 first); float16 in,
        float16 out, computed in float32; integers and lists give float64.

    Examples
    --------
    One pair (d = 2, theta_0 = 1): position pi / 2 turns (1, 0) a quarter turn to (0, 1)
    and (0, 1) on to (-1, 0); position 0 leaves a row as it is:

    >>> apply_rotary([[1, 0], [1, 0], [0, 1]], [0, np.pi / 2, np.pi / 2]).round(3) + 0.0
    array([[ 1.,  0.],
           [ 0.,  1.],
           [-1.,  0.]])

    The two layouts pair different columns: with d = 4, "half" turns column 0 with
    column 2, "interleaved" turns column 0 with column 1.

    >>> apply_rotary([[1, 0, 0, 0]], [np.pi / 2], layout="half").round(3) + 0.0
    array([[0., 0., 1., 0.]])
    >>> apply_rotary([[1, 0, 0, 0]], [np.pi / 2]).round(3) + 0.0
    array([[0., 1., 0., 0.]])
    >>> apply_rotary(np.ones((2, 4)), [0, 1, 2])
    Traceback (most recent call last):
    ...
    ValueError: apply_rotary: n must match, but X has 2 rows and positions has 3 entries.
    """
    where = "apply_rotary"
    X = as_array(X, "X", where)
    p = _check_positions(positions, where)
    base = _check_base(base, where)
    if not isinstance(layout, str) or layout not in LAYOUTS:
        raise ValueError(f"{where}: layout must be 'interleaved' or 'half', got {layout!r}.")
    n, d = X.shape[-2:]
    if d % 2:
        raise ValueError(f"{where}: d must be even (columns turn in pairs), but X has {d} columns.")
    if p.shape[0] != n:
        raise ValueError(
            f"{where}: n must match, but X has {n} rows and positions has {p.shape[0]} entries."
        )
    work, out = dtypes(X)
    angles = _angles(p, d, base)  # (n, d / 2), float64 even for float32 rows: p can be large
    cos, sin = np.cos(angles).astype(work), np.sin(angles).astype(work)  # (n, d / 2) each
    return _rotate(X.astype(work, copy=False), cos, sin, layout).astype(out, copy=False)


def _rotate(X, cos, sin, layout):
    """Turn the pairs of checked rows X (..., n, d) by angles given as cos, sin (n, d / 2)."""
    half = X.shape[-1] // 2
    if layout == "interleaved":
        a, b = X[..., 0::2], X[..., 1::2]  # (..., n, d / 2): columns 2i and 2i + 1
    else:
        a, b = X[..., :half], X[..., half:]  # (..., n, d / 2): columns i and i + d / 2
    Y = np.empty_like(X)  # (..., n, d)
    a_turned, b_turned = a * cos - b * sin, a * sin + b * cos  # the 2 x 2 rotation per pair
    if layout == "interleaved":
        Y[..., 0::2], Y[..., 1::2] = a_turned, b_turned
    else:
        Y[..., :half], Y[..., half:] = a_turned, b_turned
    return Y
