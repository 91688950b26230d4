"""The report as data: the JSON-lines a run prints, and merging them back into one report.

``attnlib check --jsonl`` prints, in this order::

    {"notebook": ..., "folder": ..., "rows": [...], "unknown_ids": [...],
     "cell_errors": [...], "answers": {...}, "sha256": ...}     one per notebook, as it ends
    {"run": {"groups": [[folder, [notebook, ...]], ...], "shard": [i, N] or null}}
    {"summary": ..., "by_folder": ..., "all_passed": ..., "tampered": [...], "limits": ...,
     "not_read": {...}, "sandbox": ..., "sandbox_detail": ..., "sandbox_uids": [...]}

A notebook line also carries ``"resumed": true`` when ``--resume`` reused it, and a
folder's symbolic links and odd files, never read, come as one line with
``"refused": true`` whose ``notebook`` is the folder.

``run.groups`` is the whole class in the order the command line gave it (before any
``--shard``), so :func:`merge` can put the notebooks of any number of parts back in the
order a single run grades them, and :func:`~attnlib.grade.build_report` rebuilds the same
report. Every export (gradebook, feedback, written answers, similarity) reads that report,
so the files written from a merged sharded run and from one run are byte-identical.
"""

import json
from pathlib import Path

NOTEBOOK_KEYS = ("rows", "unknown_ids", "cell_errors", "answers")
NOTEBOOK_EXTRAS = ("sha256", "resumed", "refused", "lesson")  # only when the result has them
SUMMARY_KEYS = ("summary", "by_folder", "all_passed", "tampered", "limits")
RUN_KEYS = ("not_read", "sandbox", "sandbox_detail", "sandbox_uids")  # after build_report's


class MergeError(ValueError):
    """The parts cannot be merged into one class report."""


def notebook_line(result):
    """The JSON-lines record of one graded notebook."""
    line = {"notebook": result["notebook"], "folder": result["folder"]}
    line |= {k: result.get(k, {} if k == "answers" else []) for k in NOTEBOOK_KEYS}
    return line | {k: result[k] for k in NOTEBOOK_EXTRAS if k in result}


def closing_lines(report):
    """The run line and the summary line that end a JSON-lines output."""
    summary = {k: report[k] for k in SUMMARY_KEYS}
    return [{"run": report.get("run")}, summary | {k: report[k] for k in RUN_KEYS if k in report}]


def canonical(report):
    """Put the lists whose order depends on timing or on the parts in class order (in place)."""
    run = report.get("run") or {}
    groups = run.get("groups") or []
    order = {folder: n for n, (folder, _) in enumerate(groups)}
    report["tampered"] = sorted(
        report["tampered"], key=lambda name: (order.get(str(Path(name).parent), -1), name)
    )
    if "not_read" in report:  # a run lists them folder by folder: a stable sort keeps that
        where = _folder_of(groups)
        report["not_read"] = dict(sorted(report["not_read"].items(), key=lambda kv: where(kv[0])))
    return report


def _folder_of(groups):
    """``name -> position of its folder`` for the escaped names of ``not_read``."""
    from .intake import escape

    prefixes = [(escape(Path(folder) / "x")[:-1], n) for n, (folder, _) in enumerate(groups)]

    def where(name):
        found = [(len(p), n) for p, n in prefixes if name.startswith(p)]
        return max(found)[1] if found else len(groups)

    return where


def _sandbox_keys(summaries):
    """The sandbox keys of a merged run: sandboxed only if every part was."""
    details = sorted({s.get("sandbox_detail", "not recorded") for _, s in summaries})
    return {
        "sandbox": all(s.get("sandbox", False) for _, s in summaries),
        "sandbox_detail": "; ".join(details),
        "sandbox_uids": sorted({uid for _, s in summaries for uid in s.get("sandbox_uids", [])}),
    }


def _kind(value, kind):
    """True when ``value`` is of the schema's ``kind``."""
    if kind == "str":
        return isinstance(value, str)
    if kind == "str?":
        return value is None or isinstance(value, str)
    if kind == "bool":
        return isinstance(value, bool)
    if kind == "int":
        return isinstance(value, int) and not isinstance(value, bool)
    if kind == "number?":
        return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
    if kind == "[str]":
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    if kind == "[int]":
        return isinstance(value, list) and all(_kind(v, "int") for v in value)
    if kind == "dict":
        return isinstance(value, dict)
    if kind == "list":
        return isinstance(value, list)
    raise AssertionError(kind)


# every key a line may have, and its kind; a key in REQUIRED must be there
NOTEBOOK_SCHEMA = {"notebook": "str", "folder": "str", "rows": "list", "unknown_ids": "[str]",
                   "cell_errors": "list", "answers": "dict", "sha256": "str?",
                   "resumed": "bool", "refused": "bool", "lesson": "str"}  # fmt: skip
ROW_SCHEMA = {"notebook": "str", "exercise": "str", "status": "str", "mistake": "str?",
              "message": "str", "credit": "number?"}  # fmt: skip
SUMMARY_SCHEMA = {"summary": "dict", "by_folder": "dict", "all_passed": "bool",
                  "tampered": "[str]", "limits": "dict", "not_read": "dict", "sandbox": "bool",
                  "sandbox_detail": "str", "sandbox_uids": "[int]"}  # fmt: skip
REQUIRED = {
    "notebook": ("notebook", "folder", "rows", "unknown_ids", "cell_errors", "answers"),
    "row": ("notebook", "exercise", "status", "mistake", "message"),
    "summary": SUMMARY_KEYS,
}


def _fits(record, schema, required, what):
    """The first way ``record`` does not fit ``schema`` (a phrase), or ``""``."""
    if not isinstance(record, dict):
        return f"{what} is not a JSON object"
    for key in required:
        if key not in record:
            return f"{what} lacks {key!r}"
    for key, value in record.items():
        if key not in schema:
            if (what == "the summary line" and key in RUN_KEYS) or (
                what == "the notebook line" and key in NOTEBOOK_EXTRAS
            ):
                continue  # a key a newer run adds (RUN_KEYS, NOTEBOOK_EXTRAS): the run's own
            return f"{what} has an unknown key {key[:40]!r}"
        if not _kind(value, schema[key]):
            return f"{what}'s {key!r} is not {schema[key]}"
    return ""


def check_notebook_line(record, groups):
    """Why a notebook line does not belong to this class (a phrase), or ``""``.

    Its rows must be about its own notebook, and the notebook in its folder as the run
    line lists the class: a part cannot carry a verdict for another folder's notebook.
    """
    from attnlib.selfcheck import registry

    from .intake import lesson_of
    from .notebook import NOTEBOOK, STATUSES

    why = _fits(record, NOTEBOOK_SCHEMA, REQUIRED["notebook"], "the notebook line")
    if why:
        return why
    notebook, folder = record["notebook"], record["folder"]
    listed = dict((f, found) for f, found in groups)
    if folder not in listed:
        return f"its folder {folder[:80]!r} is not one of the class's (the run line)"
    refused = record.get("refused", False)
    if refused and notebook != folder or not refused and notebook not in listed[folder]:
        return f"{notebook[:80]!r} is not a notebook of its folder {folder[:80]!r}"
    lesson = record.get("lesson") or Path(notebook).stem
    if "lesson" in record and lesson_of(Path(notebook).stem)[0] != lesson:
        return f"{notebook[:80]!r} is not named as lesson {lesson[:40]!r}"
    ids = {ex.id for ex in registry.for_notebook(lesson)}
    seen = set()
    for n, r in enumerate(record["rows"], start=1):
        why = _fits(r, ROW_SCHEMA, REQUIRED["row"], f"row {n}")
        if why:
            return why
        inside = r["notebook"] == notebook or refused and str(Path(r["notebook"]).parent) == folder
        if not inside:
            return f"row {n} is about {r['notebook'][:80]!r}, another notebook than the line's"
        if r["status"] not in STATUSES:
            return f"row {n}'s status {r['status'][:40]!r} is not one of {', '.join(STATUSES)}"
        if r["exercise"] != NOTEBOOK and r["exercise"] not in ids:
            return f"row {n}'s exercise {r['exercise'][:40]!r} is not one of lesson {lesson}'s"
        if r["exercise"] != NOTEBOOK and r["exercise"] in seen:
            return f"row {n} judges {r['exercise']!r} a second time"
        if r.get("credit") is not None and not 0 <= r["credit"] <= 1:
            return f"row {n}'s credit is not between 0 and 1"
        seen.add(r["exercise"])
    for n, item in enumerate(record["cell_errors"], start=1):
        if not (isinstance(item, list) and len(item) == 2 and _kind(item[0], "int")
                and isinstance(item[1], str)):  # fmt: skip
            return f"cell error {n} is not [cell number, reason]"
    for exercise_id, answer in record["answers"].items():
        if exercise_id not in ids:
            return f"an answer to {exercise_id[:40]!r}, not an exercise of lesson {lesson}"
        if not (isinstance(answer, dict) and set(answer) == {"code", "text"}
                and all(isinstance(v, str) for v in answer.values())):  # fmt: skip
            return f"the answer to {exercise_id!r} is not {{code, text}}"
    return ""


def check_run_line(record):
    """Why a run line is malformed (a phrase), or ``""``."""
    if set(record) != {"run"} or not isinstance(record["run"], dict):
        return "the run line is not {run: {groups, shard}}"
    run = record["run"]
    if set(run) != {"groups", "shard"}:
        return "the run line is not {run: {groups, shard}}"
    groups = run["groups"]
    if not isinstance(groups, list) or not all(
        isinstance(g, list) and len(g) == 2 and isinstance(g[0], str) and _kind(g[1], "[str]")
        for g in groups
    ):
        return "the run line's groups are not [[folder, [notebook, ...]], ...]"
    shard = run["shard"]
    if shard is not None and not (_kind(shard, "[int]") and len(shard) == 2
                                  and 1 <= shard[0] <= shard[1]):  # fmt: skip
        return "the run line's shard is not [i, N] with 1 <= i <= N"
    return ""


def check_summary_line(record):
    """Why a summary line is malformed (a phrase), or ``""``."""
    why = _fits(record, SUMMARY_SCHEMA, REQUIRED["summary"], "the summary line")
    if why:
        return why
    limits = record["limits"]
    if not all(isinstance(k, str) and _kind(v, "number?") for k, v in limits.items()):
        return "the summary line's limits are not numbers"
    if not all(isinstance(v, str) for v in record["not_read"].values()):
        return "the summary line's not_read reasons are not text"
    return ""


def validate(parts):
    """Refuse (MergeError, one line naming the part) any line that does not fit its schema.

    ``parts`` is ``[(path, [(line number, record), ...]), ...]``.
    """
    from .intake import escape

    for path, numbered in parts:
        runs = [r for _, r in numbered if "run" in r]
        for number, record in numbered:
            if "run" in record:
                why = check_run_line(record)
            elif "summary" in record:
                why = check_summary_line(record)
            elif "notebook" in record:
                groups = (
                    runs[0]["run"].get("groups") if runs and not check_run_line(runs[0]) else []
                )
                why = check_notebook_line(record, groups or [])
            else:
                why = "not a line of attnlib check --jsonl (no notebook, run or summary)"
            if why:
                raise MergeError(f"{escape(path)}, line {number}: {escape(why)}; refused.")


def read_parts(paths, numbered=False):
    """``[(path, [record, ...]), ...]`` of JSON-lines files; MergeError naming a bad line.

    With ``numbered``, each record comes as ``(line number, record)``.
    """
    parts = []
    for path in paths:
        records = []
        try:
            text = Path(path).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as err:
            raise MergeError(f"{path}: cannot be read ({err}).") from None
        for number, line in enumerate(text.splitlines(), start=1):
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except (ValueError, RecursionError):
                raise MergeError(f"{path}, line {number}: not JSON.") from None
            if not isinstance(record, dict):
                raise MergeError(f"{path}, line {number}: not a JSON object.")
            if "error" in record:
                raise MergeError(f"{path}: that run stopped: {str(record['error'])[:200]}")
            records.append((number, record) if numbered else record)
        parts.append((str(path), records))
    return parts


def _one(records, key, path):
    found = [r for r in records if key in r]
    if len(found) != 1:
        raise MergeError(
            f"{path}: expected one {key!r} line, found {len(found)} "
            "(an unfinished run? grade that shard again)."
        )
    return found[0]


def merge(paths):
    """One report from the JSON-lines files of one run or of the N shards of a run.

    Every shard ``1..N`` must be there exactly once, all from the same class and limits.
    """
    from . import LIMIT_NAMES, build_report

    numbered = read_parts(paths, numbered=True)
    if not numbered:
        raise MergeError("no JSON-lines files to merge.")
    parts = [(path, [record for _, record in records]) for path, records in numbered]
    for path, records in parts:
        _one(records, "run", path), _one(records, "summary", path)
    validate(numbered)
    runs = [(path, _one(records, "run", path)["run"]) for path, records in parts]
    summaries = [(path, _one(records, "summary", path)) for path, records in parts]
    groups = runs[0][1]["groups"]
    for path, run in runs:
        if run["groups"] != groups:
            raise MergeError(f"{path} graded another class than {runs[0][0]} (other folders).")
    shards = [tuple(run["shard"]) if run["shard"] else None for _, run in runs]
    if shards == [None]:
        pass
    elif None in shards:
        raise MergeError("an unsharded run cannot be merged with other parts.")
    else:
        count = shards[0][1]
        wanted = {(i, count) for i in range(1, count + 1)}
        if len(shards) != len(set(shards)) or set(shards) != wanted:
            missing = sorted(i for i, _ in wanted - set(shards))
            twice = sorted({i for i, _ in shards if shards.count((i, count)) > 1})
            raise MergeError(
                f"the parts are shards {sorted(i for i, _ in set(shards))} of {count}: "
                + (f"missing {missing}" if missing else "")
                + ("; " if missing and twice else "")
                + (f"given twice {twice}" if twice else "")
                + "."
            )
    limits = summaries[0][1]["limits"]
    if any(s["limits"] != limits for _, s in summaries):
        raise MergeError("the parts were graded with different limits (--timeout, --budget, ...).")
    lacking = [name for name in LIMIT_NAMES if name not in limits]
    if lacking:
        raise MergeError(
            f"{summaries[0][0]}: its limits lack {', '.join(lacking)} "
            "(graded by an older attnlib? grade it again)."
        )
    results = {}
    for path, records in parts:
        for record in records:
            if "notebook" in record:
                if record["notebook"] in results:
                    raise MergeError(f"{record['notebook']} is graded in two parts ({path}).")
                results[record["notebook"]] = record
    ordered = [results[str(nb)] for _, found in groups for nb in found if str(nb) in results]
    # a folder's links and odd files come last in a run, folder by folder, as here
    ordered += [results[f] for f, _ in groups if results.get(f, {}).get("refused")]
    tampered = [name for _, s in summaries for name in s["tampered"]]
    run = {"groups": groups, "shard": None}
    report = build_report([(f, found) for f, found in groups], ordered, tampered, limits, run)
    report["not_read"] = {k: v for _, s in summaries for k, v in s.get("not_read", {}).items()}
    report |= _sandbox_keys(summaries)
    return canonical(report)
