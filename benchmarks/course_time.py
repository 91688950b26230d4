"""How long every lesson and solution notebook takes to execute.

    python benchmarks/course_time.py                    # notebooks/ and solutions/
    python benchmarks/course_time.py notebooks/22_cost_and_memory.ipynb

Each notebook runs top to bottom in a fresh kernel with nbclient, in its own folder,
and is NOT written back. Two times per notebook: its cells alone (the goal: under
5 s per lesson) and the wall time including the kernel's start. A lesson that stores a
training run has a longer allowance (``LONGER``, by stem, so renumbering keeps it), shown
beside its time. The files on disk are never changed.
"""

import argparse
import time
from datetime import datetime
from pathlib import Path

import nbformat
from _measure import machine
from nbclient import NotebookClient

GOAL_SECONDS = 5.0
# lessons allowed a stored training run, stem -> seconds of cells (their solutions keep 5 s)
LONGER = {"tiny_gpt": 60.0}
ROOT = Path(__file__).resolve().parent.parent


def _when(stamp):
    return datetime.fromisoformat(stamp.replace("Z", "+00:00"))


def cells_seconds(nb):
    """Sum of the cells' execution times, from the timing nbclient records."""
    total = 0.0
    for cell in nb.cells:
        timing = cell.get("metadata", {}).get("execution", {})
        begin, end = timing.get("iopub.execute_input"), timing.get("shell.execute_reply")
        if begin and end:
            elapsed = _when(end) - _when(begin)
            total += elapsed.total_seconds()
    return total


def goal_seconds(path):
    """The seconds of cells allowed to ``path``: GOAL_SECONDS, or its lesson's LONGER entry.

    >>> [goal_seconds(Path(f"{folder}/30_tiny_gpt.ipynb")) for folder in ("notebooks", "solutions")]
    [60.0, 5.0]
    """
    stem = path.stem.split("_", 1)[-1]  # 30_tiny_gpt -> tiny_gpt
    return LONGER.get(stem, GOAL_SECONDS) if path.parent.name == "notebooks" else GOAL_SECONDS


def run(path):
    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=300,
        kernel_name="python3",
        record_timing=True,
        resources={"metadata": {"path": str(path.parent)}},
    )
    start = time.perf_counter()
    client.execute()
    return cells_seconds(nb), time.perf_counter() - start


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="notebooks or folders (default: both folders)")
    args = parser.parse_args(argv)
    paths = [Path(p) for p in args.paths] or [ROOT / "notebooks", ROOT / "solutions"]
    found = []
    for p in paths:
        found += sorted(p.glob("*.ipynb")) if p.is_dir() else [p]

    print(f"machine: {machine()}")
    print(f"{'notebook':<52} {'cells s':>8} {'with kernel s':>14}")
    total_cells = total_wall = 0.0
    slow = []
    for path in found:
        name = str(path.relative_to(ROOT)) if path.is_absolute() else str(path)
        try:
            cells, wall = run(path)
        except Exception as err:  # report and go on: one broken notebook should not hide the rest
            print(f"{name:<52} failed: {type(err).__name__}")
            slow.append(path.name)
            continue
        total_cells, total_wall = total_cells + cells, total_wall + wall
        goal = goal_seconds(path)
        flag = "" if cells < goal else f"  over {goal:.0f} s"
        if goal != GOAL_SECONDS:
            flag += f"  (a training run: {cells / goal:.0%} of its {goal:.0f} s)"
        if cells >= goal:
            slow.append(path.name)
        print(f"{name:<52} {cells:>8.2f} {wall:>14.2f}{flag}")
    label = f"total ({len(found)} notebook{'s' * (len(found) != 1)})"
    print(f"{label:<52} {total_cells:>8.2f} {total_wall:>14.2f}")
    if slow:
        print(
            f"over the goal ({GOAL_SECONDS:.0f} s, or its allowance), or failed: {', '.join(slow)}"
        )
    else:
        print(
            f"every notebook's cells ran within its goal ({GOAL_SECONDS:.0f} s unless allowed more)"
        )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
