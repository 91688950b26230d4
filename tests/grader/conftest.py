"""Helpers for the hostile-notebook suite: notebooks are built here from the course's own
exercise and solution notebooks, with one forgery or fault each."""

import copy
import hashlib
import json
import os
from pathlib import Path

import pytest

from attnlib.cli import main

ROOT = Path(__file__).resolve().parent.parent.parent
LESSON = "03_scoring"  # five exercises, listed in IDS
IDS = ["score_eat_seeds", "rank_witness", "rank_witness_general", "scores_loop", "double_keys"]


def load(folder, stem=LESSON):
    return json.loads((ROOT / folder / f"{stem}.ipynb").read_text(encoding="utf-8"))


def unsolved():
    """The exercise notebook as handed out: every answer is ``...``."""
    return load("exercises")


def solved():
    """The solution notebook, stored outputs (the check records) included."""
    return load("solutions")


def code(source, **fields):
    cell = {"cell_type": "code", "execution_count": None, "metadata": {}, "outputs": []}
    cell |= {"source": source} | fields
    return cell


def check_cells(nb):
    """Indices of the cells that call check(...)."""
    return [i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" and "check(" in src(c)]


def src(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def insert_after_setup(nb, *cells):
    """Put cells right after the notebook's first code cell (imports, Q and K)."""
    first = next(i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code")
    nb = copy.deepcopy(nb)
    nb["cells"][first + 1 : first + 1] = list(cells)
    return nb


def pid_cell(pid_file):
    """A last cell that records the kernel's process id, to prove it is gone afterwards."""
    return code(f"import os as _os\nopen({str(pid_file)!r}, 'a').write(f'{{_os.getpid()}}\\n')")


def write(path, nb_or_bytes):
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(nb_or_bytes, bytes):
        path.write_bytes(nb_or_bytes)
    else:
        path.write_text(json.dumps(nb_or_bytes, indent=1), encoding="utf-8")
    return path


def digests(folder):
    return {
        str(p): hashlib.sha256(p.read_bytes()).hexdigest()
        for p in sorted(Path(folder).rglob("*"))
        if p.is_file()
    }


def alive(pid):
    """True while a process exists and is not a zombie."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (FileNotFoundError, ProcessLookupError):
        return False


def pids_in(path):
    path = Path(path)
    if not path.exists():
        return []
    return [int(p) for p in path.read_text().split()]


def grade_json(capsys, *args):
    """Run ``attnlib check --json ARGS``; return (exit status, report)."""
    status = main(["check", "--json", "-q", *map(str, args)])
    out = capsys.readouterr().out
    return status, json.loads(out)


def rows_of(report, notebook):
    """{exercise: row} of one notebook."""
    return {r["exercise"]: r for r in report["rows"] if r["notebook"] == str(notebook)}


@pytest.fixture
def no_stray_kernels():
    """Children this test process had before must be all it has after."""
    before = set(_children())
    yield
    assert set(_children()) <= before


def sandbox_uid_processes(uids):
    """Process ids whose real uid is one of ``uids`` (a run's ``sandbox_uids``)."""
    uids = set(uids)
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/status") as f:
                    line = next(x for x in f if x.startswith("Uid:"))
                if int(line.split()[1]) in uids and alive(int(entry)):
                    found.append(int(entry))
            except (OSError, StopIteration, ValueError):
                continue
    return found


def _children():
    me = os.getpid()
    try:
        with open(f"/proc/{me}/task/{me}/children") as f:
            return [int(p) for p in f.read().split() if alive(int(p))]
    except OSError:
        return []
