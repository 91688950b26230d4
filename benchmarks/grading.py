"""How fast ``attnlib check`` grades a class, at -j 1 and -j 2.

    python benchmarks/grading.py                 # 40 students, each a copy of solutions/
    python benchmarks/grading.py --students 4    # a quick look

Builds a temporary class (one folder per student, each holding a copy of every
``solutions/`` notebook), grades it with ``-j 1`` and then ``-j 2``, and prints
notebooks per second for each, the ratio (goal: at least 1.8 on 2 cores), and the
grader's overhead per notebook beyond the time its cells ran (goal: at most 1 s): the
kernel's start, the runner process, judging and clean-up. Every exercise must pass,
or the figures are not printed.
"""

import argparse
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


def run(folders, jobs):
    results = []
    start = time.perf_counter()
    report = grade.grade(folders, jobs=jobs, on_result=lambda r, done, total: results.append(r))
    seconds = time.perf_counter() - start
    if not report["all_passed"]:
        bad = [r for r in report["rows"] if r["status"] != "passed"][:5]
        raise SystemExit(f"grading.py: not every exercise passed at -j {jobs}: {bad}")
    overhead = [r["seconds"] - r["cell_seconds"] for r in results]
    return len(results), seconds, statistics.median(overhead), max(overhead)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--students", type=int, default=40, help="class size (default 40)")
    args = parser.parse_args(argv)
    print(machine())
    with tempfile.TemporaryDirectory(prefix="attnlib-class-") as tmp:
        folders = build_class(Path(tmp), args.students)
        rates = {}
        for jobs in (1, 2):
            count, seconds, median_over, max_over = run(folders, jobs)
            rates[jobs] = count / seconds
            print(
                f"-j {jobs}: {count} notebooks in {seconds:.1f} s = {rates[jobs]:.2f} notebooks/s; "
                f"overhead beyond the cells per notebook: median {median_over:.2f} s, "
                f"max {max_over:.2f} s (goal: at most 1 s)"
            )
    print(f"ratio -j 2 / -j 1: {rates[2] / rates[1]:.2f}x (goal: at least 1.8x on 2 cores)")


if __name__ == "__main__":
    main()
