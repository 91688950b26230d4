"""The learner's own copies of the exercises, ``my-work/``, and the commands that keep it so.

    python tools/workspace.py           # copy every exercise not yet in my-work/ (make lab)
    python tools/workspace.py --to DIR  # another folder
    python tools/workspace.py --adopt exercises/03_scoring.ipynb   # answers typed into the
                                        # blank template: into my-work/
    python tools/workspace.py --fresh exercises/03_scoring.ipynb   # the course's new version
                                        # beside yours: my-work/fresh/
    python tools/workspace.py --update  # make update: put back, pull, list what changed

``my-work/`` is git-ignored and untracked: no course command writes to a file in it once
it exists (this tool only adds notebooks that are missing, e.g. a new lesson after a pull,
and new files in ``my-work/fresh/`` and ``my-work/from-exercises/``), so a learner's answers
survive ``make exercises``, ``make update``, ``git pull`` and ``git checkout .``.
``make progress`` and ``attnlib check`` grade it when it exists.

Why a copy and not links: ``exercises/`` exists everywhere the course is read (GitHub, Colab,
Binder, the website) and holds the blank templates; each lesson's closing cell and each
template's first line (written by ``tools/generate.py``) link to ``my-work/`` for a learner
who started with ``make lab``. In the copy the title says it is the learner's own.

``--update`` never blocks on the course's own files and never loses work: a tracked
notebook that differs from the last commit only in outputs and metadata (running a lesson
saves new outputs and widget ids into it) is restored; one whose cells were edited is first
copied into ``my-work/`` (answers typed into an exercise template by ``--adopt``, a lesson or
solution with notes into ``my-work/edited/``); then ``git pull --ff-only``, the copies of new
exercises, and a list of the exercises that changed with the ``--fresh`` command for each.
"""

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

try:  # run as `python tools/workspace.py` or imported as tools.workspace
    from tools.generate import (
        LEGACY_NOTE_START,
        NOTE,
        TEMPLATE_SUFFIX,
        WORKSPACE,
        exercise_text,
        sources_fingerprint,
        without_note,
    )
except ImportError:  # pragma: no cover - script run: tools/ itself is on sys.path
    from generate import (
        LEGACY_NOTE_START,
        NOTE,
        TEMPLATE_SUFFIX,
        WORKSPACE,
        exercise_text,
        sources_fingerprint,
        without_note,
    )

FRESH = "fresh"  # my-work/fresh/: the course's new version of an exercise, beside yours
ADOPTED = "from-exercises"  # answers typed into a template while my-work/ held answers too
EDITED = "edited"  # a lesson or solution whose cells the learner changed, kept by --update
COMMAND = ".venv/bin/python tools/workspace.py"

OWN_SUFFIX = " (your copy)"
OWN_NOTE = (
    "**Your copy.** This notebook is yours: what you type and save here stays here. "
    "`{workspace}/` is not part of the course's files (git ignores it) and no course command "
    "overwrites it; `make progress` checks it. The blank template is "
    "[`exercises/{name}`](../exercises/{name}) and the worked answers are in "
    "[`solutions/{name}`](../solutions/{name})."
)


def own_title(source, name):
    """The title cell of the learner's copy, from the blank template's title ``source``."""
    own = OWN_NOTE.format(workspace=WORKSPACE, name=name)
    note = NOTE.format(workspace=WORKSPACE, name=name)
    heading, _, rest = source.partition("\n")
    if heading.endswith(TEMPLATE_SUFFIX) and note in rest:
        heading = heading[: -len(TEMPLATE_SUFFIX)] + OWN_SUFFIX
        return heading + "\n" + rest.replace(note, own, 1)
    if LEGACY_NOTE_START in source:  # an exercise notebook from before the template's title
        return f"{without_note(source)}\n\n{own}"
    return source


def own_copy_text(exercise_path):
    """The text of the learner's copy of ``exercise_path``: its note says it is theirs."""
    import nbformat

    try:
        from tools.normalize import saved_text
    except ImportError:  # pragma: no cover
        from normalize import saved_text

    nb = nbformat.read(exercise_path, as_version=4)
    title = next((c for c in nb.cells if c.cell_type == "markdown"), None)
    if title is not None:
        title.source = own_title(title.source, Path(exercise_path).name)
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


def _cells(text):
    """The cells of a notebook's text, or None when it is not a notebook."""
    try:
        cells = json.loads(text)["cells"]
        return [
            {
                "cell_type": c["cell_type"],
                "id": c.get("id"),
                "source": "".join(c["source"]) if isinstance(c["source"], list) else c["source"],
            }
            for c in cells
        ]
    except (ValueError, KeyError, TypeError):
        return None


def same_cells(a, b):
    """True when two notebook texts hold the same cells (outputs and metadata aside)."""
    cells_a, cells_b = _cells(a), _cells(b)
    return (
        cells_a is not None
        and cells_b is not None
        and (sources_fingerprint(cells_a) == sources_fingerprint(cells_b))
    )


def _write_new(target, text):
    """Write ``text`` to ``target`` only if no file is there; True when written."""
    target.parent.mkdir(parents=True, exist_ok=True)
    partial = target.with_name(f".{target.name}.partial")
    partial.write_text(text, encoding="utf-8")
    try:  # never replaces a file that appeared meanwhile (e.g. saved by JupyterLab)
        os.link(partial, target)
    except FileExistsError:
        return False
    finally:
        partial.unlink()
    return True


def _free_name(folder, name):
    """``folder/name``, or ``folder/stem-2.ipynb``... when that exists."""
    target, n = folder / name, 1
    while target.exists():
        n += 1
        target = folder / f"{Path(name).stem}-{n}{Path(name).suffix}"
    return target


def _edit_markdown(text, edit, first_only=False):
    """A notebook's text with ``edit(source)`` applied to its markdown cells (nbformat's form)."""
    import nbformat

    try:
        from tools.normalize import saved_text
    except ImportError:  # pragma: no cover
        from normalize import saved_text

    nb = nbformat.reads(text, as_version=nbformat.NO_CONVERT)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = edit(cell.source)
            if first_only:
                break
    return saved_text(nb)


def _one_level_down(text):
    """A notebook's text moved one folder deeper: its relative markdown links still work."""
    return _edit_markdown(text, lambda source: source.replace("](../", "](../../"))


def _git(*args, cwd=".", check=True):
    return subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True, check=check)


def committed_text(path, root=".", commit="HEAD"):
    """The text of ``path`` (relative to ``root``) at ``commit``, or None outside git."""
    try:
        done = _git("show", f"{commit}:{Path(path).as_posix()}", cwd=root, check=False)
    except OSError:
        return None
    return done.stdout if done.returncode == 0 else None


def blank_text(exercise, root="."):
    """The blank template ``exercise`` should hold: the committed one, else the generator's."""
    exercise = Path(exercise)
    text = committed_text(exercise.relative_to(root) if exercise.is_absolute() else exercise, root)
    if text is None:
        text = exercise_text(Path(root) / "solutions" / exercise.name)
    return text


def adopt(exercise, to=WORKSPACE, root="."):
    """Move answers typed into the template ``exercise`` into the learner's folder ``to``.

    Returns ``(where the answers went or None, message)``. The learner's copy
    ``to/NAME`` receives them when it is missing or holds no answers yet (its cells are
    those of a copy of the blank template); otherwise they go to ``to/from-exercises/NAME``
    (a free name there), so no file with answers is overwritten. Then ``exercise`` is
    put back to the blank template.
    """
    exercise, to, root = Path(exercise), Path(to), Path(root)
    name = exercise.name
    current = exercise.read_text(encoding="utf-8")
    blank = blank_text(exercise, root)
    if same_cells(current, blank):
        exercise.write_text(blank, encoding="utf-8")
        return None, f"{exercise}: no answers typed into it; put back as the blank template"
    answers = _own_text(current, name)
    mine = to / name
    if mine.exists() and not same_cells(mine.read_text(encoding="utf-8"), _own_text(blank, name)):
        target = _free_name(to / ADOPTED, name)
        _write_new(target, _one_level_down(answers))
        message = (
            f"{exercise}: your answers there are now in {target}; {mine} holds answers too and "
            "was left as it is: copy across what you need"
        )
    else:
        if mine.exists():  # a copy with no answers in it: nothing of the learner's is lost
            mine.unlink()
        if not _write_new(mine, answers):
            raise SystemExit(f"workspace: {mine} appeared meanwhile; run the command again")
        target = mine
        message = f"{exercise}: your answers moved into {target}: answer there from now on"
    exercise.write_text(blank, encoding="utf-8")
    return target, message + f" ({exercise} is the blank template again)"


def _own_text(text, name):
    """A notebook's text with its title cell made the learner's own (see :func:`own_title`)."""
    return _edit_markdown(text, lambda source: own_title(source, name), first_only=True)


def fresh(exercise, to=WORKSPACE):
    """Put a copy of the template ``exercise`` in ``to/fresh/``; return ``(path, message)``."""
    exercise, to = Path(exercise), Path(to)
    target = to / FRESH / exercise.name
    text = _one_level_down(own_copy_text(exercise))
    if target.exists():
        if target.read_text(encoding="utf-8") == text:
            return target, f"{target}: already the course's newest version"
        return None, (
            f"{target} exists and differs from the course's newest version: rename it (or "
            "delete it if nothing in it is yours), then run the command again"
        )
    _write_new(target, text)
    return target, (
        f"{target}: the course's newest version, beside your {to / exercise.name} (which is "
        "unchanged): copy your answers across, or the new parts into yours"
    )


def changed_paths(root="."):
    """Tracked files that differ from the last commit (worktree or index), as posix paths."""
    out = _git("status", "--porcelain=v1", "-z", "--untracked-files=no", cwd=root).stdout
    entries = [e for e in out.split("\0") if e]
    paths, skip = [], False
    for entry in entries:
        if skip:  # the source of a rename
            skip = False
            continue
        status, path = entry[:2], entry[3:]
        if "R" in status or "C" in status:
            skip = True
        paths.append(path)
    return paths


def put_back(root=".", to=WORKSPACE, out=print):
    """Restore the course's tracked notebooks, first keeping anything the learner wrote.

    Returns the tracked paths left as they are (not notebooks of the course's three folders).
    """
    root, to = Path(root), Path(root) / to
    others = []
    for path in changed_paths(root):
        folder = Path(path).parts[0]
        full = root / path
        if folder not in ("notebooks", "solutions", "exercises") or full.suffix != ".ipynb":
            others.append(path)
            continue
        if not full.exists():
            _git("checkout", "HEAD", "--", path, cwd=root)
            out(f"{path}: put back (it had been deleted)")
            continue
        head = committed_text(path, root) or ""
        current = full.read_text(encoding="utf-8")
        if folder == "exercises" and not same_cells(current, head):
            _, message = adopt(full, to, root)
            out(message)
        elif folder != "exercises" and not same_cells(current, head):
            target = _free_name(to / EDITED / folder, full.name)
            _write_new(target, current)
            out(f"{path}: you had changed its cells; your version is kept in {target}")
        _git("checkout", "HEAD", "--", path, cwd=root)
        if same_cells(current, head):
            out(f"{path}: put back as the course ships it (only outputs had changed)")
    return others


def update(root=".", to=WORKSPACE, out=print):
    """``make update``: put back, pull, copy new exercises, list the changed ones. Exit status."""
    root = Path(root)
    inside = _git("rev-parse", "--is-inside-work-tree", cwd=root, check=False)
    if inside.returncode != 0:
        out("update: this folder is not a git clone of the course; download the course again")
        return 2
    others = put_back(root, to, out)
    before = _git("rev-parse", "HEAD", cwd=root).stdout.strip()
    pulled = _git("pull", "--ff-only", cwd=root, check=False)
    if pulled.returncode != 0:
        out(pulled.stdout.strip())
        out(pulled.stderr.strip())
        if others:
            out(f"update: you changed these course files: {', '.join(others)}. Keep a copy of")
            out("them elsewhere, then `git checkout -- FILE` and `make update` again.")
        out("update: the pull did not complete; my-work/ is untouched.")
        return 1
    after = _git("rev-parse", "HEAD", cwd=root).stdout.strip()
    diff = _git("diff", "--name-only", before, after, "--", "exercises", "notebooks", cwd=root)
    changed = [p for p in diff.stdout.splitlines() if p.endswith(".ipynb")]
    had = {p.name for p in (root / to).glob("*.ipynb")} if (root / to).is_dir() else set()
    copied, _ = make_workspace(root / "exercises", root / to)
    if before == after:
        out("update: the course was already up to date")
    else:
        lessons = [p for p in changed if p.startswith("notebooks/")]
        out(f"update: pulled {before[:7]}..{after[:7]}; {len(lessons)} lessons changed")
    for path in copied:
        out(f"{Path(to) / path.name}: new exercises, copied for you")
    for path in changed:
        name = Path(path).name
        if path.startswith("exercises/") and name in had:
            out(
                f"{path} changed; yours, {Path(to) / name}, is as you left it. A fresh copy "
                f"beside it: {COMMAND} --fresh {path}"
            )
    return 0


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--exercises", default="exercises", help="the blank exercises")
    parser.add_argument("--to", default=WORKSPACE, help=f"the learner's folder ({WORKSPACE})")
    what = parser.add_mutually_exclusive_group()
    what.add_argument("--adopt", metavar="EXERCISE", help="move answers typed into a template")
    what.add_argument("--fresh", metavar="EXERCISE", help="a new copy of a template, in fresh/")
    what.add_argument("--update", action="store_true", help="put back, pull, list what changed")
    args = parser.parse_args(argv)
    if args.update:
        return update(to=args.to)
    if args.adopt or args.fresh:
        path = Path(args.adopt or args.fresh)
        if path.parent.name != "exercises" or not path.is_file():
            print(f"workspace: {path} is not an exercise notebook in exercises/", file=sys.stderr)
            return 2
        if args.adopt:
            _, message = adopt(path, args.to)
            print(message)
            return 0
        target, message = fresh(path, args.to)
        print(message)
        return 0 if target else 1
    copied, kept = make_workspace(args.exercises, args.to)
    if copied:
        print(f"{args.to}/: {len(copied)} exercise notebooks copied for you to answer in")
    if kept:
        print(f"{args.to}/: {len(kept)} of your notebooks kept as they are")
    return 0


if __name__ == "__main__":
    sys.exit(main())
