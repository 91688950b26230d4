"""Re-run notebooks top to bottom in a fresh kernel and store their outputs (``make notebooks``).

    python tools/execute.py notebooks solutions          # every lesson and solution
    python tools/execute.py notebooks/03_scoring.ipynb   # one

The step before committing a changed lesson: nbval then compares a fresh run with what
is stored. Each notebook runs in its own folder with nbclient; timings are not recorded
(they would change on every run) and live widget state is dropped. The file is written in
the form JupyterLab saves (tools/normalize.py), so opening a lesson changes nothing.
"""

import argparse
import sys
from pathlib import Path

try:  # run as `python tools/execute.py` or imported as tools.execute
    from tools.normalize import notebook_paths as _notebook_paths
    from tools.normalize import write
except ImportError:  # pragma: no cover - script run: tools/ itself is on sys.path
    from normalize import notebook_paths as _notebook_paths
    from normalize import write


def notebook_paths(paths):
    """Expand files and folders into a sorted list of ``.ipynb`` files."""
    return _notebook_paths(paths, where="execute")


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


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="notebook files or folders")
    parser.add_argument("--timeout", type=int, default=120, help="seconds per cell (120)")
    args = parser.parse_args(argv)
    for path in notebook_paths(args.paths):
        nb = run_notebook(path, timeout=args.timeout)
        write(nb, path, language_info=nb.metadata.get("language_info"))
        print(f"executed {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
