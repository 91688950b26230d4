"""The one data channel for answers: JSON text that can only ever decode to plain data.

An answer crosses from a learner's code to the judge (a child process to ``check``, a
student's kernel to ``attnlib check``) as the text ``encode`` makes, and ``decode`` turns
it back into numbers, numpy arrays, strings and tuples, lists or dicts of those. Nothing is
ever unpickled and no learner object survives the trip, so a verdict cannot be changed by
an object that lies about itself.

The format (every JSON value below, nested freely)::

    null, true, false, 3, 2.5, "text"          themselves
    {"float": "nan"} / "inf" / "-inf"          a non-finite float
    {"array": [...], "dtype": "float64", "shape": [3, 2]}
                                               a numpy array (dtype float64, float32,
                                               float16, int64 or bool; float entries written
                                               as float64 numbers, which hold float32 and
                                               float16 exactly, non-finite ones "nan", "inf",
                                               "-inf"; the dtype travels, so an exercise about
                                               half precision can judge it)
    {"tuple": [...]}, [...]                    a tuple, a list
    {"dict": {"key": ...}}                     a dict with string keys (function inputs)
    {"ellipsis": true}                         ``...``, the placeholder: not attempted
    {"refused": "one-line reason"}             something that is not data (a masked array,
                                               an object array, a function, ...)

>>> decode(encode((np.array([1.0, np.inf]), ..., "flatter")))
(array([ 1., inf]), Ellipsis, 'flatter')
>>> decode(encode(np.ma.masked_array([1.0, 2.0], mask=[True, False])))["refused"][:40]
'a masked array (numpy.ma) is not an answ'
"""

import json
import math
import numbers

import numpy as np

__all__ = ["encode", "decode", "to_data", "Refused"]

_DTYPES = {"b": "bool", "i": "int64", "u": "int64", "f": "float64"}
_FLOATS = ("float64", "float32", "float16")  # narrower floats keep their dtype
_NONFINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
_MAX_DEPTH = 32


class Refused(dict):
    """A value that is not data: ``{"refused": reason}`` (a dict, so it round-trips)."""

    def __init__(self, reason):
        super().__init__(refused=str(reason))

    @property
    def reason(self):
        return self["refused"]


def describe(obj):
    """How a message names an answer it cannot use: ``None``, ``an array of shape (3,)``."""
    if obj is None:
        return "None"
    if isinstance(obj, np.ndarray):
        return f"an array of shape {obj.shape}"
    kind = type(obj).__name__
    return f"{'an' if kind[:1].lower() in 'aeiou' else 'a'} {kind}"


def _float(x):
    x = float(x)
    if math.isfinite(x):
        return x
    return {"float": "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")}


def _entry(x):
    """One entry of a float array as JSON: finite floats as themselves, others as text."""
    if math.isfinite(x):
        return x
    return "nan" if math.isnan(x) else ("inf" if x > 0 else "-inf")


def _array(arr):
    if isinstance(arr, np.ma.MaskedArray):
        return Refused(
            "a masked array (numpy.ma) is not an answer: its hidden entries would count as "
            "correct. Hide keys with a boolean mask= argument or np.where(mask, S, -np.inf)."
        )
    kind = arr.dtype.kind
    if kind == "c":
        return Refused("your answer holds complex numbers; the answer is real.")
    if kind == "O":
        try:  # sympy numbers, Fractions, ...: numbers after all
            arr = np.asarray(arr, dtype=np.float64)
        except (TypeError, ValueError):
            return Refused(
                f"your answer ({describe(arr)} of objects) is not a grid of numbers "
                "(rows of different lengths, or entries that are not numbers)."
            )
        kind = "f"
    if kind not in _DTYPES:
        return Refused(f"your answer is an array of {arr.dtype}; this exercise wants numbers.")
    dtype = arr.dtype.name if arr.dtype.name in _FLOATS else _DTYPES[kind]
    arr = np.asarray(arr, dtype=dtype)
    flat = [_entry(float(x)) for x in arr.ravel()] if dtype in _FLOATS else arr.ravel().tolist()
    return {"array": flat, "dtype": dtype, "shape": list(arr.shape)}


def to_data(value, _depth=0):
    """``value`` as JSON-ready data (see the module docstring); never raises for learner
    objects, which become ``{"refused": reason}``."""
    if _depth > _MAX_DEPTH:
        return Refused("your answer is nested too deeply.")
    if value is None or isinstance(value, (bool, str)):
        return value
    if value is Ellipsis:
        return {"ellipsis": True}
    if isinstance(value, Refused):  # a refusal made on the learner's side travels as one
        return {"refused": value.reason}
    if isinstance(value, np.ndarray):
        return _array(value)
    if isinstance(value, np.generic):
        if isinstance(value, np.bool_):
            return bool(value)
        if value.dtype.kind in "cO" or value.dtype.name in ("float32", "float16"):
            return _array(np.asarray(value))  # a narrow float keeps its dtype: a 0-d array
        return _scalar(value)
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return _float(value)
    if isinstance(value, tuple):
        return {"tuple": [to_data(v, _depth + 1) for v in value]}
    if isinstance(value, list):
        return [to_data(v, _depth + 1) for v in value]
    if isinstance(value, dict):
        if not all(isinstance(k, str) for k in value):
            return Refused("a dict whose keys are not all strings is not an answer.")
        return {"dict": {k: to_data(v, _depth + 1) for k, v in value.items()}}
    if isinstance(value, numbers.Complex):
        return Refused("your answer holds complex numbers; the answer is real.")
    if callable(value) and not hasattr(value, "__array__"):
        return Refused("your answer is a function; this exercise wants numbers (call it first).")
    if isinstance(value, (bytes, set, frozenset)):
        return Refused(f"your answer is {describe(value)}; this exercise wants numbers.")
    # array-likes (sympy matrices, ...): ask numpy, once, for float64 numbers
    try:
        return _array(np.asarray(value, dtype=np.float64))
    except Exception:
        return Refused(f"your answer is {describe(value)}; this exercise wants numbers.")


def _scalar(value):
    if value.dtype.kind in "iu":
        return int(value)
    return _float(value)


def encode(value):
    """``value`` as JSON text; learner objects that are not data become ``refused``."""
    return json.dumps(to_data(value), allow_nan=False, separators=(",", ":"))


def _fail(what):
    raise ValueError(f"wire.decode: {what}")


def _from_array(obj):
    if set(obj) != {"array", "dtype", "shape"}:
        _fail(f"an array record has keys {sorted(obj)}, expected array, dtype, shape.")
    dtype, shape, flat = obj["dtype"], obj["shape"], obj["array"]
    if dtype not in (*_FLOATS, "int64", "bool"):
        _fail(f"dtype {dtype!r} is not float64, float32, float16, int64 or bool.")
    if not isinstance(shape, list) or not all(
        isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape
    ):
        _fail(f"shape {shape!r} is not a list of sizes.")
    if not isinstance(flat, list) or len(flat) != math.prod(shape):
        _fail(f"an array of shape {tuple(shape)} needs {math.prod(shape)} entries.")
    if dtype in _FLOATS:
        values = []
        for x in flat:
            if isinstance(x, str) and x in _NONFINITE:
                values.append(_NONFINITE[x])
            elif isinstance(x, (int, float)) and not isinstance(x, bool):
                values.append(float(x))
            else:
                _fail(f"{dtype} entry {x!r} is not a number.")
    elif dtype == "int64":
        if not all(isinstance(x, int) and not isinstance(x, bool) for x in flat):
            _fail("an int64 array holds an entry that is not an integer.")
        values = flat
    else:
        if not all(isinstance(x, bool) for x in flat):
            _fail("a bool array holds an entry that is not true or false.")
        values = flat
    with np.errstate(over="ignore"):  # a number past float16's range becomes inf, as in numpy
        arr = np.array(values, dtype=dtype).reshape(shape)
    return arr


def from_data(obj, _depth=0):
    """Inverse of :func:`to_data`; anything outside the format raises ``ValueError``."""
    if _depth > _MAX_DEPTH + 1:
        _fail("nested too deeply.")
    if obj is None or isinstance(obj, (bool, str, int, float)):
        if isinstance(obj, float) and not math.isfinite(obj):
            _fail("a bare non-finite float.")
        return obj
    if isinstance(obj, list):
        return [from_data(v, _depth + 1) for v in obj]
    if not isinstance(obj, dict):
        _fail(f"unexpected {type(obj).__name__}.")
    keys = set(obj)
    if "array" in keys:
        return _from_array(obj)
    if keys == {"tuple"} and isinstance(obj["tuple"], list):
        return tuple(from_data(v, _depth + 1) for v in obj["tuple"])
    if keys == {"float"} and obj["float"] in _NONFINITE:
        return _NONFINITE[obj["float"]]
    if keys == {"ellipsis"} and obj["ellipsis"] is True:
        return Ellipsis
    if keys == {"refused"} and isinstance(obj["refused"], str):
        return Refused(obj["refused"][:500])
    if keys == {"dict"} and isinstance(obj["dict"], dict):
        return {str(k): from_data(v, _depth + 1) for k, v in obj["dict"].items()}
    _fail(f"unknown record with keys {sorted(keys)[:5]}.")


def decode(text):
    """JSON text from :func:`encode` back to data; anything else raises ``ValueError``."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", errors="replace")
    if not isinstance(text, str):
        _fail(f"expected text, got {type(text).__name__}.")

    def no_constants(name):
        _fail(f"bare {name} is not allowed.")

    try:
        obj = json.loads(text, parse_constant=no_constants)
    except json.JSONDecodeError as err:
        _fail(f"not JSON ({err.msg} at {err.pos}).")
    except RecursionError:
        _fail("nested too deeply.")
    return from_data(obj)
