"""Make the learner's own copies of the exercises: ``my-work/`` (``make lab`` runs this).

    python tools/workspace.py              # copy every exercise not yet in my-work/
    python tools/workspace.py --to DIR     # another folder

``my-work/`` is git-ignored and untracked: no course command writes to a file in it once
it exists (this tool only adds notebooks that are missing, e.g. a new lesson after
``git pull``), so a learner's answers survive ``make exercises``, ``git pull`` and
``git checkout .``. ``make progress`` and ``attnlib check`` grade it when it exists.

Why a copy and not links: the lessons' "your exercises" links keep pointing to
``exercises/``, which exists everywhere the course is read (GitHub, Colab, Binder, the
website); each exercise notebook's note (the end of its title cell, written by
``tools/generate.py``) links on to ``my-work/`` for a learner who started with
``make lab``. In the copy that note says the file is the learner's own.
"""

import argparse
import os
import sys
from pathlib import Path

try:  # run as `python tools/workspace.py` or imported as tools.workspace
    from tools.generate import NOTE_START, WORKSPACE, without_note
except ImportError:  # pragma: no cover - script run: tools/ itself is on sys.path
    from generate import NOTE_START, WORKSPACE, without_note

OWN_NOTE = (
    "**Your copy.** This notebook is yours: what you type and save here stays here. "
    "`{workspace}/` is not part of the course's files (git ignores it) and no course command "
    "overwrites it; `make progress` grades it. The blank exercise is "
    "[`exercises/{name}`](../exercises/{name}) and the worked answers are in "
    "[`solutions/{name}`](../solutions/{name})."
)


def own_copy_text(exercise_path):
    """The text of the learner's copy of ``exercise_path``: its note says it is theirs."""
    import nbformat

    try:
        from tools.normalize import saved_text
    except ImportError:  # pragma: no cover
        from normalize import saved_text

    nb = nbformat.read(exercise_path, as_version=4)
    own = OWN_NOTE.format(workspace=WORKSPACE, name=Path(exercise_path).name)
    for cell in nb.cells:
        if cell.cell_type == "markdown" and NOTE_START in cell.source:
            cell.source = f"{without_note(cell.source)}\n\n{own}"
    return saved_text(nb)


def make_workspace(exercises="exercises", to=WORKSPACE):
    """Copy every exercise notebook missing from ``to``; return ``(copied, kept)`` paths.

    A notebook that exists in ``to`` is never opened for writing.
    """
    exercises, to = Path(exercises), Path(to)
    if not exercises.is_dir():
        raise SystemExit(f"workspace: no folder {exercises}/ to copy the exercises from.")
    to.mkdir(exist_ok=True)
    copied, kept = [], []
    for source in sorted(exercises.glob("*.ipynb")):
        target = to / source.name
        if target.exists():
            kept.append(target)
            continue
        partial = target.with_name(f".{target.name}.partial")
        partial.write_text(own_copy_text(source), encoding="utf-8")
        try:  # never replaces a file that appeared meanwhile (e.g. saved by JupyterLab)
            os.link(partial, target)
        except FileExistsError:
            kept.append(target)
        else:
            copied.append(target)
        finally:
            partial.unlink()
    return copied, kept


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercises", default="exercises", help="the blank exercises")
    parser.add_argument("--to", default=WORKSPACE, help=f"the learner's folder ({WORKSPACE})")
    args = parser.parse_args(argv)
    copied, kept = make_workspace(args.exercises, args.to)
    if copied:
        print(f"{args.to}/: {len(copied)} exercise notebooks copied for you to answer in")
    if kept:
        print(f"{args.to}/: {len(kept)} of your notebooks kept as they are")
    return 0


if __name__ == "__main__":
    sys.exit(main())
