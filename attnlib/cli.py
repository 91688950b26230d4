"""The ``attnlib`` command line: ``attnlib check`` grades exercise notebooks.

``attnlib check PATH...`` runs exercise notebooks (files, or folders of them: one folder
per student for a class) in fresh kernels, never changing them, and reports every
exercise's status. See :mod:`attnlib.grade` for what it guarantees. Maintainer tools
(re-executing lessons, regenerating ``exercises/``) live in the repository's ``tools/``.
"""

import argparse
import json
import os
import sys

from . import grade

EPILOG = r"""statuses: passed, wrong (with the mistake's name), not attempted, missing (the check
cell was removed), not reached (a timeout or a dead kernel stopped the notebook first),
error (one-line reason). Exit status: 0 every exercise passed, 1 some did not (or a
folder held no notebook), 2 the grader itself could not run.

A student's code runs with your user's rights. For an untrusted class, run the grader
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


def _progress(args):
    def on_result(result, done, total):
        if not args.quiet:
            print(grade.progress_line(result, done, total), file=sys.stderr, flush=True)
        if args.jsonl:
            line = {"notebook": result["notebook"], "folder": result["folder"]}
            line |= {k: result[k] for k in ("rows", "unknown_ids", "cell_errors")}
            print(json.dumps(line), flush=True)

    return on_result


def cmd_check(args):
    limits = {"cell_timeout": args.timeout, "budget": args.budget, "output_cap": args.output_cap}
    try:
        report = grade.grade(args.paths, jobs=args.jobs, limits=limits, on_result=_progress(args))
    except grade.GraderError as err:
        if args.json or args.jsonl:
            print(json.dumps({"error": str(err), "all_passed": False}))
        print(f"attnlib check: {err}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=1))
    elif args.jsonl:
        fields = ("summary", "by_folder", "all_passed", "tampered", "limits")
        print(json.dumps({k: report[k] for k in fields}))
    else:
        grade.text_report(report)
    return grade.exit_status(report)


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
    p.add_argument("paths", nargs="+", help="notebook files or folders (one per student)")
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
    p.add_argument("-q", "--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=cmd_check)
    return parser


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
