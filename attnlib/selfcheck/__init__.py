"""Self-check for the exercise notebooks: ``check``, ``hint`` and ``solution``.

In a notebook::

    from attnlib.selfcheck import check, hint, solution

    check("x_matrix", X)    # prints one line, returns a Feedback
    hint("x_matrix")        # one more hint per call
    solution("x_matrix")    # the reference answer

``check`` prints exactly one line of fixed wording and returns a
:class:`Feedback` (``.passed``, ``.mistake``, ``.message``, ``.status``)::

    ✓ x_matrix: correct.
    ✗ x_matrix: wrong (tokens_as_columns): <a hint that names the idea>
    ✗ x_matrix: wrong: X: row 2, column 2 differs. Hint: <the first hint>
    ✗ softmax: error: your function raised ZeroDivisionError: division by zero ...
    … x_matrix: not attempted yet

A wrong answer says where it differs, never what the answer is: ``solution`` shows that.

It never lets a traceback out. The answer is turned into data first
(:mod:`~attnlib.selfcheck.wire`: numbers, arrays, strings, tuples; a masked array or an
object array is refused with a reason); a function answer is called on the exercise's
inputs in a child process that is killed at ``TIME_LIMIT`` seconds per input
(:mod:`~attnlib.selfcheck.run`), so an endless loop, ``sys.exit`` or an ``__array__``
that never returns is reported, not obeyed. The data is then judged
(:mod:`~attnlib.selfcheck.judge`) against values computed from ``attnlib``.

The package, by job:

- ``mistakes.py``: every mistake code and its hint, defined once;
- ``exercise.py``: :class:`Exercise`, an exercise as data, and its ``judge``;
- ``judge.py``: pure comparison of answers-as-data with expected values;
- ``display.py``: the one line and how it reaches a notebook;
- ``run.py``: calling a learner's function in a child process;
- ``wire.py``: the data channel (JSON, never pickle);
- ``registry.py``: the course's exercises, from the explicit list of lessons.

Adding exercises: declare them as :class:`Exercise` data in
``attnlib/checkers/lesson_NN.py`` (``EXERCISES = (...)``, in the order of the notebook's
check cells), add new mistake codes to ``mistakes.py``, and add a new lesson's notebook
stem to ``registry.LESSONS``. Compute expected answers with ``attnlib`` (never type
numbers in). ``tests/test_exercises.py`` then checks, for every exercise, that the
reference answer passes, the stub is not attempted and each declared mistake is named
with its own code. In the solution notebook, put each answer between
``### BEGIN SOLUTION`` and ``### END SOLUTION``, then regenerate ``exercises/``.
"""

import difflib

import numpy as np

from . import registry, wire
from .display import METADATA_KEY, Feedback, emit, feedback
from .exercise import Exercise
from .judge import STATUSES, Verdict, error
from .mistakes import MISTAKES
from .run import TIME_LIMIT, call_cases, expression_function

__all__ = [
    "check",
    "hint",
    "solution",
    "Feedback",
    "Exercise",
    "Verdict",
    "MISTAKES",
    "STATUSES",
    "METADATA_KEY",
    "TIME_LIMIT",
    "exercise_ids",
    "answer_data",
]

_HINTS_GIVEN = {}
_NO_ANSWER = object()


def exercise_ids():
    """Every exercise id, sorted."""
    return sorted(registry.exercises())


def _unknown(exercise_id):
    detail = f"no exercise is called {exercise_id!r}"
    close = difflib.get_close_matches(str(exercise_id), list(registry.exercises()), n=1)
    if close:
        detail += f"; did you mean {close[0]!r}?"
    return detail


def answer_data(exercise, answer, seconds=None):
    """A learner's answer as the data ``exercise.judge`` takes.

    A value goes through :mod:`~attnlib.selfcheck.wire` (so only data is judged); a
    function is called on the exercise's cases in a child process, killed at
    ``seconds`` (default ``TIME_LIMIT``) per case; a proof's sympy expression is
    evaluated at the exercise's points the same way.
    """
    if exercise.kind == "function" and callable(answer):
        return call_cases(answer, exercise.cases, TIME_LIMIT if seconds is None else seconds)
    if exercise.kind == "function" and answer is not Ellipsis and answer is not None:
        return wire.Refused(f"expected a function (def ...), got {wire.describe(answer)}.")
    if exercise.kind == "proof" and answer is not Ellipsis and answer is not None:
        # the expression is evaluated here, at the exercise's points: the judge gets numbers
        function = expression_function(answer, exercise.arg_names)
        return call_cases(function, exercise.cases, TIME_LIMIT if seconds is None else seconds)
    if _plain(answer):
        return wire.decode(wire.encode(answer))
    # any other object (a sympy matrix, or one whose __array__ may never return) becomes
    # numbers in a child process, under the same time limit as a function
    seconds = TIME_LIMIT if seconds is None else seconds
    (record,) = call_cases(lambda: answer, [()], seconds)
    if "ok" in record:
        return record["ok"]
    if "timeout" in record:
        return wire.Refused(f"your answer took longer than {seconds:g} s to turn into numbers.")
    reason = record.get("error") or f"it ended the process (exit {record.get('exit')})"
    return wire.Refused(f"your answer could not be turned into numbers: {reason}.")


_PLAIN = (int, float, str, bool, type(None), type(Ellipsis), np.bool_, np.integer, np.floating)


def _plain(value, depth=0):
    """True for numbers, strings, numpy arrays of numbers and lists/tuples of those: data
    that becomes wire text without running any code the learner wrote."""
    if type(value) in _PLAIN or isinstance(value, (np.integer, np.floating, np.bool_)):
        return True
    if type(value) is np.ndarray:
        return value.dtype.kind in "biufc"
    if type(value) in (list, tuple) and depth < 32:
        return all(_plain(v, depth + 1) for v in value)
    return False


def check(exercise_id, answer=_NO_ANSWER, quiet=False):
    """Check an answer; print one line and return a :class:`Feedback`.

    Parameters
    ----------
    exercise_id : str
        The exercise's id, as the notebook gives it.
    answer : object
        An array (or list), a tuple, a string or a function, as the exercise asks.
    quiet : bool
        Return the Feedback without printing (for tests).
    """
    exercise_id = str(exercise_id)
    try:
        exercise = registry.get(exercise_id)
        if exercise is None:
            result = feedback(exercise_id, error(_unknown(exercise_id)))
        elif answer is _NO_ANSWER:
            detail = f"pass your answer too: check({exercise_id!r}, your_answer)."
            result = feedback(exercise_id, error(detail))
        else:
            result = exercise.judge(answer_data(exercise, answer))
    except Exception as err:  # the course's own code broke: say so, never blame the learner
        detail = f"the checker failed ({type(err).__name__}: {err}); please report this."
        result = feedback(exercise_id, error(detail))
    if not quiet:
        emit(result)
    return result


def hint(exercise_id):
    """Print the next hint for an exercise (one more per call)."""
    exercise = registry.get(str(exercise_id))
    if exercise is None:
        print(f"hint: {_unknown(exercise_id)}")
        return
    given = _HINTS_GIVEN.get(exercise.id, 0)
    n = len(exercise.hints)
    index = min(given, n - 1)
    _HINTS_GIVEN[exercise.id] = given + 1
    text = f"hint {index + 1} of {n} for {exercise.id}: {exercise.hints[index]}"
    if given >= n - 1:
        text += f" (that is the last hint; solution({exercise.id!r}) shows the answer)"
    print(text)


def solution(exercise_id):
    """Print the reference answer of an exercise."""
    exercise = registry.get(str(exercise_id))
    if exercise is None:
        print(f"solution: {_unknown(exercise_id)}")
        return
    print(f"solution for {exercise.id}:")
    print(exercise.solution_text())
