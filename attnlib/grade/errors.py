"""The one error of the grader itself (exit status 2), shared by its modules."""


class GraderError(RuntimeError):
    """The grader itself cannot go on (exit status 2)."""
