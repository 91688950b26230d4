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
NOTEBOOK_EXTRAS = ("sha256", "resumed", "refused")  # only when the result has them
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


def read_parts(paths):
    """``[(path, [record, ...]), ...]`` of JSON-lines files; MergeError naming a bad line."""
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
            except ValueError:
                raise MergeError(f"{path}, line {number}: not JSON.") from None
            if not isinstance(record, dict):
                raise MergeError(f"{path}, line {number}: not a JSON object.")
            if "error" in record:
                raise MergeError(f"{path}: that run stopped: {record['error']}")
            records.append(record)
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

    parts = read_parts(paths)
    if not parts:
        raise MergeError("no JSON-lines files to merge.")
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
