"""Put the Colab install cell right after each course notebook's title (idempotent).

The cell installs the course only when the kernel runs on Google Colab, and
there with ``--no-deps``: Colab keeps its own numpy, sympy, matplotlib and
ipywidgets 7.7.1 (its front end cannot show ipywidgets 8). Anywhere else it
prints nothing and costs one dictionary look-up, so nbval and ``make test``
see an empty output.

The repository's address is read from ``pyproject.toml`` (``[project.urls]``
``Repository``), the one place it is written; a fork changes it there and runs
this tool again.

Usage, from the repository root (lessons and solutions; ``make exercises``
then copies the cell into ``exercises/``)::

    python tools/colab_cell.py notebooks/*.ipynb solutions/*.ipynb
    python tools/colab_cell.py --check notebooks/*.ipynb   # exit 1 if a cell is missing

The cell comes right after the title cell (the first cell, when it is a markdown cell that
starts with a ``#`` heading), so a notebook opens on its title, on Colab and everywhere else;
in a notebook with no such title it comes first. Running it twice changes nothing the
second time. Re-execute the notebooks
afterwards (``make notebooks``) so their stored outputs and counts follow.
"""

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CELL_ID = "colab-install"
BRANCH = "main"  # the branch Colab and Binder links open

try:
    import tomllib
except ModuleNotFoundError:  # Python 3.10
    tomllib = None


def repository_url(pyproject=ROOT / "pyproject.toml"):
    """The course's public address, from ``[project.urls] Repository`` in pyproject.toml."""
    text = Path(pyproject).read_text(encoding="utf-8")
    if tomllib is not None:
        urls = tomllib.loads(text)["project"].get("urls", {})
        url = urls.get("Repository")
    else:  # good enough for the one line we need
        match = re.search(r'^Repository\s*=\s*"([^"]+)"', text, re.M)
        url = match.group(1) if match else None
    if not url:
        raise ValueError(f"repository_url: {pyproject} has no [project.urls] Repository")
    return url.rstrip("/")


def github_path(url=None):
    """``"owner/name"`` of a GitHub repository address (Colab and Binder need it).

    >>> github_path("https://github.com/attention-by-hand/attention-course")
    'attention-by-hand/attention-course'
    """
    url = repository_url() if url is None else url
    match = re.fullmatch(r"https://github\.com/([\w.-]+/[\w.-]+?)(\.git)?/?", url)
    if not match:
        raise ValueError(f"github_path: {url!r} is not a https://github.com/OWNER/NAME address")
    return match.group(1)


def colab_url(path, url=None):
    """The address that opens ``path`` (from the repository root) in Colab.

    >>> colab_url("notebooks/03_scoring.ipynb", "https://github.com/o/r")
    'https://colab.research.google.com/github/o/r/blob/main/notebooks/03_scoring.ipynb'
    """
    return f"https://colab.research.google.com/github/{github_path(url)}/blob/{BRANCH}/{path}"


def binder_url(path="notebooks/00_start_here.ipynb", url=None):
    """The address that builds the course on Binder and opens ``path`` in JupyterLab.

    >>> binder_url(url="https://github.com/o/r")
    'https://mybinder.org/v2/gh/o/r/HEAD?urlpath=lab/tree/notebooks/00_start_here.ipynb'
    """
    return f"https://mybinder.org/v2/gh/{github_path(url)}/HEAD?urlpath=lab/tree/{path}"


def lite_url(path="notebooks/00_start_here.ipynb", url=None):
    """The address of ``path`` in the course's JupyterLite site (``make lite``: build/lite),
    published with the repository's GitHub Pages under ``lite/``.

    >>> lite_url(url="https://github.com/o/r")
    'https://o.github.io/r/lite/lab/index.html?path=notebooks/00_start_here.ipynb'
    """
    owner, name = github_path(url).split("/")
    return f"https://{owner.lower()}.github.io/{name}/lite/lab/index.html?path={path}"


def cell_source(url=None):
    """The source of the Colab cell, with the repository address filled in.

    Plain Python (no ``%pip``), so tools that parse cells with ``ast`` read it, and
    laid out as ``ruff format`` writes it.
    """
    url = repository_url() if url is None else url
    return (
        "# On Google Colab only: install the course (Colab keeps its own numpy, sympy,\n"
        "# matplotlib and ipywidgets). Anywhere else this cell does nothing.\n"
        "import subprocess\n"
        "import sys\n"
        "\n"
        'if "google.colab" in sys.modules:\n'
        f'    course = "attnlib @ git+{url}"\n'
        '    pip = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", course]\n'
        "    subprocess.run(pip, check=True)"
    )


def colab_cell(url=None):
    """The whole first cell as it is stored in a notebook (without execution fields)."""
    return {
        "cell_type": "code",
        "id": CELL_ID,
        "metadata": {},
        "source": cell_source(url),
    }


def _lines(source):
    return source.splitlines(keepends=True)


def is_colab_cell(cell):
    return cell.get("id") == CELL_ID


def place(cells):
    """The index the cell belongs at: after a leading title cell, else 0 (``cells`` without it)."""
    first = cells[0] if cells else None
    titled = first is not None and first["cell_type"] == "markdown"
    return 1 if titled and "".join(first["source"]).lstrip().startswith("#") else 0


def apply(nb, url=None):
    """Insert the cell after the title of a notebook dict, or bring an existing one up to date.

    Returns True when the notebook changed.
    """
    want = colab_cell(url)
    cells = nb["cells"]
    others = [c for c in cells if not is_colab_cell(c)]
    at = place(others)
    if len(cells) > at and is_colab_cell(cells[at]) and len(others) == len(cells) - 1:
        here = cells[at]
        same = "".join(here["source"]) == want["source"] and here["metadata"] == {}
        if same:
            return False
        here["source"], here["metadata"] = _lines(want["source"]), {}
        here["outputs"], here["execution_count"] = [], None
        return True
    cell = dict(want, source=_lines(want["source"]), outputs=[], execution_count=None)
    moved = next((c for c in cells if is_colab_cell(c)), None)
    if moved is not None and "".join(moved["source"]) == want["source"]:
        cell = moved  # the same cell moved: its stored execution count stays
    cells[:] = others[:at] + [cell] + others[at:]  # one copy only, after the title
    return True


def process(paths, check=False, url=None):
    """Apply to each notebook file; with ``check``, change nothing and list the stale ones."""
    stale = []
    for path in paths:
        path = Path(path)
        nb = json.loads(path.read_text(encoding="utf-8"))
        if nb.get("nbformat", 4) < 4 or (nb["nbformat"] == 4 and nb.get("nbformat_minor", 0) < 5):
            raise ValueError(f"colab_cell: {path} is nbformat < 4.5, which has no cell ids")
        if apply(nb, url):
            stale.append(path)
            if not check:  # the layout nbformat writes: indent 1, a final newline
                text = json.dumps(nb, indent=1, ensure_ascii=False, sort_keys=True) + "\n"
                path.write_text(text, encoding="utf-8")
    return stale


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("notebooks", nargs="+", type=Path)
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if stale")
    args = parser.parse_args(argv)
    stale = process(args.notebooks, check=args.check)
    verb = "needs" if args.check else "updated"
    for path in stale:
        print(f"{verb} the Colab cell: {path}")
    print(f"{len(args.notebooks) - len(stale)} of {len(args.notebooks)} already up to date")
    return 1 if (args.check and stale) else 0


if __name__ == "__main__":
    sys.exit(main())
