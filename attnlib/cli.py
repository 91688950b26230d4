"""The ``attnlib`` command line: tools for maintainers, learners and instructors.

``attnlib execute PATH...`` runs notebooks top to bottom in a fresh kernel and
stores their outputs (the step before committing a changed lesson).
"""

import argparse
import sys
from pathlib import Path


def notebook_paths(paths):
    """Expand files and folders into a sorted list of ``.ipynb`` files."""
    found = []
    for p in map(Path, paths):
        if p.is_dir():
            found.extend(
                sorted(q for q in p.glob("*.ipynb") if ".ipynb_checkpoints" not in q.parts)
            )
        elif p.suffix == ".ipynb" and p.exists():
            found.append(p)
        else:
            raise SystemExit(f"attnlib: {p} is not a notebook or a folder of notebooks.")
    return found


def run_notebook(path, timeout=120):
    """Execute a notebook in a fresh kernel in its own folder; return the executed copy."""
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(path, as_version=4)
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        record_timing=False,  # timings would change on every run
        resources={"metadata": {"path": str(Path(path).parent)}},
    )
    client.execute()
    nb.metadata.pop("widgets", None)  # live widget state belongs to the session, not the file
    return nb


def cmd_execute(args):
    import nbformat

    for path in notebook_paths(args.paths):
        nb = run_notebook(path)
        nbformat.write(nb, path)
        print(f"executed {path}")
    return 0


def build_parser():
    parser = argparse.ArgumentParser(prog="attnlib", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("execute", help="run notebooks in a fresh kernel and store outputs")
    p.add_argument("paths", nargs="+", help="notebook files or folders")
    p.set_defaults(func=cmd_execute)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
