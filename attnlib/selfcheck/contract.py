"""An exercise's contract: what its text promises, as data the judge turns into checks.

An :class:`~attnlib.selfcheck.exercise.Exercise` may state, beside its cases:

- ``domain``: a :class:`Domain`, the inputs its text promises (shapes, number of axes,
  orders, lengths, dtypes), from which more cases are drawn, seeded, so that self-check and
  the grader try the same ones;
- ``constraints``: what the answer must not build or must use, each measured, never
  trusted: :class:`PeakMemory` (tracemalloc in the child that calls the function, on a case
  large enough that the forbidden table cannot fit), :class:`BlockReads` (the queries and
  keys handed over as arrays that log which rows meet in a product), :class:`ResultType`
  (a numpy array of the promised kind, e.g. boolean), :class:`Stream` (inputs handed over
  one step at a time, so that nothing can be read back but what the answer kept);
- ``exactness``: how exact the answer must be: :class:`Exact` (its defining property to
  about 1e-9, e.g. ``K^T z = 0``), :class:`Rounded` (every value that rounds, at the
  decimals the lesson prints, to what an honest route gives), :class:`Within` (any value of
  a stated range), :class:`Relative` (a relative tolerance, e.g. one float16 rounding).

Each check returns ``None`` when the statement holds and a wrong
:class:`~attnlib.selfcheck.judge.Verdict` whose message names the statement when not.

>>> Rounded(2, routes=(9 / 1.41,)).accepts(6.38, 9 / 2**0.5)
True
>>> Rounded(2).accepts(6.37, 9 / 2**0.5)
False
"""

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np

from .run import with_instructions


@dataclass(frozen=True)
class Domain:
    """The inputs an exercise's text promises; ``draw(rng)`` makes one case.

    ``count`` cases are drawn with ``np.random.default_rng(seed)`` when the exercise is
    built, so the notebook's check and ``attnlib check`` try the same ones.
    """

    text: str
    draw: Callable
    count: int = 4
    seed: int = 0

    def cases(self):
        rng = np.random.default_rng(self.seed)
        return [tuple(self.draw(rng)) for _ in range(self.count)]


def _mib(n_bytes):
    return f"{n_bytes / 2**20:.2f} MiB"


# resident growth tracemalloc does not see: honest answers up to 1.2 MiB (one CI run, before
# the child turned huge pages off), kv_decode's 2 MiB table in anonymous mmap about 2 MiB or
# more, flash_backward's 19 MiB
UNTRACED_SLACK = 3 * 2**19


@dataclass(frozen=True)
class PeakMemory:
    """The function's peak memory on ``cases`` is at most ``bound(*args)`` bytes.

    Measured with :mod:`tracemalloc` in the child process that calls the function (numpy's
    array data included), on inputs large enough that the table the text forbids cannot
    fit under the bound; and, on Linux, as the growth of the child's resident high-water
    mark (``VmHWM``), which may pass the traced peak by ``UNTRACED_SLACK`` only: a table
    hidden where tracemalloc does not look (``mmap``) is resident when used. Where neither
    would see it the child is sealed while it measures (:func:`~attnlib.selfcheck.run._seal`):
    no file may grow (a temporary file, ``/dev/shm``, a ``memfd``: the page cache) and no
    new process may start (``os.fork``, ``subprocess``, ``multiprocessing``); a function
    that tries is wrong, and the message names what was refused.
    """

    text: str  # what the exercise forbids, e.g. "never build the n x n weights"
    bound: Callable
    cases: tuple = ()

    def instructed(self):
        return [with_instructions(args, peak=True) for args in self.cases]

    def check(self, how, args, record, on):
        if not how.get("peak") or "ok" not in record or "peak" not in record:
            return None  # not asked, no result, or a Python without tracemalloc
        peak = record.get("peak")
        if not isinstance(peak, int) or peak < 0:
            return f"your function's memory could not be measured {on} (tracemalloc stopped?)."
        bound = int(self.bound(*args))
        if peak > bound:
            return (
                f"your function's peak memory was {_mib(peak)} {on}, more than the "
                f"{_mib(bound)} allowed: {self.text}."
            )
        resident = record.get("resident")
        if isinstance(resident, int) and resident - peak > UNTRACED_SLACK:
            return (
                f"your function's resident memory grew by {_mib(resident)} {on}, "
                f"{_mib(resident - peak)} of it where Python does not trace (mmap, np.memmap), "
                f"more than the {_mib(UNTRACED_SLACK)} Python and numpy take themselves: "
                f"{self.text}."
            )
        return None


@dataclass(frozen=True)
class Stream:
    """The first ``count`` arguments reach the function as one stream of their rows, step
    by step (:func:`~attnlib.selfcheck.run.stream`), on every case: a decoder that keeps
    keys has stored them itself, so a :class:`PeakMemory` bound sees what it keeps, and it
    cannot slice the keys of earlier steps out of a matrix it was given, nor reach one
    through the stream (a :class:`~attnlib.selfcheck.run.Steps` object: no frame, no
    closure, and every row erased from its copy once handed out). The judge's reference
    and mistakes still get the arrays."""

    count: int
    text: str  # e.g. "the keys arrive one step at a time"

    def every(self, case):
        return with_instructions(case, stream=self.count)

    def check(self, how, args, record, on):
        return None  # nothing to measure: the stream itself is the constraint


@dataclass(frozen=True)
class BlockReads:
    """Scores are computed in whole tiles of ``block`` queries by ``block`` keys, every
    visible tile and none above the diagonal: arguments ``query`` and ``key`` are handed
    over as arrays that log which rows meet in a product
    (:class:`~attnlib.selfcheck.run.Tracked`); ``block`` is the index of the argument
    holding the block size.

    A product that is part of a tile (one query against a block of keys, or one score at a
    time), more than one tile, or a hidden tile is wrong; so is a visible tile never
    computed from the tracked inputs (its scores came from a copy that is not followed:
    ``Q.tolist()``, ``.view(np.ndarray)``, ``np.array(Q)``). A function whose products
    cannot be followed at all (``np.asarray(Q)`` first) is not judged by this rule: the
    check says so, as an error, never as a wrong answer.
    """

    text: str
    query: int = 0
    key: int = 1
    block: int = 3
    cases: tuple = ()

    def instructed(self):
        return [with_instructions(args, track=[self.query, self.key]) for args in self.cases]

    def check(self, how, args, record, on):
        if not how.get("track") or "ok" not in record:
            return None
        products = record.get("products")
        if record.get("escaped"):
            return (
                f"your function turned Q or K into numbers check cannot follow {on} "
                "(Q.tolist(), Q.view(np.ndarray)): the scores of its tiles are not counted; "
                f"compute them from Q and K as they come in ({self.text})."
            )
        if not products:
            from .judge import error  # a rule that cannot judge says so: never "wrong"

            return error(
                f"not judged: check could not follow which queries meet which keys in your "
                f"function {on}: np.asarray, np.array or a call to attnlib hands back plain "
                "arrays; compute with Q and K as they come in, so the tiles can be counted."
            )
        b = int(args[self.block])
        n_q, n_k = len(args[self.query]), len(args[self.key])
        done = set()
        for rows, keys in products:
            q_blocks = sorted({i // b for i in rows})
            k_blocks = sorted({j // b for j in keys})
            if k_blocks and q_blocks and k_blocks[-1] > q_blocks[0]:
                return (
                    f"your function computes scores of queries {_span(rows)} against keys "
                    f"{_span(keys)} {on}: key block {k_blocks[-1]} starts after the last query "
                    f"of tile {q_blocks[0]}, a hidden block ({self.text})."
                )
            if len(q_blocks) > 1 or len(k_blocks) > 1:
                return (
                    f"your function computes scores of queries {_span(rows)} against keys "
                    f"{_span(keys)} in one product {on}: more than one block of "
                    f"block_size = {b} ({self.text})."
                )
            (qb,), (kb,) = q_blocks, k_blocks
            if sorted(rows) != list(range(qb * b, min(qb * b + b, n_q))) or sorted(keys) != list(
                range(kb * b, min(kb * b + b, n_k))
            ):
                return (
                    f"your function computes scores of queries {_span(rows)} against keys "
                    f"{_span(keys)} {on}: part of a tile, not the whole tile of block_size = "
                    f"{b} queries by {b} keys ({self.text})."
                )
            done.add((qb, kb))
        for qb in range(-(-n_q // b)):
            for kb in range(min(qb, -(-n_k // b) - 1) + 1):
                if (qb, kb) not in done:
                    return (
                        f"your function never computes the tile of queries "
                        f"{_span(range(qb * b, min(qb * b + b, n_q)))} against keys "
                        f"{_span(range(kb * b, min(kb * b + b, n_k)))} from Q and K as they come "
                        f"in {on}: a copy made with np.array or np.asarray is not followed, so "
                        f"its scores do not count ({self.text})."
                    )
        return None


def _span(rows):
    rows = sorted(rows)
    if rows == list(range(rows[0], rows[-1] + 1)):
        return f"{rows[0]}..{rows[-1]}" if len(rows) > 1 else f"{rows[0]}"
    return ", ".join(map(str, rows))


@dataclass(frozen=True)
class ResultType:
    """The result is a numpy array of one of these kinds: ``"b"`` boolean, ``"f"``
    floating, ``"fiu"`` any numbers. Judged on the types the child saw before transport
    (``"types"``, see :func:`~attnlib.selfcheck.run._types`): an object array travels as
    float64 numbers, and is still not a float array."""

    kind: str
    text: str  # e.g. "a boolean array"

    def check(self, how, args, record, on):
        if "ok" not in record:
            return None
        value = record["ok"]
        items = value if isinstance(value, tuple) else (value,)
        types = record.get("types")
        if not (isinstance(types, list) and len(types) == len(items)):
            types = [None] * len(items)
        for item, sent in zip(items, types, strict=True):
            if isinstance(item, dict) or item is None or item is Ellipsis:
                return None  # refused or a placeholder: the comparison reports it
            if not isinstance(item, np.ndarray):
                kind = type(item).__name__
                return f"your function returned a {kind} {on}; the exercise asks for {self.text}."
            dtype = _dtype(sent) if sent is not None else item.dtype
            if dtype is None:
                return f"your function returned a {sent} {on}; the exercise asks for {self.text}."
            if dtype.kind not in self.kind:
                return (
                    f"your function returned an array of {dtype.name} {on}; the exercise "
                    f"asks for {self.text}."
                )
        return None


def _dtype(name):
    """The numpy dtype called ``name`` (``"object"``, ``"float32"``), or None for a name
    that is not a dtype (``"list"``: the function returned no array)."""
    try:
        return np.dtype(name) if name.isidentifier() and name not in ("list", "tuple") else None
    except TypeError:
        return None


@dataclass(frozen=True)
class Exact:
    """Judged by its defining property: ``residual(answer)`` at most ``tol`` (about 1e-9)."""

    text: str  # e.g. "K^T z = 0 and z_3 = 1"
    residual: Callable
    tol: float = 1e-9

    def holds(self, got):
        with np.errstate(all="ignore"):
            r = float(self.residual(got))
        return np.isfinite(r) and r <= self.tol


@dataclass(frozen=True)
class Rounded:
    """Every value that rounds, at ``decimals``, to what the exact answer or one of
    ``routes`` (the honest hand computations, e.g. the document's 9 / 1.41) rounds to."""

    decimals: int
    routes: tuple = field(default=())

    def accepts(self, got, expected):
        got = np.asarray(got, dtype=np.float64)
        for value in (expected, *self.routes):
            want = np.round(np.asarray(value, dtype=np.float64), self.decimals)
            if got.shape == want.shape and np.allclose(
                np.round(got, self.decimals), want, rtol=0, atol=10.0 ** -(self.decimals + 3)
            ):
                return True
        return False


@dataclass(frozen=True)
class Within:
    """Any value from ``low`` to ``high`` (a measurement that varies, e.g. with the seed),
    at ``decimals`` (half a unit of slack either side)."""

    low: float
    high: float
    decimals: int
    text: str

    def accepts(self, got, expected=None):
        got = np.asarray(got, dtype=np.float64)
        slack = 0.5 * 10.0**-self.decimals
        return got.shape == () and self.low - slack <= float(got) <= self.high + slack


@dataclass(frozen=True)
class Relative:
    """Equal up to a relative tolerance (``rtol``) and a tiny absolute one (``atol``)."""

    rtol: float
    atol: float = 1e-12


_FUNCTIONS = (
    "Add", "Mul", "Pow", "Abs", "Max", "Min", "exp", "log", "sign", "Heaviside",
    "sin", "cos", "tan", "sinh", "cosh", "tanh", "re", "im", "floor", "ceiling",
)  # fmt: skip
_FORCES_SIGN = ("Abs", "Max", "Min", "Piecewise", "sign", "Heaviside", "re", "im")


def rebuild(tree, symbols, depth=0):
    """A sympy expression from :func:`~attnlib.selfcheck.run.expression_tree`'s data, built
    from a short list of sympy classes (never by parsing text); ``symbols`` maps names to
    the judge's own symbols (with their assumptions). Raises ``ValueError`` for anything else.
    """
    import sympy as sp

    if depth > 200 or not isinstance(tree, list) or not tree or not isinstance(tree[0], str):
        raise ValueError("not an expression tree")
    head, args = tree[0], tree[1:]
    if head == "Symbol" and len(args) == 1 and args[0] in symbols:
        return symbols[args[0]]
    if head == "Integer" and len(args) == 1 and isinstance(args[0], str):
        return sp.Integer(int(args[0]))
    if head == "Rational" and len(args) == 2 and all(isinstance(a, str) for a in args):
        return sp.Rational(int(args[0]), int(args[1]))
    if head == "Float" and len(args) == 1 and isinstance(args[0], str):
        return sp.Float(float(args[0]))
    if head in ("Pi", "Exp1", "Half", "One", "Zero", "NegativeOne") and not args:
        return getattr(sp.S, {"Pi": "Pi", "Exp1": "Exp1"}.get(head, head))
    if head == "Matrix" and len(args) >= 2:
        rows, cols = args[0], args[1]
        entries = [rebuild(a, symbols, depth + 1) for a in args[2:]]
        if not (isinstance(rows, int) and isinstance(cols, int) and rows * cols == len(entries)):
            raise ValueError("a matrix of the wrong size")
        return sp.Matrix(rows, cols, entries)
    if head == "Piecewise":
        pieces = []
        for pair in args:
            if not (isinstance(pair, list) and len(pair) == 2):
                raise ValueError("a malformed Piecewise")
            pieces.append(tuple(rebuild(x, symbols, depth + 1) for x in pair))
        return sp.Piecewise(*pieces)
    if head in ("BooleanTrue", "BooleanFalse") and not args:
        return sp.true if head == "BooleanTrue" else sp.false
    if head in ("StrictGreaterThan", "GreaterThan", "StrictLessThan", "LessThan"):
        return getattr(sp, head)(*(rebuild(a, symbols, depth + 1) for a in args))
    if head in _FUNCTIONS:
        return getattr(sp, head)(*(rebuild(a, symbols, depth + 1) for a in args))
    raise ValueError(f"{head} is not one of the functions the judge rebuilds")


@dataclass(frozen=True)
class Symbolic:
    """A proof judged as a formula where sympy can decide, beside its values at points.

    ``symbols`` maps each name to sympy's assumptions for it (``{"p_0": {"nonnegative":
    True}}``); ``on`` is the constraint set as substitutions (``{"p_2": "1 - p_0 - p_1"}``
    is written as a function of the symbols); ``nonnegative``: the form itself must show
    that the expression is >= 0 (a sum of squares times weights), not a function that forces
    the sign (Abs, Max, Piecewise, ...). Returns a mistake code and detail when the form
    breaks the statement, ``None`` when it holds or sympy cannot decide. A form that must
    show its sign but cannot be read (too large, or a function the judge does not rebuild) is
    wrong: the points alone would let a padded ``v^T J v`` through.
    """

    text: str
    symbols: tuple  # (name, assumptions dict) pairs
    on: Callable | None = None  # symbols dict -> {symbol: expression}, the constraint set
    nonnegative: bool = False

    def judge(self, tree, expected):
        import sympy as sp

        symbols = {name: sp.Symbol(name, **dict(assume)) for name, assume in self.symbols}
        unread = (
            None,
            "your expression has to show its sign by its form, and the judge could not read "
            "it as a formula: write it with +, -, * and small powers of the symbols only.",
        )
        if not _small(tree):  # too large to simplify in the grader's time
            return unread if self.nonnegative else None  # else the points decide
        try:
            answer = rebuild(tree, symbols)
        except (ValueError, TypeError, AttributeError):  # a function the judge does not rebuild
            return unread if self.nonnegative else None
        names = {s.name: s for s in symbols.values()}
        want = expected.subs({s: names[s.name] for s in expected.free_symbols})
        on = self.on(names) if self.on is not None else {}
        difference = sp.simplify(sp.expand((answer - want).subs(on)))
        zero = difference == 0 or (
            isinstance(difference, sp.MatrixBase) and all(x == 0 for x in difference)
        )
        if not zero and (
            _exact(difference, list(symbols.values()))  # sympy decided: not equal
            or not _vanishes(difference, list(symbols.values()), want.subs(on))
        ):
            return None, f"your expression is not {self.text} as a formula (sympy: not equal)."
        if self.nonnegative:
            forced = [f for f in _FORCES_SIGN if answer.atoms(getattr(sp, f))]
            if forced or answer.has(sp.Piecewise):
                return "sign_forced", ""
            if not _shows_sign(answer, symbols, on):
                return "psd_not_sum_of_squares", ""
        return None


def _exact(difference, symbols):
    """True when sympy's ``difference`` is exact: a ratio of polynomials in ``symbols`` with
    rational coefficients (no Float, no function), so simplified non-zero means not equal
    (``+ Rational(1, 10**12)`` is not a rounding). Floats or functions sympy could not
    simplify away are left to the points (:func:`_vanishes`)."""
    import sympy as sp

    entries = list(difference) if isinstance(difference, sp.MatrixBase) else [difference]
    return all(not e.atoms(sp.Float) and e.is_rational_function(*symbols) for e in entries) and any(
        sp.cancel(sp.together(e)) != 0 for e in entries
    )


def _shows_sign(answer, symbols, on):
    """True when sympy sees ``answer >= 0`` from its form: as written, with the weights
    taken positive (``m / (p_0 + p_1 + p_2)`` is then real), or with the constraint's
    expression read back as its symbol (``1 - p_0 - p_1`` is ``p_2``)."""
    import sympy as sp

    if answer.is_nonnegative is True:
        return True
    positive = {s: sp.Symbol(s.name, positive=True) for s in symbols.values() if s.is_nonnegative}
    back = {value: key for key, value in on.items()}
    for form in (answer.xreplace(back), answer.subs(back)):
        if form.xreplace(positive).is_nonnegative is True:
            return True
    return False


def _small(tree, limit=400):
    """True for a tree of at most ``limit`` nodes whose integer powers are at most 8: one
    sympy can expand and simplify quickly (a student's formula is untrusted input)."""
    stack, count = [tree], 0
    while stack:
        node = stack.pop()
        count += 1
        if count > limit or not isinstance(node, list) or not node:
            return count <= limit and not isinstance(node, list)
        if node[0] == "Pow" and len(node) == 3 and isinstance(node[2], list):
            exponent = node[2]
            if exponent[:1] == ["Integer"] and (len(exponent[1]) > 2 or abs(int(exponent[1])) > 8):
                return False
        stack.extend(x for x in node[1:] if isinstance(x, list))
    return True


def _vanishes(difference, symbols, scale=1, points=6):
    """True when ``difference`` is 0 at random points (30 digits), relative to ``scale``
    there (the expected value): sympy could not simplify it away. A float literal's
    rounding (about 1e-17) vanishes; an added 1e-9 or a factor 1 + 1e-12 does not."""
    import sympy as sp

    rng = np.random.default_rng(0)
    for _ in range(points):
        point = {s: sp.Float(float(rng.uniform(0.1, 2.0)), 30) for s in symbols}
        try:
            value = (
                sp.Matrix([difference]).evalf(30, subs=point)
                if not isinstance(difference, sp.MatrixBase)
                else difference.evalf(30, subs=point)
            )
            size = sp.Matrix([scale]).evalf(30, subs=point)
            tol = 1e-14 * (1 + max(abs(complex(x)) for x in size))
            if any(abs(complex(x)) > tol for x in value):
                return False
        except (TypeError, ValueError):
            return False
    return True
