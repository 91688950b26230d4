"""bfloat16 emulated in numpy (lesson 23): numpy has no bfloat16 dtype.

A bfloat16 number is the top 16 bits of a float32: 1 sign bit, float32's 8 exponent
bits and 7 of its 23 mantissa bits. So every bfloat16 number is also a float32, and
rounding a float32 to bfloat16 keeps the top 16 bits of its bit pattern, rounded to
the nearest (ties to even) by what the dropped 16 bits hold. The result is stored as
float32, as a framework shows a bfloat16 tensor converted back with ``.float()``.

numpy only.
"""

import numpy as np

_KEEP = np.uint32(0xFFFF0000)  # sign, 8 exponent bits, top 7 mantissa bits
_HALF = np.uint32(0x7FFF)  # just under half of the last kept bit: see round_to_bfloat16


def round_to_bfloat16(x):
    """Round to the nearest bfloat16 number (ties to even), returned as float32.

    The input is first converted to float32 (a float64 is rounded once there, so a
    float64 within float32's rounding of a bfloat16 tie may land on the other side).
    Then the 32-bit pattern is rounded to its top 16 bits: add ``0x7FFF`` plus the
    last kept bit and clear the low 16 bits. A dropped part above half carries into
    the kept bits; exactly half carries only when the last kept bit is 1, so a tie
    goes to the even neighbour. A carry out of the mantissa raises the exponent,
    and past bfloat16's largest number (about 3.39e38) it gives ``inf``, as
    rounding does. ``inf`` stays ``inf`` and ``nan`` stays ``nan``.

    Parameters
    ----------
    x : array_like of real numbers, any shape
        float16, float32 and float64 arrays, whole numbers and lists.

    Returns
    -------
    ndarray of float32, the shape of ``x``
        Every entry is a bfloat16 number: its low 16 bits are 0.

    Examples
    --------
    Near 1 bfloat16 numbers are ``2**-7 = 0.0078125`` apart, so 1.01 rounds to
    ``1 + 2**-7``; ``1 + 2**-8`` lies exactly halfway and goes to the even
    neighbour, 1; between 256 and 512 the step is 2, so 257 (a tie) goes to 256
    and 259 (a tie) to 260; float16 overflows at 65520, bfloat16 does not:

    >>> round_to_bfloat16([1.01, 1 + 2**-8, 257, 259, 70000])
    array([1.0078125e+00, 1.0000000e+00, 2.5600000e+02, 2.6000000e+02,
           7.0144000e+04], dtype=float32)
    >>> round_to_bfloat16([np.inf, -np.inf, np.nan, -0.0])
    array([ inf, -inf,  nan,  -0.], dtype=float32)
    """
    x = np.asarray(x)
    if x.dtype == bool or not (
        np.issubdtype(x.dtype, np.floating) or np.issubdtype(x.dtype, np.integer)
    ):
        raise TypeError(f"round_to_bfloat16: x must hold real numbers, got dtype {x.dtype}.")
    with np.errstate(over="ignore"):  # past float32's range is past bfloat16's: inf
        x32 = x.astype(np.float32)  # the float32 to round (exact for float16, small integers)
    bits = x32.view(np.uint32)  # the same 32 bits read as an unsigned integer
    last_kept = (bits >> 16) & np.uint32(1)  # lowest bfloat16 mantissa bit: 1 if odd
    with np.errstate(over="ignore"):  # a nan's pattern may wrap; nan is restored below
        rounded = ((bits + _HALF + last_kept) & _KEEP).view(np.float32)
    return np.where(np.isnan(x32), np.float32(np.nan), rounded).astype(np.float32)
