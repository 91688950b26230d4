"""Written "why" answers: pages for a teacher, a CSV to score them, scores back in.

``--written DIR`` writes, for every exercise of the class marked ``written`` (in its
data, :class:`attnlib.selfcheck.Exercise`):

- ``DIR/<exercise id>.html``: the question, then one table row per student: the folder,
  the machine-checked part's status, the student's own words (the markdown cells and
  comments they added to that exercise's section, :mod:`attnlib.grade.answers`),
  and an empty rubric column (full / part / none of the points, and a note) to print or
  to fill in while reading;
- ``DIR/written_scores.csv``: ``folder,exercise,max_points,score,comment``, one line per
  student and written exercise, with ``score`` empty.

The teacher fills ``score`` (and ``comment`` if they like) and passes the file back with
``--written-scores DIR/written_scores.csv``: the scores become the ``(written)`` columns
of the gradebook and count in the totals. Empty scores stay unscored; a score that is
not a number between 0 and ``max_points``, or a folder or exercise that the report does
not have, stops with an error naming the line.
"""

import csv
import html
import io
from pathlib import Path

from . import safe
from .gradebook import note, number

HEADER = ("folder", "exercise", "max_points", "score", "comment")
STYLE = """
body { font-family: sans-serif; margin: 2em; color: #111; }
table { border-collapse: collapse; width: 100%; }
th, td { border: 1px solid #999; padding: .4em .6em; text-align: left; vertical-align: top; }
.answer { white-space: pre-wrap; font-family: serif; } .rubric { width: 14em; }
"""


class WrittenError(ValueError):
    """The written-scores file cannot be used."""


def _e(text):
    return html.escape(safe.text(text), quote=True)  # any bytes: escaped, never a traceback


def _written_columns(report):
    return [c for c in report["points"]["columns"] if c["written"] > 0]


def answer_of(report, folder, column):
    """``(status, text)`` of one student's answer to one written exercise."""
    found = next(
        (
            r
            for r in report["rows"]
            if r["exercise"] == column["exercise"] and str(Path(r["notebook"]).parent) == folder
        ),
        None,
    )  # the notebook graded as the lesson, whatever its name ("03_scoring (1).ipynb")
    if found is None:
        return "no notebook", ""
    status, notebook = found["status"], found["notebook"]
    text = report.get("answers", {}).get(notebook, {}).get(column["exercise"], {}).get("text", "")
    return status, text


def page(report, column, registry):
    """The HTML page of one written exercise."""
    exercise = registry.get(column["exercise"])
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8">',
        f"<title>Written answers: {_e(column['exercise'])}</title>",
        f"<style>{STYLE}</style></head><body>",
        f"<h1>{_e(column['lesson'])}: {_e(column['exercise'])} (written)</h1>",
        f"<p><strong>Question:</strong> {_e(exercise.written)}</p>",
        f"<p>Worth {number(column['written'])} points. Score in written_scores.csv.</p>",
        "<table><tr><th>Student</th><th>Checked part</th><th>Their words</th>"
        '<th class="rubric">Rubric</th></tr>',
    ]
    rubric = "&#9744; full &#9744; part &#9744; none<br>note:"
    for folder in report["by_folder"]:
        try:
            status, text = answer_of(report, folder, column)
        except Exception as err:  # one student's answer, never the class's page
            note(report, "written", folder, f"{type(err).__name__}: {err}")
            status, text = "error", "(this answer could not be read)"
        words = _e(text) if text.strip() else "<em>(no text written)</em>"
        lines.append(
            f"<tr><td>{_e(Path(folder).name)}</td><td>{_e(status)}</td>"
            f'<td class="answer">{words}</td><td class="rubric">{rubric}</td></tr>'
        )
    lines.append("</table></body></html>")
    return "\n".join(lines) + "\n"


def write(report, directory, registry):
    """Write one page per written exercise and the scores CSV; return the file names."""
    directory = Path(directory)
    directory.mkdir(parents=True, exist_ok=True)
    names = []
    for column in _written_columns(report):
        name = f"{column['exercise']}.html"
        (directory / name).write_bytes(page(report, column, registry).encode("utf-8"))
        names.append(name)
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(HEADER)
    for folder in report["by_folder"]:
        for column in _written_columns(report):
            writer.writerow(
                [safe.cell(folder), column["exercise"], number(column["written"]), "", ""]
            )
    (directory / "written_scores.csv").write_bytes(out.getvalue().encode("utf-8"))
    return [*names, "written_scores.csv"]


def load_scores(path, report):
    """``{(folder, exercise id): score}`` from a filled written-scores CSV."""
    columns = {c["exercise"]: c for c in _written_columns(report)}
    folders = {safe.cell(f): f for f in report["by_folder"]} | {f: f for f in report["by_folder"]}
    scores = {}
    try:
        with open(path, newline="", encoding="utf-8-sig") as f:
            reader = csv.DictReader(f)
            if not reader.fieldnames or not {"folder", "exercise", "score"} <= set(
                reader.fieldnames
            ):
                raise WrittenError(
                    f"written scores {path}: needs the columns folder, exercise and score."
                )
            lines = list(enumerate(reader, start=2))
    except (OSError, UnicodeDecodeError, csv.Error) as err:
        raise WrittenError(f"written scores {path}: cannot be read ({err}).") from None
    for number_, line in lines:
        where = f"written scores {path}, line {number_}"
        folder, exercise_id, text = line["folder"], line["exercise"], (line["score"] or "").strip()
        folder = folders.get(folder, folder)  # the cell written for a name (safe.cell)
        if folder not in report["by_folder"]:
            raise WrittenError(f"{where}: folder {folder!r} is not in this class.")
        if exercise_id not in columns:
            raise WrittenError(f"{where}: {exercise_id!r} is not a written exercise of this class.")
        if not text:
            continue
        try:
            value = float(text)
        except ValueError:
            raise WrittenError(f"{where}: score {text!r} is not a number.") from None
        most = columns[exercise_id]["written"]
        if not 0 <= value <= most:
            raise WrittenError(f"{where}: score {text} is not between 0 and {number(most)}.")
        scores[(folder, exercise_id)] = value
    return scores
