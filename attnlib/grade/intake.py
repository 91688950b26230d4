"""What the grader reads: the paths on the command line, the handed-in files, a resume file.

Every handed-in notebook is read once, at the start, and graded from that snapshot:
only regular ``.ipynb`` files up to ``NOTEBOOK_SIZE`` bytes, never through a symbolic
link (a linked notebook or folder is reported, not followed), and no other file unless
it is listed (``data_files``) and small; after the run, a snapshotted file that changed
meanwhile can be written back (never through a link). Names are printed through
:func:`escape`, whatever bytes they hold.
"""

import json
import os
import re
import stat
from pathlib import Path

from . import safe
from .errors import GraderError
from .notebook import NOTEBOOK, row

NOTEBOOK_SIZE = 32 * 2**20  # bytes: a larger notebook is not read
DATA_FILE_SIZE = 2**20  # bytes: a listed data file larger than this is not copied
# what browsers, LMSs and Jupyter add to a name: "03_scoring (1)", "03_scoring-2", "-Copy1"
COPY_SUFFIX = re.compile(r"(?:\s*\(\d+\)|[\s_-]+\d+|[\s_-]*copy\d*(?:\s*\(\d+\))?)+", re.I)


def lesson_of(stem, lessons=None):
    """``(lesson, exact)`` for a notebook's name without ``.ipynb``; ``(None, False)``.

    The name is the lesson's (``03_scoring``), or the lesson's followed by what a second
    download or an LMS adds to it (``03_scoring (1)``, ``03_scoring-2``,
    ``03_scoring - Copy``); the longest lesson name that fits wins.

    >>> lesson_of("03_scoring (1)"), lesson_of("03_scoring-2"), lesson_of("03_scoring")
    (('03_scoring', False), ('03_scoring', False), ('03_scoring', True))
    >>> lesson_of("03_scoring_notes"), lesson_of("01_pandas_intro")
    ((None, False), (None, False))
    """
    if lessons is None:
        from attnlib.selfcheck.registry import LESSONS as lessons
    stem = str(stem)
    if stem in lessons:
        return stem, True
    for lesson in sorted(lessons, key=len, reverse=True):
        if stem.startswith(lesson) and COPY_SUFFIX.fullmatch(stem[len(lesson) :]):
            return lesson, False
    return None, False


def assign(notebooks, lessons=None):
    """``({notebook: lesson}, {notebook: reason})``: which lesson each notebook is graded as.

    A notebook named as a lesson (or as a copy of one, :func:`lesson_of`) is graded as
    that lesson. When one folder holds several for one lesson, the one named exactly is
    graded and each other is reported, not graded; with no exact name, none is graded
    and each is reported: the grader never picks one silently.
    """
    found = {}
    for path in notebooks:
        lesson, exact = lesson_of(Path(path).stem, lessons)
        if lesson is not None:
            found.setdefault(lesson, []).append((not exact, str(path)))
    chosen, refused = {}, {}
    for lesson, named in found.items():
        if len(named) == 1:
            chosen[named[0][1]] = lesson
            continue
        named.sort()
        names = ", ".join(escape(Path(p).name) for _, p in named)
        graded = named[0][1] if not named[0][0] else None
        if graded is not None:
            chosen[graded] = lesson
        for _, path in named:
            if path == graded:
                continue
            which = f"{escape(Path(graded).name)} is graded" if graded else "none is graded"
            refused[path] = (
                f"{len(named)} notebooks for lesson {lesson} in one folder ({names}): "
                f"{which}; keep one and grade again"
            )[:300]
    return chosen, refused


def escape(name):
    """A file name as one printable line: control characters, ANSI codes and bytes that
    are not UTF-8 become backslash escapes.

    >>> escape("a\\nb\\x1b[2K.ipynb"), escape("caf\\udce9.ipynb"), escape("é")
    ('a\\\\nb\\\\x1b[2K.ipynb', 'caf\\\\xe9.ipynb', 'é')
    >>> escape("lone \\ud800 surrogate")
    'lone \\\\ud800 surrogate'
    """
    try:
        text = str(name).encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a lone surrogate that stands for no byte (a notebook's text)
        text = safe.text(name)
    out = []
    for ch in text:
        if ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif not ch.isprintable() and ch != " ":
            out.append(ch.encode("unicode_escape").decode("ascii"))
        else:
            out.append(ch)
    return "".join(out)


def _link_row(path, what):
    try:
        target = os.readlink(path)
    except OSError:
        target = "?"
    message = f"{what} is a symbolic link (to {target}): not followed, not graded"
    return row(path, NOTEBOOK, "error", message=message[:300])


def targets(paths):
    """``([(folder, [notebook, ...]), ...], refused)`` for the paths on the command line.

    A folder gives its ``*.ipynb`` files (not its subfolders), sorted, and keeps its
    place even when it holds none; a file is graded in its folder's group. Symbolic links
    (a notebook or a folder) and ``.ipynb`` names that are not regular files are never
    followed: each is one error row in ``refused`` (``{folder: [row, ...]}``).
    """
    groups, refused = {}, {}
    for p in map(Path, paths):
        if p.is_symlink():
            groups.setdefault(str(p), [])
            refused.setdefault(str(p), []).append(_link_row(p, "the folder or file"))
        elif p.is_dir():
            groups.setdefault(str(p), [])
            for q in sorted(p.iterdir()):
                if q.suffix != ".ipynb":
                    continue
                if q.is_symlink():
                    refused.setdefault(str(p), []).append(_link_row(q, "the notebook"))
                elif not stat.S_ISREG(q.lstat().st_mode):
                    message = "not a regular file: not graded"
                    odd = row(q, NOTEBOOK, "error", message=message)
                    refused.setdefault(str(p), []).append(odd)
                else:
                    groups[str(p)].append(q)
        elif p.is_file() and p.suffix == ".ipynb":
            groups.setdefault(str(p.parent), []).append(p)
        else:
            raise GraderError(f"{escape(p)} is not a notebook or a folder of notebooks.")
    return [(folder, list(dict.fromkeys(found))) for folder, found in groups.items()], refused


def read_regular(path, limit):
    """The bytes of a regular file (never through a link, never a FIFO), or a reason."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError as err:
        return f"could not be opened ({err.strerror})"
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            return "not a regular file"
        if info.st_size > limit:
            return f"{info.st_size} bytes, more than the {limit} allowed"
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
        return data if len(data) <= limit else f"more than the {limit} bytes allowed"
    finally:
        os.close(fd)


def snapshot(groups, data_files=(), notebook_size=NOTEBOOK_SIZE, data_size=DATA_FILE_SIZE):
    """Every handed-in notebook's bytes, read once now; and each folder's listed files.

    Returns ``(files, extras, reasons)``: ``{path: bytes}`` of the notebooks,
    ``{folder: {name: bytes}}`` of the listed data files (small, regular) and
    ``{path: reason}`` for each notebook or listed file that could not be read.
    No other file is opened.
    """
    files, extras, reasons = {}, {}, {}
    for folder, notebooks in groups:
        for path in notebooks:
            data = read_regular(path, notebook_size)
            if isinstance(data, bytes):
                files[str(path)] = data
            else:
                reasons[str(path)] = data
        for name in data_files:
            path = Path(folder) / name
            if not os.path.lexists(path):
                continue
            data = read_regular(path, data_size)
            if isinstance(data, bytes):
                extras.setdefault(folder, {})[name] = data
            else:
                reasons[str(path)] = data
    return files, extras, reasons


def restore(files):
    """Write back every snapshot file that changed or vanished; return their paths.

    A link put in a file's place is removed, never written through.
    """
    touched = []
    for name, data in files.items():
        path = Path(name)
        same = read_regular(path, len(data)) == data if not path.is_symlink() else False
        if not same:
            touched.append(name)
            try:
                if path.is_symlink():
                    path.unlink()
                flags = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW
                fd = os.open(path, flags, 0o644)
                with os.fdopen(fd, "wb") as f:
                    f.write(data)
            except OSError:
                pass
    return touched


def read_resume(path):
    """``{notebook: result}`` from an earlier ``--jsonl`` file (lines with ``sha256``)."""
    found = {}
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                try:
                    item = json.loads(line)
                except ValueError:
                    continue
                if isinstance(item, dict) and {"notebook", "rows", "sha256"} <= item.keys():
                    found[item["notebook"]] = item
    except OSError as err:
        raise GraderError(f"--resume: {path} could not be read ({err.strerror})") from err
    return found
