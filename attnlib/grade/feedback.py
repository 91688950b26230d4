"""``--feedback DIR``: one self-contained HTML page per student, readable offline.

Each page lists the student's exercises (the class's columns, in course order): the
status, the points, and for a wrong answer the named mistake in the course's own words
(:data:`attnlib.selfcheck.mistakes.MISTAKES`) with the exercise's first hint. It never
shows an expected value, a wrong answer's comparison line (which may quote the expected
entry) or a solution. The page has its style inline and no script, link, image or font:
it opens from a disk or an e-mail attachment. Every text a student controls (folder and
file names, error messages from their code) is HTML-escaped.

File names: ``<folder name>.html`` with every character outside ``[A-Za-z0-9._-]``
replaced by ``_`` (and a number added when two folders would collide).
"""

import html
import re
from pathlib import Path

from attnlib.selfcheck.mistakes import MISTAKES

from . import safe
from .gradebook import note, number
from .notebook import NOTEBOOK
from .points import folder_of

STYLE = """
body { font-family: sans-serif; max-width: 60em; margin: 2em auto; padding: 0 1em; color: #111; }
table { border-collapse: collapse; width: 100%; }
th, td { border: 1px solid #999; padding: .4em .6em; text-align: left; vertical-align: top; }
.passed { color: #075; } .wrong, .error { color: #a00; } .other { color: #555; }
"""
SAID = {
    "passed": "Correct.",
    "not attempted": "Not attempted: the answer is still the placeholder.",
    "missing": "The check cell of this exercise was removed, so it could not be graded.",
    "not reached": "The notebook stopped before this exercise (a time limit or a crash).",
}


def _e(text):
    return html.escape(safe.text(text), quote=True)  # any bytes: escaped, never a traceback


def page_name(folder, taken):
    """A safe, unique file name for one folder's page."""
    base = re.sub(r"[^A-Za-z0-9._-]", "_", Path(folder).name).strip(".") or "student"
    name, n = f"{base}.html", 1
    while name in taken:
        n += 1
        name = f"{base}-{n}.html"
    taken.add(name)
    return name


def explain(row, exercise):
    """The words shown for one row: never the expected value or a solution."""
    status = row["status"]
    if status == "wrong":
        hint = exercise.hints[0] if exercise is not None else ""
        if row.get("mistake") in MISTAKES:
            return f"Wrong: {MISTAKES[row['mistake']]} Hint: {hint}"
        return f"Wrong: this is not the right result yet. Hint: {hint}"
    if status == "error":
        return f"Error: {row.get('message', '')}"  # the grader's or the student's own words
    return SAID.get(status, status)


def page(report, folder, registry):
    """The HTML text of one student's page."""
    rows = {r["exercise"]: r for r in report["rows"] if folder_of(r) == folder}
    mine = report["points"]["by_folder"].get(folder, {"earned": 0.0, "possible": 0.0})
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Feedback: {_e(Path(folder).name)}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>Feedback for {_e(Path(folder).name)}</h1>",
        f"<p>{number(mine['earned'])} of {number(mine['possible'])} points"
        + (
            " (written answers count once a teacher has read them)."
            if _waiting(report, folder)
            else "."
        )
        + "</p>",
        "<table><tr><th>Exercise</th><th>Status</th><th>Points</th><th>What to look at</th></tr>",
    ]
    written = report["points"]["written"].get(folder, {})
    for column in report["points"]["columns"]:
        exercise = registry.get(column["exercise"])
        r = rows.get(column["exercise"]) or {"status": "missing", "points": 0.0}
        if column["exercise"] not in rows:
            words = f"No notebook {column['lesson']}.ipynb was graded for this exercise."
        else:
            words = explain(r, exercise)
        kind = r["status"] if r["status"] in ("passed", "wrong", "error") else "other"
        lines.append(
            f"<tr><td>{_e(column['lesson'])}: {_e(column['exercise'])}</td>"
            f'<td class="{kind}">{_e(r["status"])}</td>'
            f"<td>{number(r.get('points', 0.0))} / {number(column['points'])}</td>"
            f"<td>{_e(words)}</td></tr>"
        )
        if column["written"] > 0:
            got = written.get(column["exercise"])
            said = (
                "not scored yet" if got is None else f"{number(got)} / {number(column['written'])}"
            )
            lines.append(
                f'<tr><td>{_e(column["exercise"])} (written)</td><td class="other">read by a '
                f"teacher</td><td>{_e(said)}</td><td>{_e(exercise.written)}</td></tr>"
            )
    lines.append("</table>")
    problems = [r for r in report["rows"] if folder_of(r) == folder and r["exercise"] == NOTEBOOK]
    if problems:
        lines.append("<h2>Notebooks that could not be graded whole</h2><ul>")
        for r in problems:
            lines.append(f"<li>{_e(Path(r['notebook']).name)}: {_e(r['message'])}</li>")
        lines.append("</ul>")
    errors = {nb: e for nb, e in report["cell_errors"].items() if str(Path(nb).parent) == folder}
    if errors:
        lines.append("<h2>Cells that raised an error</h2><ul>")
        for notebook, found in errors.items():
            for number_, reason in found:
                lines.append(f"<li>{_e(Path(notebook).name)}, cell {number_}: {_e(reason)}</li>")
        lines.append("</ul>")
    lines.append("</body></html>")
    return "\n".join(lines) + "\n"


def _waiting(report, folder):
    """True when a written answer of this folder is not scored yet."""
    scored = report["points"]["written"].get(folder, {})
    return any(
        c["written"] > 0 and c["exercise"] not in scored for c in report["points"]["columns"]
    )


def write(report, directory, registry):
    """Write every student's page into ``directory``; return ``{folder: file name}``.

    A page that cannot be made says so (and the report's ``export_notes`` too); the
    other students' pages are written all the same.
    """
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    names, taken = {}, set()
    for folder in report["by_folder"]:
        names[folder] = page_name(folder, taken)
        try:
            text = page(report, folder, registry)
        except Exception as err:  # one student's page, never the class's feedback
            note(report, "feedback", folder, f"{type(err).__name__}: {err}")
            text = (
                '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8"><title>Feedback'
                "</title></head><body><p>This page could not be made; your teacher has been "
                "told why.</p></body></html>\n"
            )
        (directory / names[folder]).write_bytes(text.encode("utf-8"))
    return names
