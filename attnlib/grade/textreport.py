"""The report as text: the table, the reasons, a line per folder and one for the class."""

import sys

from .intake import escape
from .notebook import STATUSES


def summarize(rows):
    """Counts per status and the total."""
    counts = {status: sum(r["status"] == status for r in rows) for status in STATUSES}
    counts["total"] = len(rows)
    return counts


def _plural(n, word):
    return f"{n} {word}{'s' * (n != 1)}"


def counts_text(counts):
    parts = [f"{counts['passed']} passed", f"{counts['wrong']} wrong"]
    parts += [f"{counts[s]} {s}" for s in ("not attempted", "missing", "not reached")]
    parts.append(_plural(counts["error"], "error"))
    return ", ".join(parts)


def status_text(r):
    if r["status"] == "wrong" and r["mistake"]:
        return f"wrong: {r['mistake']}"
    return r["status"]


def _say(line, out):
    """Print one line whatever the stream's encoding can hold (the rest is escaped)."""
    try:
        print(line, file=out)
    except UnicodeEncodeError:
        encoding = getattr(out, "encoding", None) or "ascii"
        print(line.encode(encoding, "backslashreplace").decode(encoding), file=out)


def text_report(report, out=None):
    """The table, the reasons, one line per folder and one for the class.

    Every name and message is escaped (:func:`escape`): a file name cannot start a line
    of its own, move the cursor or stop the report, under any locale.
    """
    out = out or sys.stdout
    rows = report["rows"]
    table = [("notebook", "exercise", "status")] + [
        (escape(r["notebook"]), escape(r["exercise"]), escape(status_text(r))) for r in rows
    ]
    widths = [max(len(line[i]) for line in table) for i in range(3)]
    for n, line in enumerate(table):
        _say("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip(), out)
        if n == 0:
            _say("  ".join("-" * w for w in widths), out)
    for r in rows:
        if r["status"] in ("error", "missing", "not reached") or (
            r["status"] == "wrong" and not r["mistake"]
        ):
            _say(f"{escape(r['notebook'])} {escape(r['exercise'])}: {escape(r['message'])}", out)
    for notebook, errors in report["cell_errors"].items():
        for number, reason in errors:
            _say(f"{escape(notebook)}: cell {number} raised {escape(reason)}", out)
    for notebook, ids in report["unknown_ids"].items():
        listed = ", ".join(escape(i) for i in ids)
        _say(f"{escape(notebook)}: ignored unknown exercise ids: {listed}", out)
    for name in report["tampered"]:
        _say(f"{escape(name)}: changed during grading (a notebook wrote to it); restored", out)
    for name, reason in report.get("not_read", {}).items():
        _say(f"{escape(name)}: not read: {escape(reason)}", out)
    for notebook, lesson in report.get("matched", {}).items():
        _say(f"{escape(notebook)}: graded as lesson {escape(lesson)} (by its name's start)", out)
    for item in report.get("export_notes", []):
        _say(f"{escape(item['folder'])}: {escape(item['export'])}: {escape(item['note'])}", out)
    if "sandbox" in report:
        where = "sandbox" if report["sandbox"] else "NO SANDBOX"
        _say(f"{where}: {escape(report['sandbox_detail'])}", out)
    _say("", out)
    for folder, counts in report["by_folder"].items():
        if not counts["notebooks"]:
            _say(f"{escape(folder)}: no notebooks to grade", out)
        else:
            _say(
                f"{escape(folder)}: {counts['passed']} of {_plural(counts['total'], 'exercise')} "
                f"passed in {_plural(counts['notebooks'], 'notebook')} ({counts_text(counts)})",
                out,
            )
    counts = report["summary"]
    _say(
        f"{_plural(counts['total'], 'exercise')} in {_plural(counts['notebooks'], 'notebook')}: "
        f"{counts_text(counts)}",
        out,
    )


def progress_line(result, done, total):
    """One line on stderr per finished notebook."""
    counts = summarize(result["rows"])
    seconds = result.get("seconds")
    took = f" in {seconds:.1f} s" if seconds is not None else ""
    return (
        f"[{done}/{total}] {escape(result['notebook'])}: {counts['passed']} of "
        f"{_plural(counts['total'], 'row')} passed{took}"
    )
