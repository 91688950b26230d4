"""The export options shared by ``attnlib check`` and ``attnlib report``, in one place.

Every export is written from the report (the data ``--json`` prints), after points are
added to it, so a run and a merge of its shards write the same files.
"""

from pathlib import Path

from . import classreport, feedback, gradebook, points, safe, similarity, written
from .report import canonical


class ExportError(ValueError):
    """An export option cannot be honoured (exit status 2)."""


def add_options(parser):
    """The export options, as one argument group."""
    g = parser.add_argument_group("points and exports (all read the same report as --json)")
    g.add_argument(
        "--points",
        metavar="FILE",
        help="TOML or JSON file of points per exercise id, overriding the course's "
        "(default 1 each); see attnlib.grade.points",
    )
    g.add_argument(
        "--gradebook", metavar="CSV", help="write one row per student, one column per exercise"
    )
    g.add_argument(
        "--gradebook-columns",
        choices=gradebook.COLUMNS,
        default="lesson",
        help="one column per lesson (one LMS assignment each), per exercise, or one total "
        "(default %(default)s); written answers have columns of their own",
    )
    g.add_argument(
        "--gradebook-layout",
        choices=gradebook.LAYOUTS,
        default="canvas",
        help="column layout the LMS imports (default %(default)s)",
    )
    g.add_argument(
        "--roster",
        metavar="CSV",
        help="CSV with a 'folder' column and the LMS's student columns, for --gradebook",
    )
    g.add_argument(
        "--feedback", metavar="DIR", help="write one self-contained HTML page per student"
    )
    g.add_argument(
        "--written",
        metavar="DIR",
        help="write one HTML page per written (why) exercise and a CSV to score them",
    )
    g.add_argument(
        "--written-scores",
        metavar="CSV",
        help="the filled CSV from --written: its scores go into the points and --gradebook",
    )
    g.add_argument(
        "--class-report",
        metavar="HTML",
        help="write what the class got wrong: per exercise the share passed, wrong, not "
        "attempted and in error, each named mistake's count and lesson paragraph, ranked "
        "(the same data is the report's class_report in --json)",
    )
    g.add_argument(
        "--similarity",
        metavar="HTML",
        help="write ranked pairs of students whose answer cells are unusually alike",
    )


def prepare(args, registry):
    """Read the files the options name before any grading; ExportError if unusable."""
    try:
        table = points.load(args.points, registry) if args.points else None
        roster = gradebook.load_roster(args.roster) if args.roster else None
    except (points.PointsError, gradebook.GradebookError) as err:
        raise ExportError(str(err)) from None
    return {"table": table, "roster": roster}


def finish(report, args, prepared, registry):
    """Add points to the report and write every export asked for; return the report."""
    canonical(report)
    names = ("gradebook", "feedback", "written", "similarity", "class_report")
    report["export_notes"] = [  # how a name is written where an export writes names
        {"export": "names", "folder": safe.text(folder), "note": why}
        for folder in report["by_folder"]
        if any(getattr(args, n, None) for n in names) and (why := safe.risky(Path(folder).name))
    ]
    points.score(report, registry, prepared["table"])
    try:
        if args.written_scores:
            scores = written.load_scores(args.written_scores, report)
            points.score(report, registry, prepared["table"], scores)
        report["class_report"] = classreport.build(report, registry)
        if getattr(args, "class_report", None):
            classreport.write(report, args.class_report, registry)
        if args.gradebook:
            gradebook.write(
                report,
                args.gradebook,
                args.gradebook_layout,
                prepared["roster"],
                getattr(args, "gradebook_columns", "lesson"),
            )
        if args.feedback:
            feedback.write(report, args.feedback, registry)
        if args.written:
            written.write(report, args.written, registry)
        if args.similarity:
            similarity.write(report, args.similarity)
    except (written.WrittenError, gradebook.GradebookError, OSError) as err:
        raise ExportError(str(err)) from None
    return report
