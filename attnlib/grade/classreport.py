"""``--class-report report.html``: what the class got wrong, exercise by exercise.

The grader already knows, for every student, which named mistake each wrong answer made;
this turns it into what to re-teach. From the report (the data ``--json`` prints, which
carries the same numbers as ``class_report``), for every exercise any student's notebook
was graded for:

- the students of the class (every folder) split into *passed*, *wrong*, *not attempted*
  (the placeholder answer, a removed check cell, or no notebook for the lesson) and *in
  error* (the cell raised, the notebook stopped before it, or could not be graded), each
  as a count and a share;
- each named mistake with the number of students who made it, the course's explanation
  (:data:`attnlib.selfcheck.mistakes.MISTAKES`) and the lesson paragraph to go back to:
  the section of the lesson notebook (``notebooks/<lesson>.ipynb``) whose words the
  explanation shares most (its heading and its first sentence; the recap sections, which
  repeat every idea, are never chosen);
- the exercises ranked by how many students missed them (all but *passed*), most first.

The page is one file with its style inline, no script, image, font or link: it opens
offline, prints, and reads in grayscale (every share is a number and a bar of text
characters, never a colour alone). Every text a student could control is escaped.
"""

import functools
import html
import json
import re
from pathlib import Path

from . import safe
from .notebook import NOTEBOOK
from .points import folder_of

GROUPS = {  # the four shares, and the statuses each counts
    "passed": ("passed",),
    "wrong": ("wrong",),
    "not attempted": ("not attempted", "missing", "not handed in"),
    "in error": ("error", "not reached"),
}
STOPWORDS = set(
    "the and that this with from each every your into must are not for its one two has have "
    "than then them they what when where which while will would there their here only also "
    "does done same more most over under both".split()
)
BAR = 20  # characters of a full bar
RECAPS = {"Where we are", "What you've seen", "What's next", "Try it yourself"}


def _words(text):
    return {w for w in re.findall(r"[a-z_]{4,}", text.lower()) if w not in STOPWORDS}


def lessons_dir():
    """The course's lesson notebooks (``notebooks/`` beside the package)."""
    import attnlib

    return Path(attnlib.__file__).resolve().parent.parent / "notebooks"


@functools.cache
def sections(lesson, folder=None):
    """``[(heading, text), ...]`` of a lesson notebook's ``##`` sections (``[]`` if none)."""
    try:
        nb = json.loads((Path(folder or lessons_dir()) / f"{lesson}.ipynb").read_text("utf-8"))
    except (OSError, ValueError):
        return []
    found = []
    for cell in nb.get("cells", []):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        if cell.get("cell_type") != "markdown":
            continue
        first = source.lstrip().split("\n", 1)
        if first[0].startswith("## "):
            found.append([first[0][3:].strip(), first[1] if len(first) > 1 else ""])
        elif found:
            found[-1][1] += "\n" + source
    return [(heading, text.strip()) for heading, text in found]


def paragraph(lesson, explanation):
    """The lesson section whose words ``explanation`` shares most, or None."""
    wanted = _words(explanation)
    best, score = None, 0
    for heading, text in sections(lesson):
        if heading in RECAPS:  # they repeat every idea of the lesson: never the one to teach
            continue
        shared = len(wanted & _words(heading + " " + text))
        if shared > score:
            best, score = (heading, text), shared
    if best is None:
        return None
    heading, text = best
    sentence = re.split(r"(?<=[.!?])\s", " ".join(text.split()), maxsplit=1)[0]
    return {"lesson": lesson, "heading": heading, "sentence": sentence[:300]}


def build(report, registry):
    """The class report's data (also ``report["class_report"]``): see the module docstring."""
    from attnlib.selfcheck.mistakes import MISTAKES

    folders = list(report["by_folder"])
    statuses, mistakes, order = {}, {}, []
    for r in report["rows"]:
        if r["exercise"] == NOTEBOOK:
            continue
        if r["exercise"] not in statuses:
            statuses[r["exercise"]] = {}
            order.append(r["exercise"])
        statuses[r["exercise"]][folder_of(r)] = r["status"]
        if r["status"] == "wrong" and r.get("mistake"):
            mistakes.setdefault(r["exercise"], {}).setdefault(r["mistake"], set()).add(folder_of(r))
    broken = {folder_of(r) for r in report["rows"] if r["exercise"] == NOTEBOOK}
    rank = {e.id: n for n, e in enumerate(registry.exercises().values())}
    exercises = []
    for exercise_id in sorted(order, key=lambda i: rank.get(i, len(rank))):
        exercise = registry.get(exercise_id)
        seen = statuses[exercise_id]
        counts = dict.fromkeys(GROUPS, 0)
        for folder in folders:
            status = seen.get(folder) or ("error" if folder in broken else "not handed in")
            group = next(g for g, members in GROUPS.items() if status in members)
            counts[group] += 1
        named = []
        for code, who in sorted(
            mistakes.get(exercise_id, {}).items(), key=lambda kv: (-len(kv[1]), kv[0])
        ):
            explanation = MISTAKES.get(code, "")
            lesson = exercise.lesson if exercise is not None else ""
            named.append(
                {
                    "mistake": safe.text(code),
                    "count": len(who),
                    "explanation": explanation,
                    "paragraph": paragraph(lesson, explanation) if explanation else None,
                }
            )
        exercises.append(
            {
                "exercise": exercise_id,
                "lesson": exercise.lesson if exercise is not None else "",
                "counts": counts,
                "shares": {g: (n / len(folders) if folders else 0.0) for g, n in counts.items()},
                "missed": len(folders) - counts["passed"],
                "mistakes": named,
            }
        )
    exercises.sort(key=lambda e: -e["missed"])  # stable: course order among equals
    return {"students": len(folders), "exercises": exercises}


STYLE = """
body { font-family: sans-serif; max-width: 70em; margin: 2em auto; padding: 0 1em; color: #000; }
table { border-collapse: collapse; width: 100%; }
th, td { border: 1px solid #555; padding: .35em .5em; text-align: left; vertical-align: top; }
td.n { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.bar { font-family: monospace; letter-spacing: -1px; }
.mistake { margin: .2em 0; } .where { font-style: italic; }
"""


def _e(text):
    return html.escape(safe.text(text), quote=True)


def _bar(share):
    full = round(share * BAR)
    return "\u2588" * full + "\u2591" * (BAR - full)  # dark and light blocks: no colour needed


def page(data):
    """The HTML page of the class report."""
    lines = [
        "<!DOCTYPE html>",
        '<html lang="en"><head><meta charset="utf-8"><title>What the class got wrong</title>',
        f"<style>{STYLE}</style></head><body>",
        "<h1>What the class got wrong</h1>",
        f"<p>{data['students']} students. Exercises ranked by how many students missed them "
        "(wrong, not attempted or in error), most first. Each named mistake says how many "
        "students made it and which paragraph of the lesson explains it.</p>",
        "<table><tr><th>Exercise</th><th>Missed by</th>"
        + "".join(f"<th>{_e(g.capitalize())}</th>" for g in GROUPS)
        + "<th>Named mistakes: what to re-teach</th></tr>",
    ]
    for e in data["exercises"]:
        cells = "".join(
            f'<td class="n">{e["counts"][g]} ({e["shares"][g]:.0%})<br>'
            f'<span class="bar" aria-hidden="true">{_bar(e["shares"][g])}</span></td>'
            for g in GROUPS
        )
        said = []
        for m in e["mistakes"]:
            where = ""
            if m["paragraph"]:
                p = m["paragraph"]
                where = (
                    f'<br><span class="where">Lesson {_e(p["lesson"])}, section '
                    f"\u201c{_e(p['heading'])}\u201d: {_e(p['sentence'])}</span>"
                )
            said.append(
                f'<p class="mistake"><strong>{_e(m["mistake"])}</strong>: {m["count"]} '
                f"student{'s' * (m['count'] != 1)}. {_e(m['explanation'])}{where}</p>"
            )
        lines.append(
            f"<tr><td>{_e(e['lesson'])}: <strong>{_e(e['exercise'])}</strong></td>"
            f'<td class="n">{e["missed"]} of {data["students"]}</td>{cells}'
            f"<td>{''.join(said) or '&mdash;'}</td></tr>"
        )
    lines.append("</table></body></html>")
    return "\n".join(lines) + "\n"


def write(report, path, registry):
    """Write the page; return its data (``report["class_report"]``)."""
    data = report.get("class_report") or build(report, registry)
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    Path(path).write_bytes(page(data).encode("utf-8"))
    return data
