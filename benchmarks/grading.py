"""How fast ``attnlib check`` grades a class: -j 1 against -j 2, and the sandbox's cost.

    python benchmarks/grading.py                 # 40 students, each a copy of solutions/
    python benchmarks/grading.py --students 4    # a quick look

Builds a temporary class (one folder per student, each holding a copy of every
``solutions/`` notebook) and grades it three times: in the bubblewrap sandbox with
``-j 1`` and with ``-j 2``, then without the sandbox with ``-j 2``. Prints notebooks per
second for each, the ratio -j 2 / -j 1 (goal: at least 1.8 on 2 cores), the grader's
overhead per notebook beyond the time its cells ran (goal: at most 0.5 s, sandbox
included): the runner, the sandbox and the kernel's start, judging and clean-up; and the
sandbox's cost (the rate and the overhead with and without it). Every exercise must
pass, or the figures are not printed. Without a sandbox on this machine (no bubblewrap,
not root), the sandboxed runs are skipped and said so.
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

ROOT = Path(__file__).resolve().parent.parent


def build_class(folder, students):
    folders = []
    for n in range(students):
        student = folder / f"student_{n:03d}"
        shutil.copytree(ROOT / "solutions", student, ignore=shutil.ignore_patterns("*.md"))
        folders.append(str(student))
    return folders


def run(folders, jobs, sandbox):
    results = []
    start = time.perf_counter()
    report = grade.grade(
        folders,
        jobs=jobs,
        sandbox=sandbox,
        require_sandbox=sandbox,
        on_result=lambda r, done, total: results.append(r),
    )
    seconds = time.perf_counter() - start
    if not report["all_passed"]:
        bad = [r for r in report["rows"] if r["status"] != "passed"][:5]
        raise SystemExit(f"grading.py: not every exercise passed at -j {jobs}: {bad}")
    overhead = [r["seconds"] - r["cell_seconds"] for r in results]
    return {
        "count": len(results),
        "seconds": seconds,
        "rate": len(results) / seconds,
        "median": statistics.median(overhead),
        "max": max(overhead),
    }


def line(label, m):
    return (
        f"{label}: {m['count']} notebooks in {m['seconds']:.1f} s = {m['rate']:.2f} notebooks/s; "
        f"overhead beyond the cells per notebook: median {m['median']:.2f} s, "
        f"max {m['max']:.2f} s (goal: at most 0.5 s)"
    )


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40, help="class size (default 40)")
    args = parser.parse_args(argv)
    print(machine())
    print(f"{args.students} students x {len(list((ROOT / 'solutions').glob('*.ipynb')))} notebooks")
    with tempfile.TemporaryDirectory(prefix="attnlib-class-") as tmp:
        folders = build_class(Path(tmp), args.students)
        try:
            sandboxed = {jobs: run(folders, jobs, sandbox=True) for jobs in (1, 2)}
        except grade.GraderError as err:
            print(f"no sandbox here, sandboxed runs skipped: {err}")
            sandboxed = None
        plain = run(folders, 2, sandbox=False)
    if sandboxed:
        for jobs, m in sandboxed.items():
            print(line(f"sandbox -j {jobs}", m))
    print(line("no sandbox -j 2", plain))
    if sandboxed:
        ratio = sandboxed[2]["rate"] / sandboxed[1]["rate"]
        print(f"ratio -j 2 / -j 1 (sandbox): {ratio:.2f}x (goal: at least 1.8x on 2 cores)")
        cost = plain["rate"] / sandboxed[2]["rate"]
        extra = sandboxed[2]["median"] - plain["median"]
        print(
            f"sandbox cost at -j 2: {cost:.2f}x the time without it; "
            f"{extra:+.2f} s overhead per notebook (median)"
        )
    print(f"cores: {os.cpu_count()}")


if __name__ == "__main__":
    main()
