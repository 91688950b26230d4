"""Judging answers that are data: compare them with expected values, name known mistakes.

Everything here is pure: it receives numbers, numpy arrays, strings and tuples or lists of
those (as :mod:`attnlib.selfcheck.wire` decodes them), or, for a function exercise, one
record per input (see :mod:`attnlib.selfcheck.run`), and returns a :class:`Verdict`. It
never calls a learner's code and never raises for any answer.

>>> check_array([[1, 2]], np.array([[1.0, 2.0]])).status
'passed'
>>> check_array([[2, 1]], np.array([[1.0, 2.0]]), mistakes=[("transposed", [[2, 1]])]).mistake
'transposed'
"""

import copy
import warnings
from dataclasses import dataclass

import numpy as np

from .contract import Relative
from .mistakes import MISTAKES
from .run import MEASURES, split_case
from .wire import Refused
from .wire import describe as _describe

STATUSES = ("passed", "wrong", "not attempted", "error")


@dataclass(frozen=True)
class Verdict:
    """What judging found; :mod:`attnlib.selfcheck.display` turns it into one line."""

    status: str
    mistake: str | None = None
    detail: str = ""


def passed():
    """The answer is right."""
    return Verdict("passed")


def wrong(detail, mistake=None):
    """The answer is wrong; name the ``mistake`` code when it is a known one."""
    if mistake is not None and mistake not in MISTAKES:
        raise ValueError(f"wrong: unknown mistake code {mistake!r}; add it to mistakes.py.")
    return Verdict("wrong", mistake, detail)


def not_attempted():
    """The answer is still the ``...`` placeholder."""
    return Verdict("not attempted")


def error(detail):
    """The learner's code raised, ran out of time or ended its process."""
    return Verdict("error", None, detail)


def is_placeholder(answer):
    """True for ``...``, ``None``, ``{"ellipsis": true}`` or a list/tuple holding ``...``."""
    if answer is Ellipsis or answer is None:
        return True
    if isinstance(answer, dict) and not isinstance(answer, Refused):
        return answer == {"ellipsis": True}
    if isinstance(answer, (list, tuple)):
        return any(a is Ellipsis or is_placeholder_item(a) for a in answer)
    return False


def is_placeholder_item(answer):
    """``...`` somewhere inside a list or tuple (``None`` inside is an answer, not a stub)."""
    if answer is Ellipsis or (isinstance(answer, dict) and answer == {"ellipsis": True}):
        return True
    if isinstance(answer, (list, tuple)):
        return any(is_placeholder_item(a) for a in answer)
    return False


def _pairs(mistakes):
    """Mistakes as (code, value) pairs: a dict, or a list of pairs when one code has
    several forms (e.g. ``[("transposed", S.T), ("transposed", A.T)]``)."""
    if mistakes is None:
        return []
    return list(mistakes.items()) if isinstance(mistakes, dict) else list(mistakes)


def as_numbers(answer, name="your answer"):
    """Turn an answer into a float64 array, or return a wrong Verdict saying why not.

    Lists, tuples, integers, numpy and sympy matrices of numbers are accepted.
    """
    if isinstance(answer, Refused):
        return wrong(answer.reason.replace("your answer", name, 1))
    if answer is None:
        return wrong(f"{name} is None; did a function forget to `return` its result?")
    if callable(answer) and not hasattr(answer, "__array__"):
        return wrong(f"{name} is a function; this exercise wants numbers (call it first).")
    if isinstance(answer, (str, bytes, dict, set)):
        return wrong(f"{name} is {_describe(answer)}; this exercise wants numbers.")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            arr = np.asarray(answer)
            if arr.dtype.kind == "c":
                return wrong(f"{name} holds complex numbers; the answer is real.")
            arr = np.asarray(arr, dtype=np.float64)
    except (TypeError, ValueError, OverflowError):
        return wrong(
            f"{name} ({_describe(answer)}) is not a grid of numbers "
            "(rows of different lengths, or entries that are not numbers)."
        )
    return arr


def check_dtype(answer, dtype, name="your answer"):
    """A wrong Verdict when ``answer`` is not a numpy array of ``dtype``, else None.

    For exercises about a precision: the dtype travels with the answer (see
    :mod:`attnlib.selfcheck.wire`), so a computation in a wider type that hides an
    overflow, or a result handed back in the wrong type, is seen.

    >>> check_dtype(np.zeros(2, np.float16), "float16") is None
    True
    >>> check_dtype(np.zeros(2), "float16", "weights16").detail
    'weights16 has dtype float64; this exercise is about float16, so it must be a float16 array.'
    """
    if isinstance(answer, np.ndarray) and answer.dtype.name == dtype:
        return None
    kind = f"dtype {answer.dtype.name}" if isinstance(answer, np.ndarray) else "no dtype"
    if not isinstance(answer, np.ndarray):
        kind += f" (it is {_describe(answer)})"
    return wrong(
        f"{name} has {kind}; this exercise is about {dtype}, so it must be a {dtype} array."
    )


def _close(got, want, decimals):
    """Elementwise closeness; ``decimals`` accepts answers rounded by hand, a
    :class:`~attnlib.selfcheck.contract.Relative` a relative tolerance."""
    with np.errstate(all="ignore"):
        if decimals is None:
            near = np.isclose(got, want, rtol=1e-6, atol=1e-9)
        elif isinstance(decimals, Relative):
            near = np.isclose(got, want, rtol=decimals.rtol, atol=decimals.atol)
        else:
            near = np.abs(got - want) <= 10.0**-decimals + 1e-12
    # inf equals inf and nan equals nan, so a mistake that overflows can be recognised
    return near | (got == want) | (np.isnan(got) & np.isnan(want))


def where(index):
    """Name an entry the way a learner reads a grid: ``row 1, column 2``.

    >>> where(()), where((3,)), where((1, 2)), where((0, 1, 2))
    ('the value', 'entry 3', 'row 1, column 2', 'entry [0, 1, 2]')
    """
    if not index:
        return "the value"
    if len(index) == 1:
        return f"entry {index[0]}"
    if len(index) == 2:
        return f"row {index[0]}, column {index[1]}"
    return f"entry {list(index)}"


def _first_difference(got, want, decimals, name):
    """Say where ``got`` first differs from ``want`` (same shapes), never what it should be:
    the expected value is the answer, which ``solution()`` shows on request."""
    bad = ~_close(got, want, decimals)
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    if decimals is None:
        places = ""
    elif isinstance(decimals, Relative):
        places = f" (compared to a relative {decimals.rtol:.0e})"
    else:
        places = f" (compared to {decimals} decimal{'s' * (decimals != 1)})"
    if not index:
        return f"{name} differs{places}."
    return f"{name}: {where(index)} differs{places}."


def _matches(got, want, decimals):
    want = np.asarray(want, dtype=np.float64)
    return got.shape == want.shape and bool(_close(got, want, decimals).all())


def check_array(answer, expected, mistakes=None, decimals=None, name="your answer"):
    """Compare an array answer with the expected one and name a known mistake.

    Parameters
    ----------
    answer : array_like
        What the learner passed.
    expected : array_like
        The reference, computed with ``attnlib.core``.
    mistakes : dict of str to array_like, or list of (str, array_like), optional
        Mistake code -> the value that mistake produces, tried in order. Use a list of
        pairs when one code has several forms.
    decimals : int, optional
        Accept an answer within one unit of this decimal place (hand-rounded work).
        ``None`` compares to floating-point precision.
    name : str
        How the message names the answer (``"K"`` in a tuple answer).

    Returns
    -------
    Verdict
    """
    expected = np.asarray(expected, dtype=np.float64)
    got = as_numbers(answer, name)
    if isinstance(got, Verdict):
        return got
    if _matches(got, expected, decimals):
        return passed()
    pairs = _pairs(mistakes)
    for code, value in pairs:
        if value is not None and _matches(got, value, decimals):
            return wrong("", mistake=code)
    if got.shape != expected.shape:
        return wrong(f"{name} has shape {got.shape}, expected {expected.shape}.")
    if not np.isfinite(got).all():
        index = tuple(int(i) for i in np.argwhere(~np.isfinite(got))[0])
        if "overflow" in dict(pairs) and np.isfinite(expected).all():
            return wrong("", mistake="overflow")
        return wrong(f"{name}: {where(index)} is {got[index]}, expected a finite number.")
    return wrong(_first_difference(got, expected, decimals, name))


def check_tuple(answer, expected, mistakes=None, decimals=None, names=None):
    """Check a tuple of arrays, e.g. ``(Q, K, V)``, one element at a time.

    ``mistakes`` maps each element's position to that element's ``check_array``
    mistakes dict; ``names`` names the elements in messages.
    """
    names = names or [f"item {i}" for i in range(len(expected))]
    if not isinstance(answer, (tuple, list)) or len(answer) != len(expected):
        return wrong(
            f"expected a tuple of {len(expected)} ({', '.join(names)}), got {_describe(answer)}"
            + (f" of length {len(answer)}" if isinstance(answer, (tuple, list)) else "")
            + "."
        )
    first_wrong = None
    for i, (item, want) in enumerate(zip(answer, expected, strict=True)):
        verdict = check_array(item, want, (mistakes or {}).get(i), decimals, names[i])
        if verdict.mistake is not None:
            return verdict
        if verdict.status != "passed" and first_wrong is None:
            first_wrong = verdict
    return first_wrong or passed()


def check_choice(answer, expected, options, mistakes=None):
    """Check a predict-then-check answer that is one of a few ``options`` (e.g. strings).

    ``mistakes`` maps a wrong option to its mistake code.
    """
    if isinstance(answer, Refused):
        return wrong(answer.reason)
    if isinstance(answer, str):
        answer = answer.strip().lower()
    elif isinstance(answer, (list, np.ndarray)):
        try:
            answer = tuple(np.asarray(answer).tolist())  # [7, 6] or an array -> (7, 6)
        except (TypeError, ValueError):  # rows of different lengths
            answer = tuple(answer)
    listed = ", ".join(repr(o) for o in options)
    try:
        known = answer in options
    except Exception:  # an answer that cannot be compared (e.g. a nested array)
        known = False
    if not known:
        return wrong(f"your answer {answer!r} is not one of the options: {listed}.")
    answer = options[options.index(answer)]  # the option itself, so the lookups below work
    if answer == expected:
        return passed()
    code = dict(mistakes or {}).get(answer)
    if code is not None:
        return wrong("", mistake=code)
    return wrong(f"{answer!r} is not it; run the experiment in the cell above and look again.")


def _shapes(args, names):
    parts = []
    for i, a in enumerate(args):
        label = names[i] if names and i < len(names) else f"argument {i + 1}"
        if isinstance(a, np.ndarray):
            parts.append(f"{label} {a.shape}")
        elif isinstance(a, (list, tuple, dict)):
            parts.append(f"{label} ({type(a).__name__} of {len(a)})")
        else:
            parts.append(f"{label} = {a!r}")
    return ", ".join(parts)


def _quietly(function, args):
    """Call a reference or mistake function (the course's, never the learner's) on copies."""
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return function(*copy.deepcopy(args))


def _parts(value):
    """A result as a list of float arrays (a tuple result gives one per item)."""
    items = value if isinstance(value, tuple) else (value,)
    return [np.asarray(v, dtype=np.float64) for v in items]


def _all_match(got, want, decimals):
    return len(got) == len(want) and all(
        _matches(g, w, decimals) for g, w in zip(got, want, strict=True)
    )


def _record(entry):
    """One per-input record as (key, value, record), or None when it is malformed.

    A result may carry what the child measured beside it (``"peak"``, ``"products"``,
    ``"form"``: see :func:`~attnlib.selfcheck.run.split_case`)."""
    if not isinstance(entry, dict) or isinstance(entry, Refused) or not entry:
        return None
    keys = [k for k in entry if k not in MEASURES]
    if len(keys) != 1 or (keys != ["ok"] and len(entry) != 1):
        return None
    key, value = keys[0], entry[keys[0]]
    if key == "ok":
        return key, value, entry
    if key == "error" and isinstance(value, str):
        return key, value, entry
    if key in ("timeout", "exit") and isinstance(value, (int, float)):
        return key, value, entry
    return None


def _reproduces(variant, args, got, decimals):
    """True when a mistake's function gives ``got`` (a list of float arrays) on ``args``;
    ``got`` None: the answer raised, and the mistake raises too."""
    try:
        made = _parts(_quietly(variant, args))
    except Exception:  # the mistake is impossible for these shapes (or raises, as the answer)
        return got is None
    return got is not None and _all_match(got, made, decimals)


def check_function(
    records,
    cases,
    reference,
    mistakes=(),
    decimals=None,
    arg_names=None,
    result_names=None,
    constraints=(),
):
    """Judge what a learner's function returned on every input against a reference.

    Parameters
    ----------
    records : list of dict
        One record per case from :func:`attnlib.selfcheck.run.call_cases`: ``{"ok": value}``,
        ``{"error": "Name: message"}``, ``{"timeout": seconds}`` or ``{"exit": code}``.
    cases : sequence of tuple
        The argument tuples the function was called with.
    reference : callable
        Computes the expected result from the same arguments (``attnlib.core``). When it
        returns a tuple, the learner's function must return a tuple of the same length.
    mistakes : sequence of (str, callable or None)
        Mistake code -> a function with the reference's signature that makes that mistake,
        tried in order. For ``"overflow"``, inf or nan where the reference is finite is
        recognised whatever the value (``None`` is fine).
    decimals : int, optional
        As in :func:`check_array`.
    arg_names, result_names : sequence of str, optional
        Names of the arguments and of the items of a tuple result, for messages.

    Returns
    -------
    Verdict
        A named mistake if any input reveals one; otherwise the first problem.
    """
    if isinstance(records, Refused):
        return wrong(records.reason)
    if is_placeholder(records):
        return not_attempted()
    if not isinstance(records, (list, tuple)) or len(records) != len(cases):
        return error("the results of your function could not be read (malformed record).")
    parsed = [_record(entry) for entry in records]
    if any(p is None for p in parsed):
        return error("the results of your function could not be read (malformed record).")
    problems, broken = [], []  # what differs from the reference; a constraint it breaks
    differing = []  # (args, got, on, overflowed) of every case whose result differs
    for k, (case, (key, result, entry)) in enumerate(zip(cases, parsed, strict=True)):
        how, args = split_case(case)
        on = f"on inputs {_shapes(args, arg_names)}"
        if key == "timeout":
            if any(v.status == "wrong" for v in broken):  # a rule it broke says more
                return next(v for v in broken if v.status == "wrong")
            return error(f"your function ran longer than {result:g} s {on} (an endless loop?).")
        if key == "exit":
            return error(
                f"your function called sys.exit({result}) {on}; "
                "check reports it instead of stopping."
            )
        if key == "error":
            problems.append(error(f"your function raised {result} ({on})."))
            differing.append((args, None, on, False))  # a mistake that raises here too fits
            continue
        if isinstance(result, Refused):
            problems.append(wrong(f"your function's result: {result.reason[:-1]} ({on})."))
            differing.append(None)
            continue
        if is_placeholder_item(result) or (isinstance(result, dict) and is_placeholder(result)):
            if k == 0:
                return not_attempted()
            problems.append(wrong(f"your function returned ... {on}."))
            differing.append(None)
            continue
        if result is None:
            problems.append(wrong(f"your function returned None {on}; is a `return` missing?"))
            differing.append(None)
            continue
        expected = _parts(_quietly(reference, args))
        n = len(expected)
        names = list(result_names or [f"item {i}" for i in range(n)]) if n > 1 else ["result"]
        if n == 1 and isinstance(result, tuple):
            problems.append(
                wrong(f"your function returned a tuple of {len(result)} {on}; return one array.")
            )
            differing.append(None)
            continue
        if n > 1 and (not isinstance(result, (tuple, list)) or len(result) != n):
            problems.append(
                wrong(f"your function returned {_describe(result)} {on}; expected a tuple of {n}.")
            )
            differing.append(None)
            continue
        got = []
        for item, name in zip(result if n > 1 else (result,), names, strict=True):
            g = as_numbers(item, f"your function's {name}")
            if isinstance(g, Verdict):
                problems.append(wrong(f"{g.detail[:-1]} {on}."))
                break
            got.append(g)
        if len(got) < n:
            differing.append(None)
            continue
        if _all_match(got, expected, decimals):
            for rule in constraints:
                detail = rule.check(how, args, entry, on)
                if (
                    detail is not None
                ):  # a message (wrong), or a Verdict (a rule that could not judge)
                    broken.append(detail if isinstance(detail, Verdict) else wrong(detail))
                    break
            continue
        overflowed = any(
            g.shape == e.shape and np.isfinite(e).all() and not np.isfinite(g).all()
            for g, e in zip(got, expected, strict=True)
        )
        differing.append((args, got, on, overflowed))
        for g, e, name in zip(got, expected, names, strict=True):
            if _matches(g, e, decimals):
                continue
            label = f"your function's {name}"
            if g.shape != e.shape:
                problems.append(wrong(f"{label} has shape {g.shape} {on}, expected {e.shape}."))
            elif not np.isfinite(g).all():
                problems.append(wrong(f"{label} holds inf or nan {on}."))
            else:
                problems.append(wrong(f"{_first_difference(g, e, decimals, label)[:-1]} {on}."))
            break
    # a mistake is named only when it gives the answer on every case where the answer differs
    if differing and all(d is not None for d in differing):
        on = (
            next(d[2] for d in differing if d[1] is not None)
            if any(d[1] is not None for d in differing)
            else differing[0][2]
        )
        for code, variant in mistakes:
            if code == "overflow" and all(overflowed for _, _, _, overflowed in differing):
                hit = True  # inf or nan wherever it differs, whatever else went wrong
            elif all(got is None for _, got, _, _ in differing):
                hit = False  # it only raised: the error says more than a guess
            elif variant is None:
                hit = False
            else:
                hit = all(
                    _reproduces(variant, args, got, decimals) for args, got, _, _ in differing
                )
            if hit:
                return wrong(on, mistake=code)
    if problems:
        return problems[0]
    broken.sort(key=lambda v: v.status != "wrong")  # a broken rule before one that could not judge
    return broken[0] if broken else passed()


def check_expression(records, points, reference, mistakes=(), decimals=None, names=None):
    """Judge a proof's answer: its values at ``points`` against ``reference``'s.

    Like :func:`check_function`, except that a mistake is named only when the answer
    equals that mistake at every point: two different formulas can agree at one point by
    chance, and a proof is about the formula.

    Parameters
    ----------
    records : list of dict
        The answer's value at each point, as :func:`check_function` takes them.
    points : sequence of tuple
        One value per symbol, in the order of ``names``.
    reference : callable
        The right expression's value at a point.
    mistakes : sequence of (str, callable)
        Mistake code -> that mistake's value at a point.
    decimals : int, optional
    names : sequence of str
        The symbols' names, for messages.

    Returns
    -------
    Verdict
    """
    verdict = check_function(records, points, reference, (), decimals, names)
    if verdict.status != "wrong":
        return verdict
    for code, variant in mistakes:
        if check_function(records, points, variant, (), decimals, names).status == "passed":
            return wrong("", mistake=code)
    return verdict
