"""An exercise as plain data: what the check cell passes, the expected value, the mistakes.

Each lesson declares its exercises in ``attnlib/checkers/lesson_NN.py`` as a tuple
``EXERCISES`` of :class:`Exercise` (no registration, no import side effects); the
registry (:mod:`attnlib.selfcheck.registry`) lists the lessons explicitly. Expected values
and every mistake's value are computed with ``attnlib`` (never typed in)::

    SCORES = Exercise(
        id="scores",
        lesson="03_scoring",                   # the notebook stem
        kind="value",                          # value | tuple | choice | function
        answer="S",                            # the check cell passes S
        hints=("Entry [i, j] is query i . key j.", "S = Q @ K.T"),
        solution="S = Q @ K.T",                # or a function returning the text
        expected=ex.S,
        mistakes={"transposed": ex.S.T},       # code -> value, tried in order
        points=1,                              # what it is worth in a gradebook
    )

A function exercise gives ``cases`` (the inputs), ``reference`` (computes the expected
result from one input) and ``mistakes`` as code -> a function making that mistake (a list
of pairs when one code has several forms). A proof exercise asks for a sympy expression
(a step of a derivation): ``expected`` and each mistake are sympy expressions, ``arg_names``
name their symbols and ``cases`` are the points, chosen here, where the learner's kernel
evaluates the answer (:func:`~attnlib.selfcheck.run.expression_function`); only the
numbers reach the judge, which compares them as for a function.

An exercise states its contract beside its cases (:mod:`~attnlib.selfcheck.contract`):
``domain`` (the inputs its text promises; more cases are drawn from it, seeded),
``constraints`` (what the answer must not build or must use, measured in the child that
calls the function: peak memory, the blocks it reads, the type of array it returns) and
``exactness`` (an exact answer by its defining property, a rounded one at the decimals the
lesson prints, every honest route included). The judge turns each statement into a check
whose message names it.

For a class (``attnlib check --gradebook``), an exercise is worth ``points`` (default 1).
A passed exercise earns them all and any other status none, unless the exercise says it
has ``parts``: then a tuple earns the fraction of its items that are right, a function
the fraction of its cases it gets right (:meth:`Exercise.credit`). A value or choice
has no parts: one wrong entry of a matrix is a wrong matrix. ``written`` marks an
exercise that also asks *why*: the text is the question a teacher grades by hand (worth
``written_points``), and the grader collects the student's own words under the check
cell (:mod:`attnlib.grade.answers`). ``judge`` compares an
answer that is data (see :mod:`attnlib.selfcheck.wire`), or the per-input records of a
function or proof answer (see :mod:`attnlib.selfcheck.run`); it never calls learner code
and never raises.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from . import contract, display, judge
from .mistakes import MISTAKES
from .run import expression_function, split_case, with_instructions

KINDS = ("value", "tuple", "choice", "function", "proof")
_CALLED = ("function", "proof")  # answers judged by their results on the cases
_JUDGED = ("passed", "wrong")  # statuses a dtype rule may overrule


def _non_finite(value):
    """True for a number or array of numbers holding nan or inf."""
    if isinstance(value, bool) or not isinstance(value, (int, float, np.ndarray)):
        return False
    try:
        return not np.isfinite(np.asarray(value, dtype=np.float64)).all()
    except (TypeError, ValueError):
        return False


def _pairs(mistakes):
    if mistakes is None:
        return ()
    items = mistakes.items() if isinstance(mistakes, dict) else mistakes
    return tuple((code, value) for code, value in items)


def _freeze(value):
    """Make every numpy array inside ``value`` read-only (expected values, cases)."""
    if isinstance(value, np.ndarray):
        value.flags.writeable = False
    elif isinstance(value, (tuple, list)):
        for item in value:
            _freeze(item)
    elif isinstance(value, dict):
        for item in value.values():
            _freeze(item)


@dataclass(frozen=True)
class Exercise:
    """One exercise (see the module docstring).

    Attributes
    ----------
    id : str
        Unique across the course.
    lesson : str
        The notebook stem, e.g. ``"03_scoring"``.
    kind : {"value", "tuple", "choice", "function", "proof"}
    answer : str
        The expression the exercise notebook's check cell passes.
    hints : tuple of str
        From gentle to explicit, one per ``hint`` call.
    solution : str or callable returning str
    expected : object
        value: an array or number; tuple: a tuple of those; choice: the right option;
        proof: a sympy expression (or matrix) in the symbols ``arg_names``.
    mistakes : tuple of (code, value)
        value: code -> the value that mistake gives; function: code -> a function making
        it (``None`` for ``"overflow"``); choice: wrong option -> code; tuple: position ->
        {code: value} (given as a dict, stored as (position, ((code, value), ...)) pairs);
        proof: code -> the sympy expression that mistake gives.
    decimals : int or None
        Accept answers within one unit of this decimal place (work done by hand).
    name, names : str, tuple of str
        How messages name the answer (value) or its items (tuple).
    options : tuple
        choice: the options.
    cases : tuple of tuple
        function: the argument tuples; proof: the points, one value per symbol.
    reference : callable
        function: the expected result from one case.
    arg_names, result_names : tuple of str
        function: names for messages; proof: ``arg_names`` are the symbols' names.
    rule : callable, optional
        ``rule(answer) -> Verdict`` for an exercise that no comparison above fits (value:
        the answer; proof: the records of its values at the cases).
    dtype : str, optional
        value, function: the exercise is about this precision (``"float16"``): the answer,
        or every array the function returns, must be a numpy array of this dtype. A right
        number in a wider type is wrong here (it may hide the overflow the lesson is about).
    points : int or float
        What a pass is worth in a gradebook (default 1; an instructor's file can override).
    parts : bool
        tuple or function only: partial credit, the fraction of items or cases right.
    written : str
        The "why" question a teacher grades by hand from the student's words ("" for none).
    written_points : int or float
        What the written answer is worth (default 1).
    domain : contract.Domain, optional
        function: the inputs the text promises; its drawn cases are added to ``cases``.
    constraints : tuple
        function: :class:`~attnlib.selfcheck.contract.PeakMemory`, ``BlockReads``,
        ``ResultType``, ``Stream``; the cases they are measured on are added to ``cases``
        (a ``Stream`` applies to every case).
    exactness : optional
        value: :class:`~attnlib.selfcheck.contract.Exact`, ``Rounded`` or ``Within``;
        tuple: ``Exact``; function: ``Relative``. Default: ``decimals``, else floating-point
        precision.
    """

    id: str
    lesson: str
    kind: str
    answer: str
    hints: tuple
    solution: str | Callable
    expected: object = None
    mistakes: tuple = ()
    decimals: int | None = None
    name: str = "your answer"
    names: tuple | None = None
    options: tuple = ()
    cases: tuple = ()
    reference: Callable | None = None
    arg_names: tuple | None = None
    result_names: tuple | None = None
    rule: Callable | None = None
    dtype: str | None = None
    points: float = 1
    parts: bool = False
    written: str = ""
    written_points: float = 1
    domain: object = None
    constraints: tuple = ()
    exactness: object = None

    def __post_init__(self):
        where = f"Exercise {self.id!r}"
        if not isinstance(self.id, str) or not re.fullmatch(r"\w+", self.id):
            raise ValueError(f"Exercise: id must be a name like 'scaled_scores', got {self.id!r}.")
        if self.kind not in KINDS:
            raise ValueError(f"{where}: kind {self.kind!r} is not one of {KINDS}.")
        if not self.hints:
            raise ValueError(f"{where} needs at least one hint.")
        set_ = object.__setattr__
        set_(self, "hints", tuple(self.hints))
        if self.kind == "tuple":
            by_position = self.mistakes.items() if isinstance(self.mistakes, dict) else ()
            mistakes = tuple((int(i), _pairs(m)) for i, m in by_position)
            codes = [code for _, pairs in mistakes for code, _ in pairs]
        else:
            mistakes = _pairs(self.mistakes)
            codes = [v if self.kind == "choice" else c for c, v in mistakes]
        set_(self, "mistakes", mistakes)
        unknown = sorted(set(codes) - set(MISTAKES))
        if unknown:
            raise ValueError(f"{where}: mistake codes {unknown} are not in mistakes.py.")
        set_(self, "options", tuple(self.options))
        set_(self, "constraints", tuple(self.constraints))
        cases = [tuple(args) for args in self.cases]
        if self.domain is not None:
            cases += self.domain.cases()
        for rule in self.constraints:
            cases += [tuple(args) for args in getattr(rule, "instructed", list)()]
        for rule in self.constraints:  # a rule on every case, e.g. inputs handed over as a stream
            cases = [tuple(rule.every(args)) for args in cases] if hasattr(rule, "every") else cases
        if self.kind == "proof" and isinstance(self.exactness, contract.Symbolic):
            cases.append(with_instructions((), form=True))  # the formula itself, as data
        set_(self, "cases", tuple(cases))
        _freeze((self.expected, self.mistakes, self.cases))
        if self.kind == "function" and (not self.cases or self.reference is None):
            raise ValueError(f"{where}: a function exercise needs cases and a reference.")
        if self.kind == "proof" and (not self.cases or self.expected is None or not self.arg_names):
            raise ValueError(
                f"{where}: a proof exercise needs cases, an expected expression and arg_names."
            )

        for field_name in ("points", "written_points"):
            value = getattr(self, field_name)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
                raise ValueError(f"{where}: {field_name} must be a number >= 0, got {value!r}.")
        if self.parts and self.kind not in ("tuple", "function"):
            raise ValueError(
                f"{where}: only a tuple or a function exercise has parts, not a {self.kind}."
            )
        if not isinstance(self.written, str):
            raise ValueError(
                f"{where}: written must be the question as text, got {self.written!r}."
            )

    def credit(self, answer):
        """The fraction of this exercise an answer earns, from 0 to 1.

        1 for a pass and 0 otherwise, unless the exercise has ``parts``: then a tuple
        earns the share of its items that are right and a function the share of its
        cases it gets right. Judged in the grader's process from data, as :meth:`judge`.

        >>> Exercise("pair", "00_demo", "tuple", "(a, b)", ("h",), "", expected=(1.0, 2.0),
        ...          parts=True).credit((1.0, 5.0))
        0.5
        """
        try:
            if self.verdict(answer).status == "passed":
                return 1.0
            if not self.parts or judge.is_placeholder(answer):
                return 0.0
            if self.kind == "tuple":
                if not isinstance(answer, (tuple, list)) or len(answer) != len(self.expected):
                    return 0.0
                right = [
                    judge.check_array(item, want, None, self.decimals).status == "passed"
                    for item, want in zip(answer, self.expected, strict=True)
                ]
            else:
                if not isinstance(answer, (tuple, list)) or len(answer) != len(self.cases):
                    return 0.0
                right = [
                    judge.check_function(
                        [record],
                        [args],
                        self.reference,
                        (),
                        self._tolerance(),
                        None,
                        None,
                        self.constraints,
                    ).status
                    == "passed"
                    for record, args in zip(answer, self.cases, strict=True)
                ]
            return sum(right) / len(right)
        except Exception:  # never blame the learner for the course's own failure
            return 0.0

    def solution_text(self):
        """The reference answer as ``solution(id)`` prints it."""
        return self.solution() if callable(self.solution) else self.solution

    def verdict(self, answer):
        """The :class:`~attnlib.selfcheck.judge.Verdict` for an answer that is data.

        A wrong answer that no named mistake explains says where it differs and adds the
        first hint; it never shows the expected value (``solution()`` does, on request).
        """
        verdict = self._verdict(answer)
        if self.dtype is not None and verdict.mistake is None and verdict.status in _JUDGED:
            verdict = self._dtype_verdict(answer) or verdict
        if verdict.status == "wrong" and verdict.mistake is None:
            hint = f"Hint: {self.hints[0]}"
            return judge.Verdict("wrong", None, f"{verdict.detail} {hint}".strip())
        return verdict

    def _verdict(self, answer):
        if self.kind not in _CALLED and judge.is_placeholder(answer):
            return judge.not_attempted()
        if self.kind == "proof":  # the same comparison as a function's, worded for a formula
            verdict = self._proof_verdict_all(answer)
            detail = verdict.detail.replace("your function", "your expression")
            detail = detail.replace("on inputs ", "at ")
            return judge.Verdict(verdict.status, verdict.mistake, detail)
        if self.rule is not None:
            return self.rule(answer)
        if self.kind == "value":
            return self._value_verdict(answer)
        if self.kind == "tuple":
            mistakes = {i: pairs for i, pairs in self.mistakes}
            verdict = judge.check_tuple(answer, self.expected, mistakes, self.decimals, self.names)
            rule = self.exactness
            if verdict.status != "passed" or not isinstance(rule, contract.Exact):
                return verdict
            got = judge.as_numbers(list(answer), "your answer")  # a passed tuple: numbers
            if isinstance(got, judge.Verdict) or not rule.holds(got):
                names = ", ".join(self.names or ())
                how = "exactly" if rule.tol == 0 else f"to about {rule.tol:g}"
                return judge.wrong(f"{names} do not satisfy {rule.text} ({how}).")
            return verdict
        if self.kind == "choice":
            return judge.check_choice(answer, self.expected, self.options, self.mistakes)
        return judge.check_function(
            answer,
            self.cases,
            self.reference,
            self.mistakes,
            self._tolerance(),
            self.arg_names,
            self.result_names,
            self.constraints,
        )

    def _tolerance(self):
        return self.exactness if isinstance(self.exactness, contract.Relative) else self.decimals

    def _value_verdict(self, answer):
        """A value against ``expected``, judged as ``exactness`` says: a named mistake or a
        far answer is told as by the comparison; an answer the comparison would let through
        but the rule does not is told by the rule."""
        rule = self.exactness
        verdict = judge.check_array(answer, self.expected, self.mistakes, self.decimals, self.name)
        if rule is None or verdict.mistake is not None:
            return verdict
        got = judge.as_numbers(answer, self.name)
        if isinstance(got, judge.Verdict):
            return got
        shaped = got.shape == np.shape(self.expected)
        if isinstance(rule, contract.Exact):
            if shaped and rule.holds(got):
                return judge.passed()
            if verdict.status != "passed":
                return verdict
            return judge.wrong(f"{self.name} does not satisfy {rule.text} (to about {rule.tol:g}).")
        if shaped and rule.accepts(got, self.expected):
            return judge.passed()
        if verdict.status != "passed":
            return verdict
        if isinstance(rule, contract.Within):
            return judge.wrong(f"{self.name} is not in {rule.text}.")
        return judge.wrong(
            f"{self.name} does not round, at {rule.decimals} decimals, to what the computation "
            "gives."
        )

    def _dtype_verdict(self, answer):
        """A wrong Verdict when the answer (or a function's result) is not of ``dtype``."""
        if self.kind not in _CALLED:
            return (
                None
                if judge.is_placeholder(answer)
                else judge.check_dtype(answer, self.dtype, self.name)
            )
        if not isinstance(answer, (list, tuple)):
            return None
        for entry, case in zip(answer, self.cases, strict=False):
            args = split_case(case)[1]
            if isinstance(entry, dict) and "ok" in entry and entry["ok"] is not None:
                result = entry["ok"]
                for item in result if isinstance(result, tuple) else (result,):
                    verdict = judge.check_dtype(item, self.dtype, "your function's result")
                    if verdict is not None:
                        on = judge._shapes(args, self.arg_names)
                        return judge.wrong(f"{verdict.detail[:-1]} (on inputs {on}).")
        return None

    def _proof_verdict_all(self, records):
        """Values at the points (nan or inf at any is wrong), then the formula itself."""
        form = None
        if isinstance(self.exactness, contract.Symbolic) and isinstance(records, list):
            if len(records) == len(self.cases) and split_case(self.cases[-1])[0].get("form"):
                *records, last = records
                form = last.get("form") if isinstance(last, dict) else None
        if isinstance(records, list):
            for record, case in zip(records, self.cases, strict=False):
                value = record.get("ok") if isinstance(record, dict) else None
                if _non_finite(value):
                    at = judge._shapes(split_case(case)[1], self.arg_names)
                    return judge.wrong(
                        f"your expression is not a finite number at {at}: a formula "
                        "that gives nan or inf there proves nothing."
                    )
        verdict = self.rule(records) if self.rule is not None else self._proof_verdict(records)
        if verdict.status != "passed" or form is None:
            return verdict
        found = self.exactness.judge(form, self.expected)
        if found is None:
            return verdict
        code, detail = found
        return judge.wrong(detail, mistake=code)

    def _proof_verdict(self, records):
        """A proof's records against the expected expression at the same points."""
        points = [c for c in self.cases if not split_case(c)[0].get("form")]
        return judge.check_expression(
            records,
            points,
            expression_function(self.expected, self.arg_names),
            [(code, expression_function(e, self.arg_names)) for code, e in self.mistakes],
            self.decimals,
            self.arg_names,
        )

    def judge(self, answer):
        """Judge an answer that is data; a :class:`~attnlib.selfcheck.display.Feedback`.

        Never raises: a failure of the course's own code is reported as one line that
        says so, and is never blamed on the learner.
        """
        try:
            verdict = self.verdict(answer)
            if not isinstance(verdict, judge.Verdict):
                raise TypeError(f"judging returned {type(verdict).__name__}, not a Verdict")
        except Exception as err:  # the course's code broke: say so in one line
            verdict = judge.error(
                f"the checker failed ({type(err).__name__}: {err}); please report this."
            )
        return display.feedback(self.id, verdict)

    def not_attempted(self, answer):
        """True when ``answer`` is still the notebook's placeholder."""
        return judge.is_placeholder(answer)
