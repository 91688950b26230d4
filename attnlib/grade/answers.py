"""What a student wrote for each exercise, from the handed-in notebook's bytes.

The written-answer pages (:mod:`attnlib.grade.written`) and the similarity report
(:mod:`attnlib.grade.similarity`) read it from the report, like every export, so a
sharded run merged (:mod:`attnlib.grade.report`) gives the same pages as one run.

An exercise's *section* is the cells from its heading (the markdown cell that names its
id in backticks, as every exercise notebook does) up to the next heading; when the
student removed the heading, the cells from its check cell up to the next check cell or
heading. From the section, everything that the handed-out stub (``exercises/NN_x.ipynb``)
already holds is dropped, line by line for code and cell by cell for markdown, so what
is left is the student's own:

- ``code``: the code lines that are not in the stub (for similarity);
- ``text``: the markdown cells and ``#`` comments that are not in the stub (for a
  written "why" answer).

Nothing is run here and nothing is trusted: the notebook is parsed as JSON, and each
answer is cut to :data:`MAX_LINES` lines and :data:`MAX_CHARS` characters.
"""

import functools
import io
import json
import os
import re
import tokenize
from pathlib import Path

MAX_LINES = 200  # code lines kept per exercise
MAX_CHARS = 8000  # characters kept per exercise, code and text each
HEADING = re.compile(r"^\s*#")


def template_dir():
    """Where the handed-out stubs are: ``$ATTNLIB_TEMPLATES``, else the course's ``exercises/``."""
    found = os.environ.get("ATTNLIB_TEMPLATES")
    if found:
        return Path(found)
    import attnlib

    return Path(attnlib.__file__).resolve().parent.parent / "exercises"


@functools.cache
def _stub(folder, stem):
    """The stub's cells, or ``[]`` when there is none."""
    try:
        return _cells((Path(folder) / f"{stem}.ipynb").read_bytes())
    except (OSError, ValueError, UnicodeDecodeError):
        return []


def _template(folder, stem, exercise_id):
    """``(code lines, markdown texts)`` of the stub's section for one exercise, stripped."""
    cells = _stub(folder, stem)
    found = [cells[i] for i in section(cells, exercise_id)]
    code = {line.strip() for kind, source in found if kind == "code" for line in source.split("\n")}
    markdown = {source.strip() for kind, source in found if kind == "markdown"}
    return code, markdown


def _cells(data):
    """``[(cell_type, source), ...]`` of a notebook's bytes; ValueError if not a notebook."""
    nb = json.loads(data.decode("utf-8"))
    if not isinstance(nb, dict) or not isinstance(nb.get("cells"), list):
        raise ValueError("not a notebook")
    cells = []
    for cell in nb["cells"]:
        if not isinstance(cell, dict):
            raise ValueError("not a cell")
        source = cell.get("source", "")
        if isinstance(source, list):
            source = "".join(s for s in source if isinstance(s, str))
        if not isinstance(source, str):
            source = ""
        cells.append((cell.get("cell_type"), source))
    return cells


def _is_heading(kind, source):
    return kind == "markdown" and bool(HEADING.match(source))


def section(cells, exercise_id):
    """The indices of the cells that answer ``exercise_id`` (see the module docstring)."""
    named = f"`{exercise_id}`"
    check = re.compile(rf"""\bcheck\(\s*(['"]){exercise_id}\1""")
    start = next((i for i, (k, s) in enumerate(cells) if _is_heading(k, s) and named in s), None)
    if start is None:
        start = next(
            (i - 1 for i, (k, s) in enumerate(cells) if k == "code" and check.search(s)), None
        )
        if start is None:
            return []
    found = []
    for i in range(start + 1, len(cells)):
        kind, source = cells[i]
        if _is_heading(kind, source):
            break
        if found and kind == "code" and "check(" in source and not check.search(source):
            if any(check.search(cells[j][1]) for j in found):
                break  # the next exercise's check cell, when its heading was removed
        found.append(i)
    return found


def _comment(line):
    """The ``#`` comment of one code line, without the ``#`` ("" when there is none)."""
    try:
        tokens = list(tokenize.generate_tokens(io.StringIO(line.strip() + "\n").readline))
    except (tokenize.TokenError, SyntaxError, IndentationError):
        tokens = []
        if line.strip().startswith("#"):
            return line.strip().lstrip("#").strip()
    return " ".join(t.string.lstrip("#").strip() for t in tokens if t.type == tokenize.COMMENT)


def _cut(text):
    return text if len(text) <= MAX_CHARS else text[:MAX_CHARS] + "\n[... cut]"


def collect(stem, data, exercise_ids, templates=None):
    """``{exercise id: {"code": str, "text": str}}`` of one notebook (``{}`` if unreadable).

    Parameters
    ----------
    stem : str
        The lesson (the notebook's file name without ``.ipynb``), which picks the stub.
    data : bytes
        The handed-in notebook, as the grader snapshotted it.
    exercise_ids : sequence of str
        The lesson's exercises, from the course registry (never from the file).
    templates : path, optional
        The folder of stubs (default :func:`template_dir`).
    """
    try:
        cells = _cells(data)
    except (ValueError, UnicodeDecodeError, RecursionError):
        return {}
    answers = {}
    for exercise_id in exercise_ids:
        code_stub, markdown_stub = _template(str(templates or template_dir()), stem, exercise_id)
        code, text = [], []
        for i in section(cells, exercise_id):
            kind, source = cells[i]
            if kind == "markdown" and source.strip() and source.strip() not in markdown_stub:
                text.append(source.strip())
            elif kind == "code":
                for line in source.split("\n"):
                    if not line.strip() or line.strip() in code_stub:
                        continue
                    code.append(line.rstrip())
                    comment = _comment(line)
                    if comment:
                        text.append(comment)
        answers[exercise_id] = {
            "code": _cut("\n".join(code[:MAX_LINES])),
            "text": _cut("\n\n".join(text)),
        }
    return answers
