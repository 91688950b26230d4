"""Generate the exercise notebooks from the solution notebooks (``make exercises``).

    python tools/generate.py            # write exercises/ from solutions/
    python tools/generate.py --check    # write nothing; exit 1 if any exercise is stale
    python tools/generate.py --force    # also overwrite exercises someone typed answers into

``solutions/NN_name.ipynb`` is the single source. Each answer sits between a
``### BEGIN SOLUTION`` line and a ``### END SOLUTION`` line (nbgrader's markers)
inside a code cell. ``exercises/NN_name.ipynb`` is the same notebook with every
such region replaced by a stub, outputs cleared and execution counts removed:

- a region that holds a ``return`` becomes ``return ...`` (a function the learner fills in);
- a region that assigns names becomes ``name = ...`` for each name it assigns at its top
  level, in order (``Q, K = ...`` becomes ``Q, K = ..., ...``);
- anything else becomes ``...``.

The stub keeps the region's indentation. ``check(id, ...)`` answers "not attempted
yet" for ``...`` and for a function that returns ``...``, so an unfilled exercise
notebook runs top to bottom without an error. Inside a function, put the whole body
through its ``return`` in the region; otherwise code after the region would run on
``...`` and raise.

In a markdown cell a region becomes ``*Your answer here.*``.

Each exercise notebook's first markdown cell (its title) ends with a note that sends a
learner to their own copy, ``my-work/NN_name.ipynb`` (made by ``make lab``, see
``tools/workspace.py``), and records in its metadata (``attnlib.generated``) a fingerprint
of the cell sources the generator wrote. ``make exercises`` overwrites an exercise notebook
only when its sources still have that fingerprint (outputs, metadata and a JupyterLab save
do not count): a notebook someone typed answers into is listed and left alone unless
``--force`` (``make exercises FORCE=1``) is given. Files are written in the form JupyterLab
saves (``tools/normalize.py``), so opening an exercise changes nothing.

    >>> print(stub_source("S = Q @ K.T  # scores\\ncheck('scores', S)"))
    S = Q @ K.T  # scores
    check('scores', S)
    >>> lines = ["def f(x):", "    ### BEGIN SOLUTION", "    y = x + 1", "    return y"]
    >>> print(stub_source("\\n".join(lines + ["    ### END SOLUTION"])))
    def f(x):
        return ...
"""

import argparse
import ast
import copy
import hashlib
import json
import sys
import textwrap
from pathlib import Path

try:  # run as `python tools/generate.py` or imported as tools.generate
    from tools.normalize import jupyterlab_form, saved_text
except ImportError:  # pragma: no cover - script run: tools/ itself is on sys.path
    from normalize import jupyterlab_form, saved_text

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
MARKDOWN_STUB = "*Your answer here.*"
WORKSPACE = "my-work"  # the learner's folder (tools/workspace.py), git-ignored
# The note ends the title cell (no cell of its own, so exercise and solution cells stay aligned)
NOTE_START = "**Where to type your answers.**"
NOTE = (
    NOTE_START + " If you opened the course with `make lab`, your own copy "
    "of this notebook is [`{workspace}/{name}`](../{workspace}/{name}): answer there. It is "
    "yours: no course command overwrites it, and `make progress` grades it. This file is the "
    "course's blank copy, remade from `solutions/` by `make exercises`. (On Colab or Binder, "
    "answer here and download the notebook to keep your work.)"
)


class MarkerError(ValueError):
    """The solution markers of a cell are unbalanced or nested."""


def _assigned_names(tree):
    """Top-level names a block assigns, in order, as stub lines' left-hand sides."""
    targets = []
    for node in tree.body:
        if isinstance(node, ast.Assign):
            candidates = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            candidates = [node.target]
        else:
            continue
        for target in candidates:
            if isinstance(target, ast.Name):
                text = target.id
            elif isinstance(target, (ast.Tuple, ast.List)) and all(
                isinstance(t, ast.Name) for t in target.elts
            ):
                text = ", ".join(t.id for t in target.elts)
            else:
                continue  # S[0, 1] = ... or obj.x = ...: the name itself is made elsewhere
            if text not in targets:
                targets.append(text)
    return targets


def stub_for(region_lines, indent):
    """The stub lines that replace one solution region."""
    code = textwrap.dedent("\n".join(region_lines))
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return [f"{indent}..."]
    if any(isinstance(node, ast.Return) for node in tree.body):
        return [f"{indent}return ..."]
    names = _assigned_names(tree)
    if names:
        return [f"{indent}{t} = {', '.join(['...'] * (t.count(',') + 1))}" for t in names]
    return [f"{indent}..."]


def stub_source(source, markdown=False, where="cell"):
    """Replace every solution region of one cell's source by its stub."""
    out, region, indent = [], None, ""
    for number, line in enumerate(source.splitlines(), start=1):
        stripped = line.strip()
        if stripped == BEGIN:
            if region is not None:
                raise MarkerError(f"{where}, line {number}: {BEGIN} inside another solution.")
            region, indent = [], line[: len(line) - len(line.lstrip())]
        elif stripped == END:
            if region is None:
                raise MarkerError(f"{where}, line {number}: {END} without {BEGIN}.")
            out.extend([indent + MARKDOWN_STUB] if markdown else stub_for(region, indent))
            region = None
        elif BEGIN in line or END in line:
            raise MarkerError(f"{where}, line {number}: a marker must be alone on its line.")
        elif region is not None:
            region.append(line)
        else:
            out.append(line)
    if region is not None:
        raise MarkerError(f"{where}: {BEGIN} without {END}.")
    return "\n".join(out)


def solution_regions(source):
    """The lines inside each solution region of a cell's source (for leak tests)."""
    regions, region = [], None
    for line in source.splitlines():
        if line.strip() == BEGIN:
            region = []
        elif line.strip() == END:
            regions.append(region)
            region = None
        elif region is not None:
            region.append(line)
    return regions


def sources_fingerprint(cells):
    """sha256 of the cells' types, ids and sources: what a learner's typing changes.

    Outputs, execution counts and metadata do not count, so running a notebook or a
    JupyterLab save leaves it unchanged.

    >>> sources_fingerprint([{"cell_type": "code", "id": "a", "source": "x = 1"}])[:12]
    'a3035a5a26e8'
    """
    parts = [[c["cell_type"], c.get("id"), c["source"]] for c in cells]
    return hashlib.sha256(json.dumps(parts).encode("utf-8")).hexdigest()


def with_note(source, name):
    """``source`` (the title cell's) ending with the note that sends a learner to ``my-work/``."""
    return f"{source.rstrip()}\n\n{NOTE.format(workspace=WORKSPACE, name=name)}"


def without_note(source):
    """``source`` with the note (if any) taken off its end."""
    at = source.find("\n\n" + NOTE_START)
    return source if at < 0 else source[:at]


def make_exercise(nb, name="notebook"):
    """Return the exercise version of a solution notebook (``nb`` is not changed).

    Its metadata is what JupyterLab saves (``tools/normalize.py``) with the solution's
    ``language_info`` (the kernel that ran it), so the file does not depend on the machine
    that generates it, plus the fingerprint of its sources (``attnlib.generated``).
    """
    ex = copy.deepcopy(nb)
    ex.metadata = {}
    jupyterlab_form(ex, language_info=nb.metadata.get("language_info"))
    for index, cell in enumerate(ex.cells):
        where = f"{name}, cell {index}"
        if cell.cell_type in ("code", "markdown"):
            cell.source = stub_source(
                cell.source, markdown=cell.cell_type == "markdown", where=where
            )
        if cell.cell_type == "code":
            cell.outputs = []
            cell.execution_count = None
            cell.metadata.pop("execution", None)
    title = next((c for c in ex.cells if c.cell_type == "markdown"), None)
    if title is None:
        raise MarkerError(f"{name}: no markdown cell to carry the note about my-work/")
    title.source = with_note(title.source, Path(name).name)
    ex.metadata["attnlib"] = {"generated": sources_fingerprint(ex.cells)}
    return ex


def _sources(cells, drop_note=False):
    strip = without_note if drop_note else str
    return [
        {"cell_type": c["cell_type"], "id": c.get("id"), "source": strip(_text(c["source"]))}
        for c in cells
    ]


def _text(source):
    return "".join(source) if isinstance(source, list) else source


def typed_into(text, expected=None):
    """True when an exercise notebook's cells are not what the generator wrote.

    ``text`` is the file's content; ``expected`` the notebook the generator would write
    now. Its sources match the fingerprint recorded when it was written, or ``expected``'s
    sources: not typed into. A notebook written before fingerprints existed counts as not
    typed into when its sources are ``expected``'s without the note cell.
    """
    try:
        nb = json.loads(text)
        cells = _sources(nb["cells"])
        recorded = nb.get("metadata", {}).get("attnlib", {}).get("generated")
    except (ValueError, KeyError, TypeError, AttributeError):
        return True
    if sources_fingerprint(cells) == recorded:
        return False
    if expected is None:
        return True
    if cells == _sources(expected.cells):
        return False
    if recorded is not None:
        return True
    return _sources(nb["cells"], drop_note=True) != _sources(expected.cells, drop_note=True)


def exercise_notebook(solution_path):
    """The exercise notebook (a NotebookNode) the generator makes for ``solution_path``."""
    import nbformat

    nb = nbformat.read(solution_path, as_version=4)
    return make_exercise(nb, name=str(solution_path))


def exercise_text(solution_path):
    """The exercise notebook for ``solution_path`` as the exact text the generator writes."""
    return saved_text(exercise_notebook(solution_path))


def generate(solutions_dir="solutions", exercises_dir="exercises", check_only=False, force=False):
    """Write (or with ``check_only`` compare) every exercise notebook.

        Returns a list of ``(exercise_path, state)`` with state ``"written"``,
        ``"unchanged"``, ``"differs"`` (check_only; ``"typed into"`` when its cells are not what
    the generator wrote), ``"kept"`` (someone typed into it and
        ``force`` is off: left alone) or ``"orphan"`` (an exercise notebook with no solution
        notebook).
    """
    solutions_dir, exercises_dir = Path(solutions_dir), Path(exercises_dir)
    report = []
    sources = sorted(solutions_dir.glob("*.ipynb"))
    for solution_path in sources:
        target = exercises_dir / solution_path.name
        ex = exercise_notebook(solution_path)
        text = saved_text(ex)
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            report.append((target, "unchanged"))
        elif check_only:
            typed = current is not None and typed_into(current, ex)
            report.append((target, "typed into" if typed else "differs"))
        elif current is not None and not force and typed_into(current, ex):
            report.append((target, "kept"))
        else:
            exercises_dir.mkdir(parents=True, exist_ok=True)
            target.write_text(text, encoding="utf-8")
            report.append((target, "written"))
    names = {p.name for p in sources}
    for extra in sorted(exercises_dir.glob("*.ipynb")):
        if extra.name not in names:
            report.append((extra, "orphan"))
    return report


def main(argv=None):
    """The command: write (or ``--check``) every exercise notebook; exit status 0, 1 or 2."""
    parser = argparse.ArgumentParser(description="Generate exercises/ from solutions/.")
    parser.add_argument("--solutions", default="solutions", help="folder of solution notebooks")
    parser.add_argument("--exercises", default="exercises", help="folder to write exercises to")
    parser.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if any exercise is stale"
    )
    parser.add_argument(
        "--force", action="store_true", help="also overwrite exercises someone typed answers into"
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="list unchanged notebooks")
    args = parser.parse_args(argv)
    try:
        report = generate(args.solutions, args.exercises, check_only=args.check, force=args.force)
    except MarkerError as err:
        print(f"generate: {err}", file=sys.stderr)
        return 2
    bad = 0
    for path, state in report:
        if state == "orphan":
            print(f"{path}: no solution notebook makes this exercise notebook")
            bad += args.check
        elif state == "differs":
            print(f"{path}: differs from its solution; run `make exercises`")
            bad += 1
        elif state == "typed into":
            print(
                f"{path}: its cells are not what `make exercises` wrote (answers typed into "
                f"it?): keep them with `cp {path} {WORKSPACE}/`, then `make exercises FORCE=1`"
            )
            bad += 1
        elif state == "kept":
            print(
                f"{path}: not overwritten: its cells are not what `make exercises` wrote "
                f"(answers typed into it?). To keep them: `cp {path} {WORKSPACE}/` (or any "
                "folder); then `make exercises FORCE=1` replaces it with the blank exercise."
            )
            bad += 1
        elif state == "written" or args.verbose:
            print(f"{path}: {state}")
    if not args.check:
        written = sum(s == "written" for _, s in report)
        kept = sum(s == "kept" for _, s in report)
        print(f"exercises: {len(report)} notebooks, {written} written, {kept} left alone")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
