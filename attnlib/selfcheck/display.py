"""The one line ``check`` prints, and how it reaches a notebook.

Wording (fixed; ``attnlib check`` and the tests read it)::

    ✓ x_matrix: correct.
    ✗ x_matrix: wrong (tokens_as_columns): <the hint that names the idea>
    ✗ x_matrix: wrong: X: row 2, column 2 differs. Hint: <the exercise's first hint>
    ✗ softmax: error: your function raised ZeroDivisionError: division by zero ...
    … x_matrix: not attempted yet

A wrong line says where the answer differs, never the expected value.

>>> from attnlib.selfcheck.judge import passed
>>> line("x_matrix", passed())
'✓ x_matrix: correct.'
"""

from dataclasses import dataclass, field

from .mistakes import MISTAKES

METADATA_KEY = "attnlib_check"  # where the machine-readable record goes in a notebook output


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


def line(exercise_id, verdict):
    """The one line for a verdict."""
    if verdict.status == "passed":
        return f"✓ {exercise_id}: correct."
    if verdict.status == "not attempted":
        return f"… {exercise_id}: not attempted yet"
    if verdict.status == "error":
        return f"✗ {exercise_id}: error: {verdict.detail}"
    if verdict.mistake is not None:
        return f"✗ {exercise_id}: wrong ({verdict.mistake}): {MISTAKES[verdict.mistake]}"
    return f"✗ {exercise_id}: wrong: {verdict.detail}"


def feedback(exercise_id, verdict):
    """A :class:`Feedback` for a verdict."""
    return Feedback(
        passed=verdict.status == "passed",
        mistake=verdict.mistake,
        message=line(exercise_id, verdict),
        status=verdict.status,
        exercise=exercise_id,
    )


def _shell():
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    return get_ipython()


def emit(result):
    """Show a Feedback: its line in a notebook (with the record in the metadata), or print."""
    shell = _shell()
    if shell is None or not hasattr(shell, "kernel"):
        print(result.message)
        return
    from IPython.display import display

    display(
        {"text/plain": result.message},
        raw=True,
        metadata={METADATA_KEY: result.record()},
    )
    object.__setattr__(result, "_shown_in", shell.execution_count)
