"""Make nbgitpuller links that hand the course to a class on a JupyterHub.

    python tools/nbgitpuller_link.py https://hub.example.edu --lesson 3
    python tools/nbgitpuller_link.py https://hub.example.edu --lesson 3 --exercises
    python tools/nbgitpuller_link.py https://hub.example.edu --path notebooks --interface notebook

A student who clicks the link logs in to the hub, gets the course cloned into
``~/attention-course`` the first time (later clicks pull new commits and merge
them, never overwriting the student's own changes: that is nbgitpuller's
promise) and lands on the page. The repository address is read from
pyproject.toml's ``[project.urls] Repository`` (a fork sets its own there), the
branch defaults to ``main``; ``--repo`` and ``--branch`` override them (the
test uses a local bare clone).
"""

import argparse
import sys
import urllib.parse
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from colab_cell import BRANCH, repository_url  # noqa: E402

TARGET = "attention-course"  # the folder in each student's home
INTERFACES = {"lab": "lab/tree/{}", "notebook": "notebooks/{}", "tree": "tree/{}"}


def lesson_path(lesson, exercises=False, root=ROOT):
    """The notebook of a lesson number, relative to the course folder.

    >>> lesson_path(3)
    'notebooks/03_scoring.ipynb'
    >>> lesson_path("3", exercises=True)
    'exercises/03_scoring.ipynb'
    """
    folder = "exercises" if exercises else "notebooks"
    number = int(lesson)
    found = sorted((Path(root) / folder).glob(f"{number:02d}_*.ipynb"))
    if len(found) != 1:
        have = sorted(p.name[:2] for p in (Path(root) / folder).glob("[0-9][0-9]_*.ipynb"))
        raise ValueError(
            f"nbgitpuller_link: lesson must name one notebook in {folder}/, but lesson "
            f"{number:02d} matches {len(found)} (it has {have[0]} to {have[-1]})"
            if have
            else f"nbgitpuller_link: {folder}/ holds no lesson notebooks"
        )
    return f"{folder}/{found[0].name}"


def nbgitpuller_link(hub, path, repo=None, branch=BRANCH, interface="lab", target=TARGET):
    """The link that clones or pulls the course for the user and opens ``path`` in it.

    Parameters
    ----------
    hub : str
        The hub's address, e.g. ``https://hub.example.edu`` (a path prefix is kept).
    path : str
        A file or folder of the course, relative to its root, e.g. ``notebooks/03_scoring.ipynb``.
    repo, branch : str
        The git repository and branch to pull (default: pyproject.toml's address, ``main``).
    interface : {"lab", "notebook", "tree"}
        JupyterLab, Notebook 7's notebook view, or Notebook 7's file browser.

    Examples
    --------
    >>> nbgitpuller_link("https://hub.example.edu/", "notebooks/03_scoring.ipynb",
    ...                  repo="https://example.org/course", branch="main")  # doctest: +ELLIPSIS
    'https://hub.example.edu/hub/user-redirect/git-pull?repo=https%3A%2F%2Fexample.org%2Fcourse&branch=main&targetpath=attention-course&urlpath=lab%2Ftree%2Fattention-course%2Fnotebooks%2F03_scoring.ipynb'
    """
    if interface not in INTERFACES:
        raise ValueError(
            f"nbgitpuller_link: interface must be one of {sorted(INTERFACES)}, got {interface!r}"
        )
    if not hub.startswith(("http://", "https://")):
        raise ValueError(f"nbgitpuller_link: hub must be an http(s) address, got {hub!r}")
    path = path.strip("/")
    urlpath = INTERFACES[interface].format(f"{target}/{path}" if path else target)
    query = urllib.parse.urlencode(
        {
            "repo": repo or repository_url(),
            "branch": branch,
            "targetpath": target,
            "urlpath": urlpath,
        },
        quote_via=urllib.parse.quote,
        safe="",
    )
    return f"{hub.rstrip('/')}/hub/user-redirect/git-pull?{query}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("hub", help="the hub's address, e.g. https://hub.example.edu")
    where = parser.add_mutually_exclusive_group()
    where.add_argument("--lesson", help="a lesson number (03 or 3): open that lesson")
    where.add_argument("--path", help="a file or folder of the course to open")
    parser.add_argument(
        "--exercises", action="store_true", help="with --lesson: open its exercise notebook"
    )
    parser.add_argument("--repo", help="git repository (default: pyproject.toml's Repository)")
    parser.add_argument("--branch", default=BRANCH, help=f"branch (default: {BRANCH})")
    parser.add_argument("--interface", default="lab", choices=sorted(INTERFACES))
    args = parser.parse_args(argv)
    try:
        if args.lesson is not None:
            path = lesson_path(args.lesson, args.exercises)
        else:
            path = args.path if args.path is not None else "notebooks/00_start_here.ipynb"
        print(nbgitpuller_link(args.hub, path, args.repo, args.branch, args.interface))
    except ValueError as error:
        parser.exit(2, f"{error}\n")


if __name__ == "__main__":
    main()
