"""Self-check for the exercise notebooks: ``check``, ``hint`` and ``solution``.

In a notebook::

    from attnlib.selfcheck import check, hint, solution

    check("scores", S)      # prints one line, returns a Feedback
    hint("scores")          # one more hint per call
    solution("scores")      # the reference answer

``check`` prints exactly one line of fixed wording and returns a
:class:`Feedback` (``.passed``, ``.mistake``, ``.message``, ``.status``)::

    ✓ scores: correct.
    ✗ scores: wrong (transposed): <a hint that names the idea>
    ✗ scores: wrong: entry [0, 1] is 6, expected 9.
    ✗ softmax: error: your function raised ZeroDivisionError: division by zero ...
    … scores: not attempted yet

It never lets a traceback out: whatever the learner passes (a list, ``None``,
``...``, the wrong shape, a function that raises or never returns) becomes one
line. In Jupyter the line also carries a machine-readable record in the output's
metadata (key ``"attnlib_check"``), which ``attnlib check`` reads.

Adding the checkers for a new lesson (one file per lesson, nothing shared to edit)
---------------------------------------------------------------------------------
Create ``attnlib/checkers/lesson_NN.py`` (any module name not starting with ``_``
works; every module in ``attnlib/checkers/`` is imported the first time ``check``,
``hint`` or ``solution`` is called). In it, register each exercise id with the
:func:`exercise` decorator. The decorated function receives the learner's answer
and returns the result of one of the comparison helpers below (or
:func:`passed` / :func:`wrong` / :func:`not_attempted` / :func:`error`)::

    # attnlib/checkers/lesson_05.py
    import numpy as np

    from attnlib import example as ex
    from attnlib.core import qk_scores, softmax
    from attnlib.selfcheck import add_mistake, check_array, check_function, exercise

    S = qk_scores(ex.X @ ex.W_Q, ex.X @ ex.W_K)  # expected answers come from attnlib.core

    # a new named mistake for this lesson: its code and the hint that names the idea
    add_mistake("no_exp", "the scores were normalised without exp: softmax takes exp first.")

    @exercise(
        "softmax_row1",                      # unique across the course: prefix new ids
        hints=["Take exp of each score.", "Divide by the sum of the row's exps."],
        solution="weights = np.exp(S[0]) / np.exp(S[0]).sum()",
    )
    def _softmax_row1(answer):
        return check_array(
            answer,
            expected=softmax(S[0]),
            mistakes={"no_exp": S[0] / S[0].sum(), "unscaled": softmax(S[0])},  # code -> value
            decimals=3,  # accept answers rounded to 3 decimals (by-hand exercises)
        )

    x35 = np.random.default_rng(0).normal(size=(3, 5))  # n_q = 3 rows, n_k = 5 columns

    @exercise("my_softmax", hints=["exp, then divide by the row sum."], solution="def ...")
    def _my_softmax(answer):
        return check_function(
            answer,
            cases=[(x35,), (np.array([1.0, 2.0, 3.0]),), (1000 + x35,)],  # 1e3: overflow
            reference=softmax,
            mistakes=[  # a list of pairs when one code has several forms
                ("wrong_axis", lambda x: softmax(x, axis=0)),
                ("overflow", None),
            ],
            arg_names=("x",),
        )

Then ``check("softmax_row1", w)`` works in any notebook. Helpers:
``check_array`` (a value or matrix), ``check_tuple`` (e.g. ``(Q, K, V)``),
``check_choice`` (predict-then-check: one of a few options, e.g. strings),
``check_function`` (a function; tuple results are compared item by item, each call
gets fresh copies of the inputs, runs under ``TIME_LIMIT`` with its prints and
warnings swallowed). Rules:

- Ids are unique across the course (a duplicate raises when the checkers load);
  reuse the required ids (``qkv scores scaled_scores weights output softmax
  attention``, registered in ``attnlib/checkers/formula.py``) rather than
  re-registering them. ``exercise_ids()`` lists what exists.
- Mistake codes are the keys of :data:`MISTAKES`; add new ones with
  :func:`add_mistake` at the top of your file. ``check_array`` compares the answer
  with each mistake's value in order, ``check_function`` calls each mistake's
  function with the same inputs as the reference; the first match names the
  mistake. ``"overflow": None`` in ``check_function`` means "inf or nan where the
  reference is finite".
- Compute expected answers with ``attnlib.core`` (never type numbers in).
- Test every checker: it accepts the reference answer and rejects each named
  mistake with its code (see tests/test_selfcheck.py; ``check(..., quiet=True)``
  returns the Feedback without printing).
- In the solution notebook, put each answer between ``### BEGIN SOLUTION`` and
  ``### END SOLUTION`` (see ``attnlib.generate`` for the stubs it becomes; inside a
  function, the region runs through the ``return``), then ``attnlib exercises``.
  Import with ``from attnlib.selfcheck import check, hint, solution  # noqa: F401``
  so ruff accepts the two helpers the learner calls by hand.
"""

import contextlib
import copy
import difflib
import importlib
import io
import pkgutil
import re
import signal
import threading
import warnings
from dataclasses import dataclass, field

import numpy as np

TIME_LIMIT = 5.0  # seconds a learner's function may run on one input
METADATA_KEY = "attnlib_check"  # where the machine-readable record goes in a notebook output

#: Named mistakes: code -> the hint that names the idea that went wrong.
MISTAKES = {
    "transposed": (
        "rows and columns are swapped: scores are Q K^T (one row per query, one column "
        "per key), not K Q^T, and the weights keep one row per query."
    ),
    "unscaled": "the scores were not scaled: divide Q K^T by sqrt(d_k) before the softmax.",
    "divided_by_d_k": (
        "the scores were divided by d_k itself: the scaling divides by its square root, sqrt(d_k)."
    ),
    "multiplied": "the scores were multiplied by sqrt(d_k): the scaling divides by sqrt(d_k).",
    "wrong_axis": (
        "softmax ran down the columns: each row (one query over all keys) must sum to 1, "
        "so normalise along the last axis."
    ),
    "overflow": (
        "inf or nan on large scores: subtract each row's maximum before exp "
        "(softmax ignores shifts, and exp overflows past about 709)."
    ),
    "wrong_d": (
        "scaled with the wrong width: d_k is the width of the queries and keys, "
        "not d_model (the width of X) or d_v (the width of V)."
    ),
    "swapped_qk": "W_Q and W_K are swapped: queries are X W_Q and keys are X W_K.",
}

STATUSES = ("passed", "wrong", "not attempted", "error")


def add_mistake(code, hint):
    """Register a named mistake for a new lesson (call at the top of its checker file).

    Registering the same code again with the same hint is harmless; a different
    hint raises ``ValueError`` so two lessons cannot silently disagree.
    """
    if MISTAKES.get(code, hint) != hint:
        raise ValueError(f"add_mistake: mistake {code!r} already has a different hint.")
    MISTAKES[code] = hint


# ---------------------------------------------------------------------------------------------
# Results


@dataclass(frozen=True)
class Verdict:
    """What a checker found; ``check`` turns it into a Feedback line."""

    status: str
    mistake: str | None = None
    detail: str = ""


def passed():
    """The answer is right."""
    return Verdict("passed")


def wrong(detail, mistake=None):
    """The answer is wrong; name the ``mistake`` code when it is a known one."""
    if mistake is not None and mistake not in MISTAKES:
        raise ValueError(f"wrong: unknown mistake code {mistake!r}; register it with add_mistake.")
    return Verdict("wrong", mistake, detail)


def not_attempted():
    """The answer is still the ``...`` placeholder."""
    return Verdict("not attempted")


def error(detail):
    """The learner's code raised or ran out of time."""
    return Verdict("error", None, detail)


@dataclass(frozen=True)
class Feedback:
    """The result of one ``check``.

    Attributes
    ----------
    passed : bool
    mistake : str or None
        A key of ``MISTAKES`` when the answer matches a known mistake.
    message : str
        The one line that ``check`` printed.
    status : str
        ``"passed"``, ``"wrong"``, ``"not attempted"`` or ``"error"``.
    exercise : str
    """

    passed: bool
    mistake: str | None
    message: str
    status: str = "passed"
    exercise: str = ""
    _shown_in: object = field(default=None, repr=False, compare=False)

    def record(self):
        """The machine-readable form stored in a notebook output's metadata."""
        return {
            "exercise": self.exercise,
            "status": self.status,
            "mistake": self.mistake,
            "message": self.message,
        }

    def _ipython_display_(self):
        # check() already displayed this line in the same cell: show it once, not twice
        shell = _shell()
        if shell is not None and self._shown_in == shell.execution_count:
            return
        from IPython.display import display

        display({"text/plain": self.message}, raw=True)


def _line(exercise_id, verdict):
    if verdict.status == "passed":
        return f"✓ {exercise_id}: correct."
    if verdict.status == "not attempted":
        return f"… {exercise_id}: not attempted yet"
    if verdict.status == "error":
        return f"✗ {exercise_id}: error: {verdict.detail}"
    if verdict.mistake is not None:
        return f"✗ {exercise_id}: wrong ({verdict.mistake}): {MISTAKES[verdict.mistake]}"
    return f"✗ {exercise_id}: wrong: {verdict.detail}"


# ---------------------------------------------------------------------------------------------
# The registry and its discovery


@dataclass
class Exercise:
    id: str
    checker: object
    hints: tuple
    solution: object  # str, or a function returning str
    module: str


_REGISTRY = {}
_HINTS_GIVEN = {}
_LOAD_ERRORS = {}
_loaded = False


def exercise(exercise_id, hints, solution):
    """Decorator that registers ``checker(answer) -> Verdict`` under ``exercise_id``.

    Parameters
    ----------
    exercise_id : str
        Unique across the course.
    hints : sequence of str
        Given one per ``hint(exercise_id)`` call, from gentle to explicit.
    solution : str or callable returning str
        The reference answer as ``solution(exercise_id)`` prints it.
    """
    if not isinstance(exercise_id, str) or not re.fullmatch(r"\w+", exercise_id):
        raise ValueError(f"exercise: id must be a name like 'scaled_scores', got {exercise_id!r}.")
    if not hints:
        raise ValueError(f"exercise: {exercise_id!r} needs at least one hint.")

    def register(checker):
        module = checker.__module__.rpartition(".")[2]
        if exercise_id in _REGISTRY:
            raise ValueError(
                f"exercise id {exercise_id!r} is registered twice: in "
                f"{_REGISTRY[exercise_id].module} and in {module}."
            )
        _REGISTRY[exercise_id] = Exercise(exercise_id, checker, tuple(hints), solution, module)
        return checker

    return register


def load_checkers(strict=False):
    """Import every module of ``attnlib.checkers`` once (each registers its exercises).

    With ``strict=True`` (tests) a module that fails to import raises; otherwise the
    failure is remembered and reported by ``check`` so one broken lesson file does not
    break the others.
    """
    global _loaded
    from .. import checkers

    for info in sorted(pkgutil.iter_modules(checkers.__path__), key=lambda m: m.name):
        if info.name.startswith("_"):
            continue
        name = f"{checkers.__name__}.{info.name}"
        try:
            importlib.import_module(name)
        except Exception as err:  # a broken lesson file must not break the other lessons
            if strict:
                raise
            _LOAD_ERRORS[info.name] = f"{type(err).__name__}: {err}"
    _loaded = True
    return dict(_REGISTRY)


def _registry():
    if not _loaded:
        load_checkers()
    return _REGISTRY


def exercise_ids():
    """Every registered exercise id, sorted."""
    return sorted(_registry())


def _unknown(exercise_id):
    known = _registry()
    detail = f"no exercise is called {exercise_id!r}"
    close = difflib.get_close_matches(str(exercise_id), list(known), n=1)
    if close:
        detail += f"; did you mean {close[0]!r}?"
    if _LOAD_ERRORS:
        detail += " (some checker files failed to load: " + ", ".join(sorted(_LOAD_ERRORS)) + ")"
    return detail


# ---------------------------------------------------------------------------------------------
# The public API


_NO_ANSWER = object()


def check(exercise_id, answer=_NO_ANSWER, quiet=False):
    """Check an answer; print one line and return a :class:`Feedback`.

    Parameters
    ----------
    exercise_id : str
        The exercise's id, as the notebook gives it.
    answer : object
        An array (or list), a tuple, or a function, as the exercise asks.
    quiet : bool
        Return the Feedback without printing (for tests).
    """
    exercise_id = str(exercise_id)
    try:
        entry = _registry().get(exercise_id)
        if entry is None:
            verdict = error(_unknown(exercise_id))
        elif answer is _NO_ANSWER:
            verdict = error(f"pass your answer too: check({exercise_id!r}, your_answer).")
        elif _is_placeholder(answer):
            verdict = not_attempted()
        else:
            verdict = entry.checker(answer)
            if not isinstance(verdict, Verdict):
                raise TypeError(f"checker returned {type(verdict).__name__}, not a Verdict")
    except Exception as err:  # the checker itself broke: say so in one line, no traceback
        verdict = error(f"the checker failed ({type(err).__name__}: {err}); please report this.")
    message = _line(exercise_id, verdict)
    feedback = Feedback(
        passed=verdict.status == "passed",
        mistake=verdict.mistake,
        message=message,
        status=verdict.status,
        exercise=exercise_id,
    )
    if not quiet:
        _emit(feedback)
    return feedback


def hint(exercise_id):
    """Print the next hint for an exercise (one more per call)."""
    entry = _registry().get(str(exercise_id))
    if entry is None:
        print(f"hint: {_unknown(exercise_id)}")
        return
    given = _HINTS_GIVEN.get(entry.id, 0)
    n = len(entry.hints)
    index = min(given, n - 1)
    _HINTS_GIVEN[entry.id] = given + 1
    text = f"hint {index + 1} of {n} for {entry.id}: {entry.hints[index]}"
    if given >= n - 1:
        text += f" (that is the last hint; solution({entry.id!r}) shows the answer)"
    print(text)


def solution(exercise_id):
    """Print the reference answer of an exercise."""
    entry = _registry().get(str(exercise_id))
    if entry is None:
        print(f"solution: {_unknown(exercise_id)}")
        return
    text = entry.solution() if callable(entry.solution) else entry.solution
    print(f"solution for {entry.id}:")
    print(text)


def _shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def _emit(feedback):
    shell = _shell()
    if shell is None or not hasattr(shell, "kernel"):
        print(feedback.message)
        return
    from IPython.display import display

    display(
        {"text/plain": feedback.message},
        raw=True,
        metadata={METADATA_KEY: feedback.record()},
    )
    object.__setattr__(feedback, "_shown_in", shell.execution_count)


# ---------------------------------------------------------------------------------------------
# Shared comparison helpers for checker files


def _is_placeholder(answer):
    """True for ``...`` or a list/tuple that still holds a ``...``."""
    if answer is Ellipsis:
        return True
    if isinstance(answer, (list, tuple)):
        return any(_is_placeholder(a) for a in answer)
    return False


def _num(value):
    value = float(value) + 0.0
    if value.is_integer() and abs(value) < 1e15:
        return str(int(value))
    return f"{value:.4g}"


def _describe(obj):
    if obj is None:
        return "None"
    if isinstance(obj, np.ndarray):
        return f"an array of shape {obj.shape}"
    kind = type(obj).__name__
    return f"{'an' if kind[0] in 'aeiou' else 'a'} {kind}"


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
    except (TypeError, ValueError):
        return wrong(
            f"{name} ({_describe(answer)}) is not a grid of numbers "
            "(rows of different lengths, or entries that are not numbers)."
        )
    return arr


def _close(got, want, decimals):
    """Elementwise closeness; ``decimals`` accepts answers rounded by hand."""
    with np.errstate(all="ignore"):
        if decimals is None:
            near = np.isclose(got, want, rtol=1e-6, atol=1e-9)
        else:
            near = np.abs(got - want) <= 10.0**-decimals + 1e-12
    # inf equals inf and nan equals nan, so a mistake that overflows can be recognised
    return near | (got == want) | (np.isnan(got) & np.isnan(want))


def _first_difference(got, want, decimals, name):
    """Say where ``got`` first differs from ``want`` (same shapes)."""
    bad = ~_close(got, want, decimals)
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    places = "" if decimals is None else f" (to {decimals} decimals)"
    where = f"entry {list(index)}" if index else "the value"
    return f"{name}: {where} is {_num(got[index])}, expected {_num(want[index])}{places}."


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
        return wrong(f"{name}: entry {list(index)} is {got[index]}, expected a finite number.")
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
    if isinstance(answer, str):
        answer = answer.strip().lower()
    elif isinstance(answer, (list, np.ndarray)):
        answer = tuple(np.asarray(answer).tolist())  # [7, 6] or an array -> (7, 6)
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
    code = (mistakes or {}).get(answer)
    if code is not None:
        return wrong("", mistake=code)
    return wrong(f"{answer!r} is not it; run the experiment in the cell above and look again.")


class _TimeLimit(BaseException):
    """Raised inside a learner's function when it runs past TIME_LIMIT (not an Exception,
    so a bare ``except Exception`` in learner code cannot swallow it)."""


def call_with_limit(function, args, seconds=None):
    """Call ``function(*args)`` quietly with a time limit.

    Returns ``("ok", value)``, ``("raised", exception)`` or ``("timeout", None)``.
    Prints and warnings from the function are swallowed so ``check`` stays one line.
    In the main thread of a Unix process a timer interrupts the function; elsewhere it
    runs in a background thread that is abandoned after the limit.
    """
    seconds = TIME_LIMIT if seconds is None else seconds

    def quiet_call():
        with (
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
            warnings.catch_warnings(),
            np.errstate(all="ignore"),
        ):
            warnings.simplefilter("ignore")
            return function(*args)

    use_signal = (
        hasattr(signal, "setitimer") and threading.current_thread() is threading.main_thread()
    )
    if use_signal:

        def on_alarm(signum, frame):
            raise _TimeLimit

        previous = signal.signal(signal.SIGALRM, on_alarm)
        signal.setitimer(signal.ITIMER_REAL, seconds)
        try:
            return ("ok", quiet_call())
        except _TimeLimit:
            return ("timeout", None)
        except Exception as err:
            return ("raised", err)
        finally:
            signal.setitimer(signal.ITIMER_REAL, 0)
            signal.signal(signal.SIGALRM, previous)

    box = {}

    def run():
        try:
            box["result"] = ("ok", quiet_call())
        except Exception as err:
            box["result"] = ("raised", err)

    worker = threading.Thread(target=run, daemon=True)
    worker.start()
    worker.join(seconds)
    return box.get("result", ("timeout", None))


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
    """Call a reference or mistake function on copies of the inputs, without warnings."""
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


def check_function(
    answer, cases, reference, mistakes=None, decimals=None, arg_names=None, result_names=None
):
    """Try a learner's function on several inputs against a reference function.

    Parameters
    ----------
    answer : callable
        The learner's function.
    cases : list of tuple
        Argument tuples; include unequal shapes (n_q=3, n_k=5, d_k=4, d_v=2),
        d_model different from d_k, and large scores (around 1e3) so that a transpose,
        a wrong width or a missing max-subtraction shows. Each call gets fresh copies.
    reference : callable
        Computes the expected result from the same arguments (``attnlib.core``). When it
        returns a tuple, the learner's function must return a tuple of the same length.
    mistakes : dict of str to callable or None, or list of such pairs, optional
        Mistake code -> a function with the reference's signature that makes that
        mistake. For ``"overflow"``, inf or nan where the reference is finite is
        recognised whatever the value (``None`` is fine).
    decimals : int, optional
        As in :func:`check_array`.
    arg_names : sequence of str, optional
        Names of the arguments for messages, e.g. ``("Q", "K", "V")``.
    result_names : sequence of str, optional
        Names of the items of a tuple result, e.g. ``("Q", "K", "V")``.

    Returns
    -------
    Verdict
        A named mistake if any input reveals one; otherwise the first problem.
    """
    if not callable(answer):
        return wrong(f"expected a function (def ...), got {_describe(answer)}.")
    pairs = _pairs(mistakes)
    problems = []
    for k, args in enumerate(cases):
        on = f"on inputs {_shapes(args, arg_names)}"
        kind, result = call_with_limit(answer, copy.deepcopy(tuple(args)))
        if kind == "timeout":
            return error(f"your function ran longer than {TIME_LIMIT:g} s {on} (an endless loop?).")
        if kind == "raised":
            problems.append(
                error(f"your function raised {type(result).__name__}: {result} ({on}).")
            )
            continue
        if _is_placeholder(result):
            if k == 0:
                return not_attempted()
            problems.append(wrong(f"your function returned ... {on}."))
            continue
        if result is None:
            problems.append(wrong(f"your function returned None {on}; is a `return` missing?"))
            continue
        expected = _parts(_quietly(reference, args))
        n = len(expected)
        names = list(result_names or [f"item {i}" for i in range(n)]) if n > 1 else ["result"]
        if n == 1 and isinstance(result, tuple):
            problems.append(
                wrong(f"your function returned a tuple of {len(result)} {on}; return one array.")
            )
            continue
        if n > 1 and (not isinstance(result, (tuple, list)) or len(result) != n):
            problems.append(
                wrong(f"your function returned {_describe(result)} {on}; expected a tuple of {n}.")
            )
            continue
        got = []
        for item, name in zip(result if n > 1 else (result,), names, strict=True):
            g = as_numbers(item, f"your function's {name}")
            if isinstance(g, Verdict):
                problems.append(wrong(f"{g.detail[:-1]} {on}."))
                break
            got.append(g)
        if len(got) < n:
            continue
        if _all_match(got, expected, decimals):
            continue
        overflowed = any(
            g.shape == e.shape and np.isfinite(e).all() and not np.isfinite(g).all()
            for g, e in zip(got, expected, strict=True)
        )
        for code, variant in pairs:
            if code == "overflow" and overflowed:
                hit = True
            elif variant is None:
                hit = False
            else:
                try:
                    hit = _all_match(got, _parts(_quietly(variant, args)), decimals)
                except Exception:  # the mistake is impossible for these shapes
                    hit = False
            if hit:
                return wrong(on, mistake=code)
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
    return problems[0] if problems else passed()
