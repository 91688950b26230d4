"""Generate the exercise notebooks from the solution notebooks (``make exercises``).

    python tools/generate.py            # write exercises/ from solutions/
    python tools/generate.py --check    # write nothing; exit 1 if any exercise is stale

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
import sys
import textwrap
from pathlib import Path

BEGIN = "### BEGIN SOLUTION"
END = "### END SOLUTION"
MARKDOWN_STUB = "*Your answer here.*"


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


def make_exercise(nb, name="notebook"):
    """Return the exercise version of a solution notebook (``nb`` is not changed)."""
    ex = copy.deepcopy(nb)
    # keep only what does not depend on the machine that executed the solution
    ex.metadata = {key: nb.metadata[key] for key in ("kernelspec",) if key in nb.metadata} | {
        "language_info": {"name": "python"}
    }
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
    return ex


def exercise_text(solution_path):
    """The exercise notebook for ``solution_path`` as the exact text the generator writes."""
    import nbformat

    nb = nbformat.read(solution_path, as_version=4)
    ex = make_exercise(nb, name=str(solution_path))
    text = nbformat.writes(ex)
    return text if text.endswith("\n") else text + "\n"  # as nbformat.write ends a file


def generate(solutions_dir="solutions", exercises_dir="exercises", check_only=False):
    """Write (or with ``check_only`` compare) every exercise notebook.

    Returns a list of ``(exercise_path, state)`` with state ``"written"``,
    ``"unchanged"``, ``"differs"`` (check_only) or ``"orphan"`` (an exercise notebook
    with no solution notebook).
    """
    solutions_dir, exercises_dir = Path(solutions_dir), Path(exercises_dir)
    report = []
    sources = sorted(solutions_dir.glob("*.ipynb"))
    for solution_path in sources:
        target = exercises_dir / solution_path.name
        text = exercise_text(solution_path)
        current = target.read_text(encoding="utf-8") if target.exists() else None
        if current == text:
            report.append((target, "unchanged"))
        elif check_only:
            report.append((target, "differs"))
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
    parser.add_argument("-v", "--verbose", action="store_true", help="list unchanged notebooks")
    args = parser.parse_args(argv)
    try:
        report = generate(args.solutions, args.exercises, check_only=args.check)
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
        elif state == "written" or args.verbose:
            print(f"{path}: {state}")
    if not args.check:
        written = sum(s == "written" for _, s in report)
        print(f"exercises: {len(report)} notebooks, {written} written")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
