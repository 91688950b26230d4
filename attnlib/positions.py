"""Positional encodings: giving attention the order of the tokens (numpy only).

Attention by itself treats its tokens as a set (lesson 12): shuffle the rows of X
and the outputs shuffle the same way. Adding a different vector to each position,
``X + sinusoidal_positions(n, d_model)``, makes the order part of the input.
"""

import numbers

import numpy as np

from ._checks import whole_number


def sinusoidal_positions(n, d_model, base=10000):
    """The sinusoidal positional encodings of positions 0 to n - 1, one row each.

    Columns come in pairs, one pair per frequency ``w_i = base ** (-2 i / d_model)``
    for ``i = 0, ..., d_model / 2 - 1``::

        PE[p, 2 i]     = sin(p w_i)
        PE[p, 2 i + 1] = cos(p w_i)

    so ``PE[p + k]`` is ``PE[p]`` with each pair turned by the angle ``k w_i``: a
    fixed linear map that depends on k, not on p.

    Parameters
    ----------
    n : int
        Number of positions (tokens).
    d_model : int
        Width of each encoding, the width of X; must be even (sin and cos pairs).
    base : float
        Sets the slowest frequency, ``base ** (-(d_model - 2) / d_model)``; greater than 1.

    Returns
    -------
    ndarray of shape (n, d_model), float64
        Row p is added to token p's row of X.

    Examples
    --------
    Position 0 is (0, 1) in every pair: sin 0 and cos 0. With d_model = 4 the
    frequencies are 1 and 10000 ** (-1/2) = 1/100, so position 1 is
    (sin 1, cos 1, sin 0.01, cos 0.01):

    >>> sinusoidal_positions(2, 4).round(3)
    array([[0.  , 1.  , 0.  , 1.  ],
           [0.841, 0.54 , 0.01 , 1.  ]])
    >>> sinusoidal_positions(3, 5)
    Traceback (most recent call last):
    ...
    ValueError: sinusoidal_positions: d_model must be even (sin and cos pairs), got 5.
    """
    n = whole_number(n, "n", "sinusoidal_positions")
    d_model = whole_number(d_model, "d_model", "sinusoidal_positions")
    if d_model % 2:
        raise ValueError(
            f"sinusoidal_positions: d_model must be even (sin and cos pairs), got {d_model}."
        )
    if isinstance(base, (bool, np.bool_)) or not isinstance(base, numbers.Real):
        raise TypeError(f"sinusoidal_positions: base must be a real number, got {base!r}.")
    if not (np.isfinite(base) and base > 1):
        raise ValueError(
            f"sinusoidal_positions: base must be a finite number greater than 1, got {base}."
        )
    p = np.arange(n, dtype=np.float64)[:, None]  # (n, 1) positions
    i = np.arange(d_model // 2, dtype=np.float64)[None, :]  # (1, d_model / 2) pair index
    w = float(base) ** (-2 * i / d_model)  # (1, d_model / 2) frequencies, 1 down to base^(2/d - 1)
    PE = np.empty((n, d_model))  # (n, d_model)
    PE[:, 0::2] = np.sin(p * w)  # even columns: sin(p w_i)
    PE[:, 1::2] = np.cos(p * w)  # odd columns: cos(p w_i)
    return PE
