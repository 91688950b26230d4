"""The ``attnlib`` command line: ``attnlib check`` grades exercise notebooks.

``attnlib progress`` (``make progress``) is the learner's view: a short status of their own
copies (``my-work/`` when it exists, else ``exercises/``), mistakes in words, and the next
exercise to do. ``attnlib check PATH...`` runs exercise notebooks (files, or folders of
them: one folder per student for a class) in fresh kernels, never changing them, and reports every
exercise's status. See :mod:`attnlib.grade` for what it guarantees. Maintainer tools
(re-executing lessons, regenerating ``exercises/``) live in the repository's ``tools/``.
"""

import argparse
import json
import os
import sys
from pathlib import Path

from . import grade
from .grade import exports, sandbox, shard
from .grade import report as report_data

WORKSPACE = "my-work"  # the learner's copies (tools/workspace.py, made by `make lab`)


def default_paths():
    """The learner's own copies when they exist (``my-work/``), else ``exercises/``."""
    for folder in (WORKSPACE, "exercises"):
        if os.path.isdir(folder):
            return [folder + "/"]
    raise grade.GraderError(
        f"no {WORKSPACE}/ or exercises/ folder here: name the notebooks or folders to check"
    )


EPILOG = r"""statuses: passed, wrong (with the mistake's name), not attempted, missing (the check
cell was removed), not reached (a timeout or a dead kernel stopped the notebook first),
error (one-line reason). Exit status: 0 every exercise passed, 1 some did not (or a
folder held no notebook), 2 the grader itself could not run.

Each notebook's kernel runs in a bubblewrap sandbox (Linux; `apt-get install bubblewrap`):
its own unprivileged uid (when run as root), no network, its own process namespace, the
course package without the answer key, nothing of the machine writable, the limits above
(and files of at most 256 MiB in a home, /tmp and /dev/shm of 256 MiB each).
Where no sandbox can be made, the report says so (JSON: "sandbox": false and the reason)
and --require-sandbox refuses to run. There, or for any untrusted class, run the grader
in a container without network (wheels made once with `pip wheel -w wheels .`):
  docker run --rm --network none -v "$PWD/wheels:/wheels:ro" -v "$PWD/handed-in:/class:ro" \
    python:3.11 sh -c 'pip install -q --no-index --find-links /wheels attnlib &&
    attnlib check /class/*/'
"""


def _positive(text):
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"-j needs at least 1 job, got {value}")
    return value


def _progress(args, out):
    def on_result(result, done, total):
        if not args.quiet:
            print(grade.progress_line(result, done, total), file=sys.stderr, flush=True)
        if args.jsonl:
            print(json.dumps(report_data.notebook_line(result)), file=out, flush=True)

    return on_result


def _fail(args, command, err, out):
    if getattr(args, "json", False) or getattr(args, "jsonl", False):
        print(json.dumps({"error": str(err), "all_passed": False}), file=out)
    print(f"attnlib {command}: {grade.escape(str(err))}", file=sys.stderr)  # any bytes
    return 2


def _finish(args, command, make_report, out):
    """Grade or merge, add points, write the exports, print the report to ``out`` (both)."""
    from attnlib.selfcheck import registry

    try:
        prepared = exports.prepare(args, registry)
        report = make_report()
        exports.finish(report, args, prepared, registry)
    except (grade.GraderError, exports.ExportError, report_data.MergeError) as err:
        return _fail(args, command, err, out)
    if not report.get("sandbox") and not getattr(args, "quiet", False):
        detail = report.get("sandbox_detail", "not recorded")
        print(f"attnlib {command}: NO SANDBOX: {detail}", file=sys.stderr)
    if args.json:
        print(json.dumps(report, indent=1), file=out)
    elif getattr(args, "jsonl", False):
        for line in report_data.closing_lines(report):
            print(json.dumps(line), file=out)
    else:
        grade.text_report(report, out)
    return grade.exit_status(report)


def _open_output(args, command):
    """``(stream, None)`` for the report (stdout or ``--output``), or ``(None, exit status)``."""
    if not getattr(args, "output", None):
        return sys.stdout, None
    try:
        return open(args.output, "w", encoding="utf-8"), None
    except OSError as err:
        print(f"attnlib {command}: --output {args.output}: {err.strerror}", file=sys.stderr)
        return None, 2


def cmd_check(args):
    limits = {
        "cell_timeout": args.timeout,
        "budget": args.budget,
        "output_cap": args.output_cap,
        "wall": args.wall_time,
        "memory": args.memory,
        "cpu": args.cpu,
        "processes": args.processes,
    }
    # the report goes to this process's stdout or a file it opens itself, nowhere else
    if args.output and args.resume and os.path.abspath(args.output) == os.path.abspath(args.resume):
        print("attnlib check: --output and --resume name the same file; write to a new one",
              file=sys.stderr)  # fmt: skip
        return 2
    out, status = _open_output(args, "check")
    if out is None:
        return status
    try:
        return _finish(
            args,
            "check",
            lambda: grade.grade(
                args.paths or default_paths(),
                jobs=args.jobs,
                limits=limits,
                on_result=_progress(args, out),
                require_sandbox=args.require_sandbox,
                sandbox=not args.no_sandbox,
                bwrap=args.bwrap,
                resume=args.resume,
                data_files=tuple(args.data_file),
                shard=args.shard,
            ),
            out,
        )
    finally:
        if out is not sys.stdout:
            out.close()


def cmd_report(args):
    out, status = _open_output(args, "report")
    if out is None:
        return status
    try:
        return _finish(args, "report", lambda: report_data.merge(args.parts), out)
    finally:
        if out is not sys.stdout:
            out.close()


def cmd_gradescope(args):
    from .grade import gradescope

    try:
        names = gradescope.build(
            args.out,
            lessons=args.lessons,
            points_file=args.points,
            visibility=args.visibility,
            require_sandbox=args.require_sandbox,
        )
    except gradescope.BuildError as err:
        print(f"attnlib gradescope: {err}", file=sys.stderr)
        return 2
    print(f"{args.out}: {len(names)} files ({', '.join(names[:3])}, ...)")
    return 0


def cmd_collect(args):
    from .grade import collect

    try:
        done = collect.collect(args.download, args.out, args.lms, args.overwrite)
    except (collect.CollectError, OSError) as err:
        if args.json:
            print(json.dumps({"error": str(err)}))
        print(f"attnlib collect: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(done, indent=1))
    else:
        for line in done["refused"] + done["notes"]:
            print(line)
        print(
            f"{args.out}: {done['notebooks']} notebooks of {done['students']} students "
            f"({done['layout']} layout); {done['skipped']} other files skipped, "
            f"{len(done['refused'])} refused"
        )
    return 1 if done["refused"] else 0


def _shard(text):
    try:
        return shard.parse(text)
    except ValueError as err:
        raise argparse.ArgumentTypeError(str(err)) from None


def build_parser():
    parser = argparse.ArgumentParser(prog="attnlib", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser(
        "check",
        help="grade exercise notebooks (unchanged on disk) and report each exercise",
        description=(
            "Run exercise notebooks in fresh kernels from a snapshot (the files are never "
            "changed) and judge every exercise in the grader's own process."
        ),
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument(
        "paths",
        nargs="*",
        help=f"notebook files or folders (one per student); default {WORKSPACE}/ if it "
        "exists, else exercises/",
    )
    out = p.add_mutually_exclusive_group()
    out.add_argument("--json", action="store_true", help="print the whole report as JSON")
    out.add_argument(
        "--jsonl",
        action="store_true",
        help="print one JSON line per notebook as it finishes, then one summary line",
    )
    p.add_argument(
        "-j",
        "--jobs",
        type=_positive,
        default=os.cpu_count() or 1,
        help="notebooks graded in parallel (default: the number of cores, %(default)s here)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=grade.CELL_TIMEOUT,
        help="seconds one cell may run (default %(default)g)",
    )
    p.add_argument(
        "--budget",
        type=float,
        default=grade.NOTEBOOK_BUDGET,
        help="seconds all cells of one notebook may run (default %(default)g)",
    )
    p.add_argument(
        "--output-cap",
        type=int,
        default=grade.OUTPUT_CAP,
        help="bytes of output one notebook may print (default %(default)d)",
    )
    p.add_argument(
        "--wall-time",
        type=float,
        default=grade.NOTEBOOK_BUDGET + 60,
        help="seconds one notebook may take in all, kernel start included; then its whole "
        "sandbox is killed (default %(default)g)",
    )
    p.add_argument(
        "--memory",
        type=int,
        default=sandbox.MEMORY,
        help="bytes of memory per notebook (all its processes, with cgroups) and of address space "
        "per process (default %(default)d)",
    )
    p.add_argument(
        "--cpu",
        type=int,
        default=sandbox.CPU,
        help="CPU seconds per kernel process (default %(default)d)",
    )
    p.add_argument(
        "--processes",
        type=int,
        default=sandbox.PROCESSES,
        help="processes and threads per notebook (cgroups) and per kernel uid "
        "(default %(default)d)",
    )
    p.add_argument(
        "--data-file",
        action="append",
        default=[],
        metavar="NAME",
        help="a file beside the notebooks to copy into the kernel's folder (at most "
        f"{grade.DATA_FILE_SIZE} bytes; repeatable); no other file is read",
    )
    p.add_argument(
        "--require-sandbox",
        action="store_true",
        help="refuse to run (exit 2) where no bubblewrap sandbox can be made",
    )
    p.add_argument(
        "--no-sandbox",
        action="store_true",
        help="run kernels without the sandbox (trusted work only; for measuring its cost)",
    )
    p.add_argument(
        "--bwrap",
        metavar="PATH",
        help=f"the bubblewrap program (default: ${sandbox.BWRAP_ENV}, else bwrap on PATH)",
    )
    p.add_argument(
        "--output",
        metavar="FILE",
        help="write the report (text, --json or --jsonl) to FILE instead of stdout",
    )
    p.add_argument(
        "--resume",
        metavar="FILE",
        help="reuse the verdicts of an earlier --jsonl run for notebooks unchanged since",
    )
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    p.add_argument(
        "--shard",
        type=_shard,
        metavar="i/N",
        help="grade only shard i of N of the folders (sorted by name; use with --jsonl, "
        "then merge the parts with `attnlib report`)",
    )
    exports.add_options(p)
    p.set_defaults(func=cmd_check)

    r = sub.add_parser(
        "report",
        help="merge the --jsonl files of one run or of its shards into one report",
        description="Merge JSON-lines files of `attnlib check --jsonl` (one run, or every "
        "--shard i/N of one) into the table, JSON and exports a single run prints.",
    )
    r.add_argument("parts", nargs="+", help="JSON-lines files written by attnlib check --jsonl")
    r.add_argument("--json", action="store_true", help="print the whole report as JSON")
    r.add_argument("--output", metavar="FILE", help="write the report to FILE instead of stdout")
    r.add_argument("-q", "--quiet", action="store_true", help="no NO SANDBOX line on stderr")
    exports.add_options(r)
    r.set_defaults(func=cmd_report)

    g = sub.add_parser("gradescope", help="build a Gradescope autograder zip")
    g.add_argument("action", choices=["build"], help="build the zip")
    g.add_argument("out", help="the zip to write, e.g. autograder.zip")
    g.add_argument(
        "--lessons",
        nargs="+",
        metavar="STEM",
        help="the notebooks the assignment asks for (e.g. 03_scoring); each of their "
        "exercises is one test, 0 points when the notebook is not handed in",
    )
    g.add_argument("--points", metavar="FILE", help="points file, as for attnlib check")
    g.add_argument(
        "--visibility",
        choices=("hidden", "after_due_date", "after_published", "visible"),
        default="visible",
        help="when students see each test's result (default %(default)s)",
    )
    g.add_argument(
        "--require-sandbox",
        action="store_true",
        help="grade nothing where bubblewrap cannot make a sandbox (the results say the "
        "grader could not run; the log says why); without it, such a submission is graded "
        "with the kernel as an unprivileged uid",
    )
    g.set_defaults(func=cmd_gradescope)

    c = sub.add_parser(
        "collect",
        help="turn an LMS's bulk download (Canvas, Moodle, Gradescope) into handed-in/<login>/",
        description="Read a bulk download of submissions, zipped or unpacked, and write each "
        "student's notebooks as OUT/<login>/NN_name.ipynb, ready for attnlib check OUT/*/. "
        "See attnlib.grade.collect for the layouts and what is refused.",
    )
    c.add_argument("download", help="the downloaded zip, or the folder it was unpacked into")
    c.add_argument("--out", default="handed-in", help="where to write (default %(default)s)")
    c.add_argument(
        "--lms",
        default="auto",
        choices=("auto", "canvas", "moodle", "gradescope"),
        help="the download's layout (default: told from its names)",
    )
    c.add_argument("--overwrite", action="store_true", help="replace files already in --out")
    c.add_argument("--json", action="store_true", help="print what was done as JSON")
    c.set_defaults(func=cmd_collect)

    q = sub.add_parser(
        "progress",
        help="your progress: what passed, what to fix (in words) and the next exercise",
        description="Grade your exercise notebooks (never changing them) and say what is next.",
    )
    q.add_argument("paths", nargs="*", help=f"default: {WORKSPACE}/ if it exists, else exercises/")
    q.add_argument("-j", "--jobs", type=_positive, default=os.cpu_count() or 1)
    q.set_defaults(func=cmd_progress)
    return parser


def cmd_progress(args):
    try:
        paths = args.paths or default_paths()
        from .grade.intake import escape

        shown = ", ".join(escape(p) for p in paths)
        print(f"checking your notebooks in {shown} ...", file=sys.stderr, flush=True)
        # a learner's save during the run (autosave) is theirs: never written back
        report = grade.grade(paths, jobs=args.jobs, restore_changed=False)
    except grade.GraderError as err:
        print(f"attnlib progress: {err}", file=sys.stderr)
        return 2
    print_progress(report)
    if not args.paths and paths == [WORKSPACE + "/"]:
        print_typed_templates()
    return 0


def typed_templates(folder="exercises"):
    """The blank templates in ``folder`` whose cells differ from what the generator wrote.

    ``tools/generate.py`` records in each template's metadata (``attnlib.generated``) the
    SHA-256 of its cells' types, ids and sources; outputs and metadata do not count, so a
    template that was only run is not listed. A file that is not a notebook is listed.
    """
    import hashlib

    found = []
    for path in sorted(Path(folder).glob("*.ipynb")):
        try:
            nb = json.loads(path.read_text(encoding="utf-8"))
            parts = [
                [c["cell_type"], c.get("id"), "".join(c["source"])]
                if isinstance(c["source"], list)
                else [c["cell_type"], c.get("id"), c["source"]]
                for c in nb["cells"]
            ]
            recorded = nb["metadata"]["attnlib"]["generated"]
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            found.append(path)
            continue
        digest = hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()
        if digest != recorded:
            found.append(path)
    return found


def print_typed_templates(out=None):
    """Say which blank templates hold answers, and the one command that moves each."""
    out = out or sys.stdout
    typed = typed_templates()
    if not typed:
        return
    print(file=out)
    print(
        f"Answers typed into the blank templates in exercises/ are not checked here (your "
        f"copies in {WORKSPACE}/ are). Move them into {WORKSPACE}/ (nothing there is "
        "overwritten):",
        file=out,
    )
    tool = Path("tools") / "workspace.py"
    for path in typed:
        if tool.is_file():
            print(f"    .venv/bin/python {tool.as_posix()} --adopt {path.as_posix()}", file=out)
        else:
            print(f"    {path.as_posix()}: copy it into {WORKSPACE}/", file=out)


def in_words(r):
    """A row's status as a learner reads it: the mistake's hint, never its code."""
    from .selfcheck.mistakes import MISTAKES

    status = r["status"]
    if status == "wrong":
        return "not yet: " + (MISTAKES.get(r["mistake"]) or r["message"] or "a different value")
    if status == "missing":
        return "its check cell is gone: copy it back from the blank exercise in exercises/"
    if status == "not reached":
        return "not reached: the notebook stopped before it (" + r["message"] + ")"
    if status == "error":
        return "could not be checked: " + r["message"]
    return status


def next_row(rows):
    """The first exercise, in course order, that has not passed (None when all have)."""
    return next((r for r in rows if r["status"] != "passed"), None)


def print_progress(report, out=None):
    """The learner's report: one line per notebook, what to fix, one summary, ``next:``.

    A folder where nothing has been attempted yet gets a short status instead of a row
    per exercise. Every name and message is escaped as the grader's own report escapes
    them (:func:`attnlib.grade.intake.escape`): a folder or notebook name, or a cell's
    error, cannot move the cursor, clear the screen or start a line of its own.
    """
    from .grade.intake import escape
    from .grade.textreport import _say

    out = out or sys.stdout

    def say(*parts):  # parts alternate: our own text, then a name or message to escape
        _say("".join(p if i % 2 == 0 else escape(p) for i, p in enumerate(parts)), out)

    rows, counts = report["rows"], report["summary"]
    total, passed = counts["total"], counts["passed"]
    if rows and all(r["status"] == "not attempted" for r in rows):
        say(f"No answers yet: {total} exercises in {counts['notebooks']} notebooks are waiting.")
    else:
        by_notebook = {}
        for r in rows:
            by_notebook.setdefault(r["notebook"], []).append(r)
        width = max(len(escape(name)) for name in by_notebook) if by_notebook else 0
        for name, found in by_notebook.items():
            done = sum(r["status"] == "passed" for r in found)
            fresh = all(r["status"] == "not attempted" for r in found)
            state = "not started" if fresh else f"{done} of {len(found)} passed"
            say(f"{escape(name).ljust(width)}  {state}")  # escaped already
            for r in found:
                if r["status"] not in ("passed", "not attempted"):
                    say("    ", r["exercise"], ": ", in_words(r))
        say("")
        say(f"{passed} of {total} exercises passed.")
    for notebook, errors in report["cell_errors"].items():
        for number, reason in errors[:1]:
            say("", notebook, f": cell {number} raised ", reason)
    following = next_row(rows)
    if following is None:
        say("Every exercise passed. Well done!" if rows else "No notebooks found.")
    else:
        say("next: exercise ", following["exercise"], " in ", following["notebook"])


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    try:
        args = build_parser().parse_args(argv)
    except SystemExit as stop:  # argparse has printed its error (or --help) on its own
        if stop.code and ("--json" in argv or "--jsonl" in argv):
            print(json.dumps({"error": "invalid arguments (see stderr)", "all_passed": False}))
        raise
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
