"""Call a learner's function on the checker's inputs in a child process, safely.

``call_cases(function, cases)`` forks the current process (so the function, defined in a
notebook, exists in the child as it is), calls it on each input there with its prints
and warnings going nowhere, and sends each result back over a pipe as JSON text made by
:mod:`attnlib.selfcheck.wire` (never pickle). The parent waits at most ``seconds`` per
input and kills the child when the limit passes, so no answer can hang the caller:
not an endless loop that swallows ``KeyboardInterrupt``, not a timer cancelled by the
learner, not an ``__array__`` that never returns. ``sys.exit`` and ``os._exit`` inside
the function end the child only and are reported.

The result is one record per input, exactly one of::

    {"ok": value}                   the function returned (value decoded from the wire)
    {"error": "TypeError: ..."}     it raised
    {"timeout": seconds}            it ran past the limit and was killed
    {"exit": code}                  it called sys.exit / os._exit

A case may start with instructions, ``{CALL: {...}}`` (see :func:`split_case`), which the
child carries out around the call and reports beside ``"ok"``: ``"peak": True`` measures
the call's peak memory with :mod:`tracemalloc` (``"peak": bytes``) in a child sealed
against files and new processes (:func:`_seal`; a refusal is reported as ``"refused"``
beside the error), ``"track": [i, j]``
hands arguments ``i`` and ``j`` (queries and keys) over as :class:`Tracked` arrays and
reports every product that meets rows of both (``"products": [[query rows, key rows],
...]``), ``"stream": count`` hands the first ``count`` arguments over as one :func:`stream`
of their rows, one step at a time (a decoder's keys as they arrive), and ``"form": True``
(proofs) reports the expression itself as a tree of names and numbers (``"form": [...]``,
see :func:`expression_tree`). The judge decides; the child only measures.

>>> import numpy as np
>>> call_cases(lambda x: x * 2, [(np.array([1.0, 2.0]),), (3,)])
[{'ok': array([2., 4.])}, {'ok': 6}]
>>> call_cases(lambda x: 1 / x, [(0,)])
[{'error': 'ZeroDivisionError: division by zero'}]
"""

import contextlib
import copy
import io
import json
import os
import select
import signal
import sys
import time
import warnings

import numpy as np

from . import wire

TIME_LIMIT = 5.0  # seconds a learner's function may run on one input
_NOT_RUN = "not run: your function {} on an earlier input"
CALL = "attnlib.call"  # the key of a case's instructions, a dict before its arguments
MEASURES = (
    "peak",
    "resident",
    "products",
    "escaped",
    "form",
    "types",
    "refused",
)  # what a record may carry beside "ok" ("refused" also beside "error")


def split_case(case):
    """``(instructions, arguments)`` of one case: a case may start with ``{CALL: {...}}``.

    >>> split_case(({CALL: {"peak": True}}, 3, 4))
    ({'peak': True}, (3, 4))
    >>> split_case((3, 4))
    ({}, (3, 4))

    ``"widen": [[i, times], ...]`` repeats argument ``i`` ``times`` over along its last axis,
    in the child and in the judge alike, so that a case large in memory is small on the wire:

    >>> split_case(({CALL: {"widen": [[0, 3]]}}, [[1.0, 2.0]], 5))[1][0]
    array([[1., 2., 1., 2., 1., 2.]])
    """
    how, args = _split(case)
    widen = how.get("widen")
    if isinstance(widen, list) and all(
        isinstance(pair, list) and len(pair) == 2 and all(type(x) is int for x in pair)
        for pair in widen
    ):  # a large case stored small: argument i repeated `times` along its last axis
        args = list(args)
        for i, times in widen:
            if 0 <= i < len(args) and 0 < times <= 4096 and np.ndim(args[i]) >= 1:
                args[i] = np.tile(np.asarray(args[i], dtype=np.float64), times)
        args = tuple(args)
    return how, args


def _split(case):
    case = tuple(case)
    if case and isinstance(case[0], dict) and set(case[0]) == {CALL}:
        return dict(case[0][CALL]), case[1:]
    return {}, case


def with_instructions(args, **instructions):
    """The case ``args`` with instructions for the child in front (see :func:`split_case`);
    instructions already in front are kept.

    >>> with_instructions(with_instructions((3,), stream=1), peak=True)
    ({'attnlib.call': {'stream': 1, 'peak': True}}, 3)
    """
    how, args = _split(args)
    return ({CALL: {**how, **instructions}}, *args)


def stream(arrays):
    """The rows of ``arrays`` one step at a time: step t yields ``(arrays[0][t], ...)``,
    each row a fresh copy. A function handed a stream cannot index back into earlier
    steps, and whatever it keeps of them it has allocated itself (a peak-memory bound sees
    it); the ``"stream": count`` instruction hands the first ``count`` arguments over so.

    The stream is a :class:`Steps` object, not a generator: no frame, code, closure or
    ``__dict__`` leads from it to the arrays, and a row it has handed out is erased
    (nan) in its own copy, so nothing read back through it holds an earlier step.

    >>> [tuple(map(float, step)) for step in stream(([1.0, 2.0], [3.0, 4.0]))]
    [(1.0, 3.0), (2.0, 4.0)]
    """
    return Steps(arrays)


class Steps:
    """An iterator over the rows of some arrays (see :func:`stream`): it keeps its own
    float64 copy of each array and erases row t (sets it to nan) as it hands out copies of
    row t, so an earlier step is never held anywhere but where the function put it."""

    __slots__ = ("_rows", "_t")

    def __init__(self, arrays):
        rows = [np.array(a, dtype=np.float64) for a in arrays]  # private copies
        if len({len(r) for r in rows}) > 1:
            raise ValueError("stream: the arrays have different numbers of rows")
        self._rows, self._t = rows, 0

    def __iter__(self):
        return self

    def __next__(self):
        t = self._t
        if not self._rows or t >= len(self._rows[0]):
            raise StopIteration
        step = tuple(np.array(rows[t]) for rows in self._rows)  # fresh copies
        for rows in self._rows:
            rows[t] = np.nan  # handed out: erased here
        self._t = t + 1
        return step


class Tracked(np.ndarray):
    """A float array that logs which of its rows meet the rows of another in a product.

    The child hands a function its queries and keys as ``Tracked`` arrays sharing one log.
    Slices, transposes, reshapes and copies keep track of the rows their entries come from;
    any product or elementwise operation that takes entries of both (``@``, ``np.dot``,
    ``np.einsum``, ``*`` ...) appends ``(query rows, key rows)`` to the log, so a judge can
    see which scores were computed, whatever is masked afterwards. A value read one number
    at a time (``float(K[2, 0])``) or turned into a plain array (``np.asarray``) is no longer
    followed: then the log stays empty and the judge says so. ``.view(np.ndarray)`` and
    ``.tolist()`` are logged as escapes (:data:`ESCAPED`), reported as ``"escaped": True``.
    """

    def __new__(cls, data, source, log):
        data = np.array(data, dtype=np.float64, order="C")
        obj = data.view(cls)
        shape = (-1,) + (1,) * (data.ndim - 1)
        obj._source, obj._log = source, log
        obj._set_ids(np.broadcast_to(np.arange(len(data)).reshape(shape), data.shape))
        return obj

    def _set_ids(self, ids):
        """Remember the row of every entry, keyed by the entry's place in memory."""
        ids = np.asarray(ids, dtype=np.int64)
        self._home = (self.__array_interface__["data"][0], _offsets(self), ids.copy())

    @property
    def row_ids(self):
        """The row of the original input each entry comes from, shape ``self.shape``."""
        home = getattr(self, "_home", None)
        if home is None:
            return None
        ptr, offsets, ids = home
        if not offsets.size:
            return np.zeros(self.shape, dtype=np.int64)
        mine = self.__array_interface__["data"][0] - ptr + _offsets(self)
        lookup = dict(zip(offsets.ravel().tolist(), ids.ravel().tolist(), strict=True))
        try:
            return np.array([lookup[o] for o in mine.ravel().tolist()]).reshape(self.shape)
        except KeyError:
            return None

    def __array_finalize__(self, obj):
        self._source = getattr(obj, "_source", None)
        self._log = getattr(obj, "_log", None)
        home = getattr(obj, "_home", None)
        self._home = home
        if home is None or self.row_ids is not None:
            return  # a view of the same memory: its rows are found from its place
        ids = obj.row_ids if isinstance(obj, Tracked) else None
        if ids is not None and ids.shape == self.shape:  # a copy: the same entries
            self._set_ids(ids)
        elif ids is not None:  # a new array from the entries of obj: any of its rows
            self._set_ids(np.full(self.shape, -1))
            self._rows = frozenset(ids.ravel().tolist())

    def _row_set(self):
        ids = self.row_ids
        if ids is None or (ids.size and ids.min() < 0):
            return getattr(self, "_rows", frozenset())
        return frozenset(ids.ravel().tolist())

    def __getitem__(self, key):
        ids = self.row_ids
        result = super().__getitem__(key)
        if (
            isinstance(result, Tracked)
            and ids is not None
            and not np.may_share_memory(_base(result), _base(self))
        ):
            result._set_ids(ids[key])  # fancy indexing: a copy of the chosen entries
        return result

    def view(self, *args, **kwargs):
        """A view as a plain array (``Q.view(np.ndarray)``) is logged as an escape."""
        result = super().view(*args, **kwargs)
        if not isinstance(result, Tracked) and self._log is not None:
            self._log.append(ESCAPED)
        return result

    def tolist(self):
        """Numbers as Python lists (``np.array(Q.tolist())``) are logged as an escape."""
        if self._log is not None:
            self._log.append(ESCAPED)
        return super().tolist()

    def dot(self, other, out=None):
        return np.dot(self, other) if out is None else np.dot(self, other, out=out)

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        seen = _sources(inputs) | _sources(kwargs.get("out", ()))
        plain = [_plain(x) for x in inputs]
        if "out" in kwargs:
            kwargs["out"] = tuple(_plain(x) for x in kwargs["out"])
        result = getattr(ufunc, method)(*plain, **kwargs)
        return _follow(seen, result, method == "__call__" and ufunc is not np.matmul, inputs)

    def __array_function__(self, func, types, args, kwargs):
        seen = _sources(args) | _sources(kwargs.values())
        result = func(*_plain(args), **_plain(kwargs))
        follows = func in _KEEPS_ENTRIES
        return _follow(seen, result, follows, args)


_KEEPS_ENTRIES = {
    np.transpose, np.swapaxes, np.reshape, np.squeeze, np.expand_dims, np.copy,
    np.atleast_1d, np.atleast_2d, np.ravel, np.moveaxis, np.flip,
}  # fmt: skip


ESCAPED = ("escaped",)  # the log entry of a view or a list that is no longer followed


def _base(a):
    """``a`` as a plain ndarray view, never logged (the course's own bookkeeping)."""
    return np.ndarray.view(a, np.ndarray)


def _offsets(a):
    """Byte offsets of every entry of ``a`` from its data pointer, shape ``a.shape``."""
    offsets = np.zeros(a.shape, dtype=np.int64)
    for axis, (size, stride) in enumerate(zip(a.shape, a.strides, strict=True)):
        shape = [1] * a.ndim
        shape[axis] = size
        offsets = offsets + (np.arange(size, dtype=np.int64) * stride).reshape(shape)
    return offsets


def _sources(values, depth=0):
    """``{source: rows}`` for every Tracked array in ``values`` (nested lists, tuples)."""
    found = {}
    if depth > 8:
        return found
    items = values if isinstance(values, (list, tuple)) else (values,)
    for item in items:
        if isinstance(item, Tracked) and item._source is not None:
            found.setdefault(item._source, set()).update(item._row_set())
        elif isinstance(item, (list, tuple)):
            for source, rows in _sources(item, depth + 1).items():
                found.setdefault(source, set()).update(rows)
    return found


def _plain(value):
    if isinstance(value, Tracked):
        return _base(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_plain(v) for v in value)
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    return value


def _follow(seen, result, keeps_entries, inputs):
    """Log a product of queries and keys; keep following an array made from one of them."""
    if len(seen) > 1:  # entries of both met: these scores were computed
        log = next(x._log for x in _flat(inputs) if isinstance(x, Tracked))
        if log is not None:
            log.append((sorted(seen["q"]), sorted(seen["k"])))
        return result
    tracked = [x for x in _flat(inputs) if isinstance(x, Tracked)]
    if len(seen) != 1 or not isinstance(result, np.ndarray) or result.dtype.kind != "f":
        return result
    source = tracked[0]
    followed = result.view(Tracked)
    followed._source, followed._log = source._source, source._log
    ids = source.row_ids
    if keeps_entries and len(tracked) == 1 and ids is not None:
        try:
            followed._set_ids(np.broadcast_to(ids, result.shape))
            return followed
        except ValueError:
            pass
    followed._set_ids(np.full(result.shape, -1))
    followed._rows = frozenset(seen[source._source])
    return followed


def _flat(values, depth=0):
    items = values if isinstance(values, (list, tuple)) else (values,)
    for item in items:
        if isinstance(item, (list, tuple)) and depth < 8:
            yield from _flat(item, depth + 1)
        else:
            yield item


def _one_line(err):
    text = f"{type(err).__name__}: {err}".splitlines()
    line = text[0] if text else type(err).__name__
    return line if len(line) <= 300 else line[:297] + "..."


def _tracemalloc():
    """The tracemalloc module, or None where Python was built without it (then a memory
    case is not measured, and says so nowhere: the grader's kernels measure it)."""
    try:
        import tracemalloc
    except ImportError:  # pragma: no cover - every CPython build here has it
        return None
    return tracemalloc


def _status(key):
    """A line of /proc/self/status in bytes (``VmRSS``, ``VmHWM``), or None."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def _resident_start():
    """Resident memory now, with the kernel's high-water mark reset to it (Linux): memory
    tracemalloc does not see (``mmap``, ``np.memmap``) still has to be resident to be used.
    BLAS's buffers are touched first, so that they do not count against the function."""
    warm = np.ones((64, 64))
    _ = warm @ warm, warm[0] @ warm, np.exp(warm), np.sqrt(warm)
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as refs:
            refs.write("5")  # reset VmHWM to VmRSS
    except OSError:
        return None
    return _status("VmRSS")


def _resident_growth(start):
    """Bytes the resident high-water mark rose since :func:`_resident_start`, or None."""
    high = _status("VmHWM") if start is not None else None
    return None if high is None else max(0, high - start)


def _types(value):
    """What the result was before the wire turned it into data, one name per item of a
    tuple (an array's dtype, else the type's name), when an item is an array of objects,
    which the wire sends as float64 numbers: a rule on the result's type then judges what
    the function returned, not its transport. None otherwise (what arrives is what was
    returned)."""
    items = value if isinstance(value, tuple) else (value,)
    if not any(isinstance(item, np.ndarray) and item.dtype.kind == "O" for item in items):
        return None  # what arrives is what was returned: nothing to add
    return [
        item.dtype.name if isinstance(item, np.ndarray) else type(item).__name__
        for item in items[:64]
    ]


REFUSED_FILE = (
    "wrote to a file (a temporary file, /dev/shm or another tmpfs) while its memory was "
    "measured: check refuses that, as a table kept in a file is not counted"
)
REFUSED_PROCESS = (
    "started a new process ({}) while its memory was measured: check refuses that, as "
    "the memory of another process is not counted"
)
_refusals = []  # what the sealed child refused during the current call (see _seal)


def _refuse(name):
    def refused(*args, **kwargs):
        _refusals.append(REFUSED_PROCESS.format(name))
        raise PermissionError(f"check refuses {name} while it measures memory")

    return refused


def _seal():
    """In the child, before a call whose memory is measured: no file may grow (a table in a
    temporary file, ``/dev/shm`` or a ``memfd`` lives in the page cache, where neither
    tracemalloc nor the resident size sees it) and no new process may start (its memory is
    its own). ``RLIMIT_FSIZE`` 0 with ``SIGXFSZ`` ignored (a write fails with EFBIG);
    ``os.fork``, ``subprocess`` and ``multiprocessing`` (through ``_posixsubprocess``),
    ``os.posix_spawn`` and ``os.system`` raise; on Linux x86-64 a seccomp filter also
    refuses the system calls themselves (``fork``, ``vfork``, ``clone`` of a process,
    ``execve``, raising a resource limit), so ``ctypes`` cannot go around the names. The
    child only ever runs the learner's function and exits: nothing is undone. Transparent
    huge pages are turned off for it (one 2 MiB page faulted in for a small allocation looked
    like untraced memory to the resident measurement)."""
    try:  # PR_SET_THP_DISABLE (41)
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(41, 1, 0, 0, 0)
    except (ImportError, OSError, AttributeError):  # pragma: no cover - not Linux
        pass
    try:
        import resource

        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    except (ImportError, AttributeError, ValueError, OSError):  # pragma: no cover - not Linux
        pass
    for module, names in (
        (os, ("fork", "forkpty", "posix_spawn", "posix_spawnp", "system", "execv", "execve")),
        ("_posixsubprocess", ("fork_exec",)),
        ("subprocess", ("_fork_exec",)),  # bound at import: from _posixsubprocess import ...
    ):
        if isinstance(module, str):
            try:
                module = __import__(module)
            except ImportError:  # pragma: no cover - not POSIX
                continue
        for name in names:
            if hasattr(module, name):
                setattr(module, name, _refuse(f"{module.__name__}.{name}"))
    _seccomp()


def _seccomp():
    """A seccomp filter (Linux x86-64) that fails ``fork``, ``vfork``, ``clone`` without
    ``CLONE_THREAD`` (threads are allowed), ``clone3`` (ENOSYS: the C library then uses
    ``clone``), ``execve``, ``execveat``, ``setrlimit`` and ``prlimit64`` with a new limit,
    with EPERM; True when it is in place."""
    import ctypes
    import platform
    import struct

    if sys.platform != "linux" or platform.machine() != "x86_64":
        return False
    eperm, enosys = 0x00050000 | 1, 0x00050000 | 38
    allow = 0x7FFF0000
    ld, jeq, jset, ret = 0x20, 0x15, 0x45, 0x06  # BPF_LD|W|ABS, JMP|JEQ|K, JMP|JSET|K, RET|K
    prog = [
        (ld, 0, 0, 4),  # arch
        (jeq, 1, 0, 0xC000003E),  # AUDIT_ARCH_X86_64, else refuse everything unusual
        (ret, 0, 0, eperm),
        (ld, 0, 0, 0),  # the system call's number
        (jset, 0, 1, 0x40000000),  # x32 numbers: refused
        (ret, 0, 0, eperm),
    ]
    refused = (57, 58, 59, 160, 322)  # fork, vfork, execve, setrlimit, execveat
    tail = [
        (jeq, 0, 1, 435),  # clone3
        (ret, 0, 0, enosys),
        (jeq, 0, 3, 56),  # clone: allowed for a thread only
        (ld, 0, 0, 16),  # flags, low word of args[0]
        (jset, 7, 6, 0x10000),  # CLONE_THREAD: allow (7 ahead), else eperm (6 ahead)
        (ld, 0, 0, 0),
        (jeq, 0, 5, 302),  # prlimit64: refused when it sets a limit (args[2] not NULL)
        (ld, 0, 0, 32),
        (jeq, 0, 2, 0),
        (ld, 0, 0, 36),
        (jeq, 1, 0, 0),
        (ret, 0, 0, eperm),
        (ret, 0, 0, allow),
    ]
    for number in refused:
        prog += [(jeq, 0, 1, number), (ret, 0, 0, eperm)]
    prog += tail
    raw = b"".join(struct.pack("HBBI", *ins) for ins in prog)
    buffer = ctypes.create_string_buffer(raw)

    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]

    fprog = Program(len(prog), ctypes.addressof(buffer))
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        if libc.prctl(38, 1, 0, 0, 0) != 0:  # PR_SET_NO_NEW_PRIVS
            return False
        return libc.prctl(22, 2, ctypes.byref(fprog), 0, 0) == 0  # PR_SET_SECCOMP, FILTER
    except (OSError, AttributeError):  # pragma: no cover
        return False


def _refusal(err=None):
    """What the sealed child refused during the call, as a sentence, or None."""
    if _refusals:
        return _refusals[0]
    if isinstance(err, OSError) and err.errno == 27:  # EFBIG: RLIMIT_FSIZE
        return REFUSED_FILE
    return None


def _call(function, args, child=False):
    """One call (in the child when ``child``, which a memory case then seals, see
    :func:`_seal`); the record as JSON-ready data (with what the case's instructions asked
    to measure, see :func:`split_case`)."""
    how, args = split_case(args)
    measured = {}
    try:
        with warnings.catch_warnings(), np.errstate(all="ignore"):
            warnings.simplefilter("ignore")
            args = list(copy.deepcopy(args))
            log = []
            for index, source in zip(how.get("track", ()), "qk", strict=False):
                args[index] = Tracked(args[index], source, log)
            count = how.get("stream")
            if isinstance(count, int) and not isinstance(count, bool) and count > 0:
                args = [stream(args[:count]), *args[count:]]
            if how.get("form") and hasattr(function, "form"):
                return {"ok": None, "form": function.form()}
            tracemalloc = _tracemalloc() if how.get("peak") else None
            peak = tracemalloc is not None and not tracemalloc.is_tracing()
            if peak and child:
                _seal()
                tracemalloc.start()
                start = tracemalloc.get_traced_memory()[0]
                resident = _resident_start()
            try:
                value = function(*args)
            finally:
                if peak:
                    if tracemalloc.is_tracing():
                        measured["peak"] = int(tracemalloc.get_traced_memory()[1] - start)
                        tracemalloc.stop()
                    else:  # the function stopped the measurement: it cannot be judged
                        measured["peak"] = -1
                    grown = _resident_growth(resident)
                    if grown is not None:
                        measured["resident"] = grown
            if how.get("track"):
                products = {(tuple(q), tuple(k)) for q, k in (x for x in log if x != ESCAPED)}
                measured["products"] = [[list(q), list(k)] for q, k in sorted(products)]
                if ESCAPED in log:
                    measured["escaped"] = True
            types = _types(value)
            if types is not None:
                measured["types"] = types
            return {"ok": wire.to_data(_plain(value)), **measured}
    except SystemExit as stop:
        code = stop.code
        return {"exit": code if isinstance(code, int) and not isinstance(code, bool) else 1}
    except BaseException as err:  # noqa: BLE001 - the learner's exception, reported as data
        refused = _refusal(err)
        return {"error": _one_line(err), **({"refused": refused} if refused else {})}
    finally:
        _refusals.clear()


def _taken(cases, index):
    case, cases[index] = cases[index], None
    return case


def _child(function, cases, write_fd):
    """Runs in the forked child: never returns."""
    code = 0
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # an interrupt ends the child at once
        devnull = os.open(os.devnull, os.O_RDWR)
        for fd in (0, 1, 2):
            os.dup2(devnull, fd)
        sys.stdout = sys.stderr = io.StringIO()  # this process only: it is about to exit
        sys.stdin = io.StringIO()
        with os.fdopen(write_fd, "w", encoding="utf-8") as out:
            for index in range(len(cases)):
                # the case leaves the list (this process's copy) before the call: a frame
                # above the function's does not lead back to its arrays
                record = _call(function, _taken(cases, index), child=True)
                try:
                    line = json.dumps(record, allow_nan=False, separators=(",", ":"))
                except (TypeError, ValueError) as err:
                    line = json.dumps({"error": f"the result could not be sent: {err}"})
                out.write(line + "\n")
                out.flush()
    except BaseException:  # noqa: BLE001 - the child must never fall back into the caller
        code = 70
    finally:
        os._exit(code)


def _measures(obj):
    """What a child measured beside a result, as plain data (see :func:`split_case`)."""
    found = {}
    for key in ("peak", "resident"):
        if isinstance(obj.get(key), int) and not isinstance(obj.get(key), bool):
            found[key] = obj[key]
    products = obj.get("products")
    if isinstance(products, list) and all(
        isinstance(p, list)
        and len(p) == 2
        and all(isinstance(rows, list) and all(type(i) is int for i in rows) for rows in p)
        for p in products
    ):
        found["products"] = products
    if obj.get("escaped") is True:
        found["escaped"] = True
    if "form" in obj:
        found["form"] = obj["form"]
    types = obj.get("types")
    if isinstance(types, list) and all(isinstance(t, str) and len(t) < 100 for t in types):
        found["types"] = types
    if isinstance(obj.get("refused"), str):
        found["refused"] = obj["refused"][:200]
    return found


def _record(line):
    try:
        obj = json.loads(line)
        key = next(k for k in obj if k not in MEASURES) if len(obj) > 1 else next(iter(obj))
    except (ValueError, TypeError, StopIteration, AttributeError):
        return {"error": "the child sent a malformed result"}
    if key == "ok":
        try:
            return {"ok": wire.from_data(obj["ok"]), **_measures(obj)}
        except ValueError as err:
            return {"error": f"the result could not be read: {err}"}
    if key == "error" and isinstance(obj[key], str):
        refused = _measures(obj).get("refused")
        return {"error": obj[key], **({"refused": refused} if refused else {})}
    if key == "exit" and isinstance(obj[key], int):
        return {"exit": obj[key]}
    return {"error": "the child sent a malformed result"}


def _exit_code(pid):
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return 1
    if os.WIFEXITED(status):
        return os.WEXITSTATUS(status)
    return -os.WTERMSIG(status) if os.WIFSIGNALED(status) else 1


NO_TIME_LIMIT = (
    "note: in the browser (Pyodide) your function runs in this kernel with no time limit; "
    "if a check never ends, use Kernel > Restart Kernel"
)
_noted = []  # the note above is printed once per kernel


def _in_process(function, cases):
    """:func:`call_cases` where there is no fork: Windows, and Pyodide in the browser (its
    ``os.fork`` exists but fails with ENOSYS). The same records, with the learner's prints
    discarded as in the child, but no time limit; in the browser a note says so, once."""
    if sys.platform == "emscripten" and not _noted:
        _noted.append(True)
        print(NO_TIME_LIMIT)
    records = []
    for args in cases:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            record = _call(function, args)
        try:
            line = json.dumps(record, allow_nan=False)
        except (TypeError, ValueError) as err:
            line = json.dumps({"error": f"the result could not be sent: {err}"})
        records.append(_record(line))
        if "exit" in record:  # as in the child: the calls after an exit are not run
            why = "ended the process"
            records += [{"error": _NOT_RUN.format(why)}] * (len(cases) - len(records))
            break
    return records


def call_cases(function, cases, seconds=TIME_LIMIT):
    """Call ``function(*args)`` for each ``args`` in ``cases`` in a child process.

    Parameters
    ----------
    function : callable
        The learner's function.
    cases : sequence of tuple
        Argument tuples; each call gets deep copies.
    seconds : float
        The most one call may take; the child is killed when it passes.

    Returns
    -------
    list of dict
        One record per case: ``{"ok": value}``, ``{"error": "Name: message"}``,
        ``{"timeout": seconds}`` or ``{"exit": code}``; cases after a timeout or an exit
        are ``{"error": "not run: ..."}``.

    Notes
    -----
    Needs ``os.fork`` (Linux, macOS). Where it is missing (Windows) or fails (Pyodide in the
    browser) the function is called in this process instead: the same records, but no time
    limit.
    """
    cases = [tuple(args) for args in cases]
    if not hasattr(os, "fork") or sys.platform == "emscripten":
        return _in_process(function, cases)
    read_fd, write_fd = os.pipe()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # fork with threads (3.12+)
        pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        os.close(read_fd)
        _child(function, cases, write_fd)
    os.close(write_fd)
    results, buffer = [], b""
    try:
        deadline = time.monotonic() + seconds
        eof = False
        while len(results) < len(cases) and not eof:
            while b"\n" in buffer and len(results) < len(cases):
                line, buffer = buffer.split(b"\n", 1)
                results.append(_record(line.decode("utf-8", errors="replace")))
                deadline = time.monotonic() + seconds  # the next call starts now
            if len(results) == len(cases):
                break
            left = deadline - time.monotonic()
            if left <= 0:
                break
            ready, _, _ = select.select([read_fd], [], [], left)
            if ready:
                chunk = os.read(read_fd, 1 << 20)
                eof = not chunk
                buffer += chunk
        while b"\n" in buffer and len(results) < len(cases):
            line, buffer = buffer.split(b"\n", 1)
            results.append(_record(line.decode("utf-8", errors="replace")))
    finally:
        os.close(read_fd)
        finished = len(results) == len(cases)
        if not finished or not eof:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        code = _exit_code(pid)
    if len(results) < len(cases):
        if eof:  # the child ended in the middle of a call: os._exit or a crash
            results.append({"exit": code} if code >= 0 else {"error": f"killed by signal {-code}"})
            why = "ended the process"
        else:
            results.append({"timeout": seconds})
            why = "ran out of time"
        results += [{"error": _NOT_RUN.format(why)}] * (len(cases) - len(results))
    return results


def expression_function(expr, names):
    """A function of numbers that evaluates a sympy answer at one point: the "proof" kind.

    ``expression_function(expr, names)(*values)`` puts ``values[i]`` in for the symbol
    called ``names[i]`` (by name, so ``Symbol("p_1", positive=True)`` counts as ``p_1``)
    and returns a float, or a flat float array for a matrix or a list of expressions.
    It runs where the answer lives, the learner's kernel (through :func:`call_cases`):
    the judge only ever receives the numbers, never the expression or a string to parse.

    Parameters
    ----------
    expr : sympy expression, sympy matrix, number, or list of those
    names : sequence of str
        The names of the symbols the expression may use, in the order of ``values``.

    Returns
    -------
    callable
        Raises ``TypeError`` for a string (strings are never parsed) and ``NameError``
        for a symbol that is not one of ``names``.

    Examples
    --------
    >>> import sympy as sp
    >>> p_1, p_2 = sp.symbols("p_1 p_2", positive=True)
    >>> expression_function(p_1 * (1 - p_1 - p_2), ["p_1", "p_2"])(0.5, 0.25)
    0.125
    >>> expression_function([p_1, 2 * p_2], ["p_1", "p_2"])(1, 3)
    array([1., 6.])
    """
    names = tuple(names)

    def form():
        """The expression as a tree of names and numbers (see :func:`expression_tree`)."""
        import sympy as sp

        if isinstance(expr, (str, bytes)):
            raise TypeError("a string is not an expression: build it from sympy symbols")
        e = sp.Matrix(list(expr)) if isinstance(expr, (list, tuple)) else sp.sympify(expr)
        return expression_tree(e)

    def at(*values):
        import sympy as sp

        if isinstance(expr, (str, bytes)):
            raise TypeError("a string is not an expression: build it from sympy symbols")
        if isinstance(expr, (list, tuple)):
            e = sp.Matrix(list(expr))
        else:
            e = sp.sympify(expr, strict=True)
        point = dict(zip(names, values, strict=True))
        unknown = sorted({str(s) for s in e.free_symbols} - set(point))
        if unknown:
            raise NameError(
                f"the expression uses {', '.join(unknown)}; it may only use {', '.join(names)}"
            )
        at_point = {s: sp.Float(point[str(s)], 30) for s in e.free_symbols}
        if isinstance(e, sp.MatrixBase) or getattr(e, "shape", ()):  # numbers, 30 digits
            return np.array(sp.Matrix(e).evalf(30, subs=at_point), dtype=np.float64).ravel()
        number = complex(e.evalf(30, subs=at_point))
        if number != number:  # nan (sympy's nan or zoo): judged "not a finite number"
            return float("nan")
        if number.imag != 0:
            raise ValueError(f"the expression is not real at this point ({number})")
        return number.real

    at.form = form
    return at


def expression_tree(e, depth=0):
    """A sympy expression as plain data a judge can rebuild without parsing text:
    ``["Symbol", name]``, ``["Integer", "3"]``, ``["Rational", "1", "2"]``, ``["Float",
    "0.5"]``, ``["Matrix", rows, cols, *entries]`` or ``[class name, *arguments]``.

    >>> import sympy as sp
    >>> expression_tree(sp.Symbol("p_1") * 2 + 1)
    ['Add', ['Integer', '1'], ['Mul', ['Integer', '2'], ['Symbol', 'p_1']]]
    """
    import sympy as sp

    if depth > 200:
        raise ValueError("the expression is nested too deeply")
    if isinstance(e, sp.MatrixBase):
        return ["Matrix", e.rows, e.cols, *(expression_tree(x, depth + 1) for x in e)]
    if isinstance(e, sp.Symbol):
        return ["Symbol", e.name]
    if isinstance(e, sp.Integer):
        return ["Integer", str(int(e))]
    if isinstance(e, sp.Rational):
        return ["Rational", str(e.p), str(e.q)]
    if isinstance(e, sp.Float):
        return ["Float", str(e)]
    if isinstance(e, sp.NumberSymbol) or e in (sp.S.Infinity, sp.S.NegativeInfinity, sp.nan):
        return [type(e).__name__]
    if isinstance(e, sp.Piecewise):
        return ["Piecewise", *([expression_tree(x, depth + 1), expression_tree(c, depth + 1)]
                               for x, c in e.args)]  # fmt: skip
    return [type(e).__name__, *(expression_tree(a, depth + 1) for a in e.args)]
