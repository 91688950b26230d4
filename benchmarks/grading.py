"""How fast ``attnlib check`` grades a class: -j 1 against -j 2, and the sandbox's cost.

    python benchmarks/grading.py                 # 4 students x 25 notebooks, 2 rounds
    python benchmarks/grading.py --students 1 --rounds 1    # a quick look

Builds a temporary class (one folder per student, each holding a copy of every
``solutions/`` notebook) and grades it in the bubblewrap sandbox (with the per-notebook
limits, cgroups where the machine has them) ``--rounds`` times at ``-j 1`` and at
``-j 2``, interleaved (1, 2, 1, 2, ...: the load of a shared machine drifts, so each
ratio compares neighbouring runs), then once without the sandbox at ``-j 2``. Prints for
each run notebooks per second, the load average, and the grader's overhead per notebook
beyond the time its cells ran (goal: at most 0.4 s, sandbox and limits included), twice:
the median of each notebook's own time beyond its cells (from the grader taking it to
its verdict), and the run's wall time x -j less every cell's time, per notebook (what
the class waits for). The next notebook's kernel starts while the last one is judged
and cleaned up (``attnlib.grade.Ahead``), so the first figure is split (medians, from
the runner's own clock) into waiting for the runner and its kernel (what starting ahead
did not hide), copying the notebook's files into its sandbox, cleaning up (killing the
sandbox, removing its control groups) and the rest (judging); then the ratio -j 2 / -j 1
of each round (goal: at least 1.9x on 2 cores) and the sandbox's cost.
Every exercise must pass, or the figures are not printed. Without a sandbox on this
machine (no bubblewrap, not root), the sandboxed runs are skipped and said so.
"""

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from _measure import machine

from attnlib import grade
from attnlib.grade import notebook as graded_notebook

ROOT = Path(__file__).resolve().parent.parent
GOAL_OVERHEAD, GOAL_RATIO = 0.4, 1.9


def build_class(folder, students):
    folders = []
    for n in range(students):
        student = folder / f"student_{n:03d}"
        shutil.copytree(ROOT / "solutions", student, ignore=shutil.ignore_patterns("*.md"))
        folders.append(str(student))
    return folders


def clocked(runs):
    """``run_in_kernel`` that keeps each runner's own clock (``seconds``) in ``runs``."""
    inner = graded_notebook.run_in_kernel

    def run_in_kernel(*args, **kwargs):
        started = time.monotonic()
        out = inner(*args, **kwargs)
        if isinstance(out.get("seconds"), dict):
            runs.append(dict(out["seconds"], total=time.monotonic() - started))
        return out

    return run_in_kernel


def run(folders, jobs, sandbox, ahead="done"):
    results, runs = [], []
    load = os.getloadavg()[0]
    start = time.perf_counter()
    saved = graded_notebook.run_in_kernel
    graded_notebook.run_in_kernel = clocked(runs)
    try:
        report = grade.grade(
            folders,
            jobs=jobs,
            sandbox=sandbox,
            require_sandbox=sandbox,
            limits={"ahead": ahead},
            on_result=lambda r, done, total: results.append(r),
        )
    finally:
        graded_notebook.run_in_kernel = saved
    seconds = time.perf_counter() - start
    if not report["all_passed"]:
        bad = [r for r in report["rows"] if r["status"] != "passed"][:5]
        raise SystemExit(f"grading.py: not every exercise passed at -j {jobs}: {bad}")
    overhead = [r["seconds"] - r["cell_seconds"] for r in results]
    cells = sum(r.get("cell_seconds", 0.0) for r in results)
    median = statistics.median
    return {
        "count": len(results),
        "seconds": seconds,
        "rate": len(results) / seconds,
        "median": median(overhead),
        "max": max(overhead),
        "wall": (seconds * jobs - cells) / len(results),
        "load": (load, os.getloadavg()[0]),
        # the runner's clock runs from its start; a runner started ahead got its notebook
        # at "job": the rest of the grader's time for it is what was not hidden
        "runner": median([r["total"] - (r["end"] - r["job"]) for r in runs]) if runs else None,
        "files": median([r["files"] - r["job"] for r in runs]) if runs else None,
        "cleanup": median([r["end"] - r["cells"] for r in runs]) if runs else None,
    }


def line(label, m):
    text = (
        f"{label}: {m['count']} notebooks in {m['seconds']:.1f} s = {m['rate']:.2f} notebooks/s "
        f"(load average {m['load'][0]:.1f} -> {m['load'][1]:.1f}); overhead beyond the cells "
        f"per notebook: median {m['median']:.2f} s, max {m['max']:.2f} s; from the run's "
        f"wall time {m['wall']:.2f} s (goal: at most {GOAL_OVERHEAD} s)"
    )
    if m["runner"] is not None:
        rest = m["median"] - m["runner"] - m["files"] - m["cleanup"]
        text += (
            f"\n    of it (medians): waiting for the runner and its kernel {m['runner']:.2f} s, "
            f"its files {m['files']:.2f} s, clean-up {m['cleanup']:.2f} s, the rest {rest:.2f} s"
        )
    return text


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=4, help="class size (default 4)")
    parser.add_argument("--rounds", type=int, default=2, help="-j 1 / -j 2 pairs (default 2)")
    parser.add_argument(
        "--ahead",
        choices=("done", "start"),
        default="done",
        help="when a slot's next kernel starts: once the cells ran (done, the grader's) "
        "or as soon as the notebook is sent (start)",
    )
    args = parser.parse_args(argv)
    print(machine())
    print(f"{args.students} students x {len(list((ROOT / 'solutions').glob('*.ipynb')))} notebooks")
    with tempfile.TemporaryDirectory(prefix="attnlib-class-") as tmp:
        folders = build_class(Path(tmp), args.students)
        rounds = []
        try:
            for n in range(args.rounds):
                one = run(folders, 1, sandbox=True, ahead=args.ahead)
                print(line(f"round {n + 1}, sandbox -j 1", one), flush=True)
                two = run(folders, 2, sandbox=True, ahead=args.ahead)
                print(line(f"round {n + 1}, sandbox -j 2", two), flush=True)
                rounds.append((one, two))
        except grade.GraderError as err:
            print(f"no sandbox here, sandboxed runs skipped: {err}")
        plain = run(folders, 2, sandbox=False)
    print(line("no sandbox -j 2", plain))
    for n, (one, two) in enumerate(rounds, start=1):
        ratio = two["rate"] / one["rate"]
        print(
            f"round {n}: ratio -j 2 / -j 1 (sandbox) {ratio:.2f}x "
            f"(goal: at least {GOAL_RATIO}x on 2 cores)"
        )
    if rounds:
        last = rounds[-1][1]
        cost = plain["rate"] / last["rate"]
        extra = last["median"] - plain["median"]
        print(
            f"sandbox cost at -j 2 (last round): {cost:.2f}x the time without it; "
            f"{extra:+.2f} s overhead per notebook (median)"
        )
    print(f"cores: {os.cpu_count()}")


if __name__ == "__main__":
    main()
