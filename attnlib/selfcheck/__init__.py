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

While ``attnlib check`` grades a notebook, its kernel sees a copy of the course package
without the answer key (no ``registry``, ``mistakes``, ``judge`` or ``checkers``, and a
file ``grading.json`` beside this one that lists each exercise's kind and inputs only).
Then ``check`` judges nothing: it turns the answer into data exactly as below
(:mod:`~attnlib.selfcheck.record`), sends it to the grader, and prints
``· <id>: answer recorded``; the grader judges it in its own process. The answer goes
out on the kernel's own channel, so a cell under ``%%capture`` records it too, and the
returned ``passed`` is :data:`PENDING`, truthy, so ``assert check(...).passed`` runs on
as it did in self-study; what counts is the grader's verdict, never this value.

The package, by job:

- ``mistakes.py``: every mistake code and its hint, defined once;
- ``exercise.py``: :class:`Exercise`, an exercise as data, and its ``judge``;
- ``judge.py``: pure comparison of answers-as-data with expected values;
- ``display.py``: the one line and how it reaches a notebook;
- ``run.py``: calling a learner's function in a child process;
- ``wire.py``: the data channel (JSON, never pickle);
- ``record.py``: an answer as the data a judge takes (shared by self-study and grading);
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
import json
from pathlib import Path

import numpy as np  # noqa: F401 - imported once here, as every answer may be an array

from . import record, wire
from .run import TIME_LIMIT, call_cases, expression_function  # noqa: F401

GRADING_FILE = Path(__file__).with_name("grading.json")
GRADING = GRADING_FILE.is_file()  # written only into the grader's stripped copy

if GRADING:
    _SPEC = json.loads(GRADING_FILE.read_text(encoding="utf-8"))["exercises"]
    Feedback = Exercise = Verdict = MISTAKES = METADATA_KEY = None
    STATUSES = ("passed", "wrong", "not attempted", "error")
else:
    from . import registry
    from .display import METADATA_KEY, Feedback, emit, feedback
    from .exercise import Exercise
    from .judge import STATUSES, Verdict, error
    from .mistakes import MISTAKES

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
    return sorted(_SPEC if GRADING else registry.exercises())


def _unknown(exercise_id):
    detail = f"no exercise is called {exercise_id!r}"
    close = difflib.get_close_matches(str(exercise_id), exercise_ids(), n=1)
    if close:
        detail += f"; did you mean {close[0]!r}?"
    return detail


def answer_data(exercise, answer, seconds=None):
    """A learner's answer as the data ``exercise.judge`` takes.

    A value goes through :mod:`~attnlib.selfcheck.wire` (so only data is judged); a
    function is called on the exercise's cases in a child process, killed at
    ``seconds`` (default ``TIME_LIMIT``) per case; a proof's sympy expression is
    evaluated at the exercise's points the same way (:func:`record.answer_data`).
    """
    cases = exercise.cases if exercise.kind in ("function", "proof") else None
    seconds = TIME_LIMIT if seconds is None else seconds  # this module's, as before
    return record.answer_data(exercise.kind, cases, exercise.arg_names, answer, seconds)


class Pending:
    """``passed`` of an answer recorded for grading: not judged yet, and truthy.

    Truthy so that a notebook runs on while graded as it ran in self-study
    (``assert check(...).passed`` passes, where ``False`` raised and turned the rest of
    the cell into an error). It decides nothing: the grader judges the recorded answer
    in its own process, so a wrong answer is recorded, and graded, as wrong.
    """

    def __bool__(self):
        return True

    def __eq__(self, other):
        return other is self

    __hash__ = object.__hash__

    def __repr__(self):
        return "pending"


PENDING = Pending()


class Recorded:
    """What ``check`` returns while grading: the answer was recorded, not judged.

    ``passed`` is :data:`PENDING`, truthy (see :class:`Pending`), and ``status`` is
    ``"recorded"``: the kernel cannot know the verdict; the grader decides it. Only an
    answer that is still the placeholder ``...`` gets ``passed = False`` and ``status``
    "not attempted", as in self-study (no answer key is needed to see that), so a cell
    that runs only after a pass is skipped for an exercise not yet done.
    """

    mistake = None

    def __init__(self, exercise_id, unanswered=False):
        self.exercise_id = exercise_id
        self.message = f"· {exercise_id}: answer recorded for grading"
        # a placeholder is "not attempted" in self-study too: the kernel knows it unaided
        self.passed = False if unanswered else PENDING
        self.status = "not attempted" if unanswered else "recorded"

    def __bool__(self):
        return True

    def __repr__(self):
        return self.message


def _record_for_grading(exercise_id, answer):
    """Grading mode: turn the answer into data as self-study does, and send it.

    Returns True when the answer is still the placeholder (``...``): then self-study says
    "not attempted", and so does ``passed`` here.
    """
    spec = _SPEC.get(exercise_id)
    if spec is None:
        data = wire.Refused(_unknown(exercise_id))
    elif answer is _NO_ANSWER:
        data = wire.Refused(f"pass your answer too: check({exercise_id!r}, your_answer).")
    else:
        try:
            cases = wire.decode(spec["cases"]) if spec.get("cases") else None
            data = record.answer_data(spec["kind"], cases, spec.get("arg_names") or (), answer)
        except Exception as err:  # reported to the grader as the answer's reason
            data = wire.Refused(f"the answer could not be recorded: {type(err).__name__}: {err}")
    record.send(exercise_id, data)
    return (
        spec is not None
        and not isinstance(data, wire.Refused)
        and (record.unanswered(spec["kind"], data))
    )


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
    if GRADING:
        unanswered = _record_for_grading(exercise_id, answer)
        return Recorded(exercise_id, unanswered)
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
    if GRADING:
        print("hint: hints are not available while a notebook is graded")
        return
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
    if GRADING:
        print("solution: solutions are not available while a notebook is graded")
        return
    exercise = registry.get(str(exercise_id))
    if exercise is None:
        print(f"solution: {_unknown(exercise_id)}")
        return
    print(f"solution for {exercise.id}:")
    print(exercise.solution_text())
