"""The Colab first cell (tools/colab_cell.py): silent and free outside Colab, an install on Colab,
written once per notebook, with the repository's address taken from pyproject.toml."""

import copy
import importlib.util
import io
import json
import re
import sys
import types
from contextlib import redirect_stdout
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
tomllib = pytest.importorskip("tomllib")


def load_tool():
    spec = importlib.util.spec_from_file_location("colab_cell", ROOT / "tools" / "colab_cell.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


tool = load_tool()
URL = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["urls"]["Repository"]
NOTEBOOKS = sorted(
    p for kind in ("notebooks", "solutions", "exercises") for p in (ROOT / kind).glob("*.ipynb")
)


def small_notebook():
    return {
        "cells": [
            {"cell_type": "markdown", "id": "title", "metadata": {}, "source": ["# 03 · Scoring"]},
            {
                "cell_type": "code",
                "id": "c1",
                "metadata": {},
                "source": ["print(1)"],
                "outputs": [],
                "execution_count": None,
            },
        ],
        "metadata": {},
        "nbformat": 4,
        "nbformat_minor": 5,
    }


def run_cell(source, colab, monkeypatch):
    """Run the cell's source with subprocess.run recorded; return (commands run, printed text)."""
    import subprocess

    calls = []
    monkeypatch.setattr(subprocess, "run", lambda args, **kw: calls.append((args, kw)))
    if colab:
        monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))
    else:
        monkeypatch.delitem(sys.modules, "google.colab", raising=False)
    out = io.StringIO()
    with redirect_stdout(out):
        exec(compile(source, "colab-install", "exec"), {})
    return calls, out.getvalue()


def test_the_address_comes_from_pyproject():
    assert tool.repository_url() == URL.rstrip("/")
    assert f"git+{URL}" in tool.cell_source()
    assert tool.github_path() in tool.colab_url("notebooks/00_start_here.ipynb")


def test_a_bad_address_is_named():
    with pytest.raises(ValueError, match=r"github_path: 'https://example.org/x' is not a"):
        tool.github_path("https://example.org/x")


def test_outside_colab_the_cell_does_nothing_and_prints_nothing(monkeypatch):
    calls, printed = run_cell(tool.cell_source(), colab=False, monkeypatch=monkeypatch)
    assert calls == [] and printed == ""


def test_on_colab_the_cell_installs_the_course_without_its_dependencies(monkeypatch):
    calls, _ = run_cell(tool.cell_source(), colab=True, monkeypatch=monkeypatch)
    assert calls == [
        (
            [
                sys.executable,
                "-m",
                "pip",
                "install",
                "--quiet",
                "--no-deps",
                f"attnlib @ git+{URL}",
            ],
            {"check": True},
        )
    ]


def test_the_cell_is_plain_python_that_ruff_accepts(tmp_path):
    import ast
    import shutil
    import subprocess

    source = tool.cell_source()
    ast.parse(source)  # tests and tools read cells with ast: no IPython magics
    ruff = str(Path(sys.executable).parent / "ruff")
    if not Path(ruff).exists():
        ruff = shutil.which("ruff") or pytest.skip("no ruff")
    config = ["--config", str(ROOT / "pyproject.toml")]  # the course's line length and rules
    path = tmp_path / "cell.py"
    path.write_text(source + "\n")
    for command in (
        [ruff, "check", "--no-cache", *config, str(path)],
        [ruff, "format", "--check", *config, str(path)],
    ):
        result = subprocess.run(command, capture_output=True, text=True, cwd=ROOT)
        assert result.returncode == 0, result.stdout + result.stderr


def test_the_cell_prints_nothing_in_a_real_kernel():
    nbformat = pytest.importorskip("nbformat")
    from nbclient import NotebookClient

    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.from_dict(dict(tool.colab_cell(), outputs=[], execution_count=None))]
    NotebookClient(nb, timeout=60, kernel_name="python3").execute()
    assert nb.cells[0].outputs == []


def test_insert_is_first_and_idempotent():
    nb = small_notebook()
    assert tool.apply(nb) is True
    assert [c["id"] for c in nb["cells"]] == ["colab-install", "title", "c1"]
    once = copy.deepcopy(nb)
    assert tool.apply(nb) is False
    assert nb == once


def test_a_stale_cell_is_updated_and_a_misplaced_one_moved():
    nb = small_notebook()
    tool.apply(nb, url="https://github.com/old/place")
    assert "old/place" in "".join(nb["cells"][0]["source"])
    assert tool.apply(nb) is True
    assert "".join(nb["cells"][0]["source"]) == tool.cell_source()
    nb["cells"].append(nb["cells"].pop(0))  # moved to the end by hand
    assert tool.apply(nb) is True
    assert [c["id"] for c in nb["cells"]] == ["colab-install", "title", "c1"]


def test_process_writes_files_and_check_mode_changes_nothing(tmp_path, capsys):
    path = tmp_path / "03_scoring.ipynb"
    path.write_text(json.dumps(small_notebook()))
    before = path.read_text()
    assert tool.main(["--check", str(path)]) == 1
    assert path.read_text() == before
    assert tool.main([str(path)]) == 0
    written = path.read_text()
    assert tool.main(["--check", str(path)]) == 0
    assert tool.main([str(path)]) == 0 and path.read_text() == written
    assert "1 of 1 already up to date" in capsys.readouterr().out


def test_readme_links_use_the_one_address():
    readme = (ROOT / "README.md").read_text()
    path = tool.github_path()
    links = re.findall(
        r"https://(?:github\.com|colab\.research\.google\.com/github|mybinder\.org/v2/gh)/([\w.-]+/[\w.-]+)",
        readme,
    )
    assert links, "the README should link to Binder and Colab"
    assert set(links) == {path}
    assert tool.binder_url() in readme
    assert f"git clone {tool.repository_url()}\n" in readme  # the Quickstart's clone line
    assert "[project.urls]" in readme  # how a fork sets its own address


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_notebook_starts_with_the_colab_cell(path):
    first = json.loads(path.read_text(encoding="utf-8"))["cells"][0]
    want = tool.colab_cell()
    assert {k: first.get(k) for k in ("cell_type", "id", "metadata")} == {
        k: want[k] for k in ("cell_type", "id", "metadata")
    }
    assert "".join(first["source"]) == want["source"]
    assert first.get("outputs") == []


def test_every_lesson_in_the_course_map_opens_in_colab():
    readme = (ROOT / "README.md").read_text()
    rows = [line for line in readme.splitlines() if re.match(r"^\| \[\d\d ", line)]
    lessons = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
    assert len(rows) == len(lessons)
    for name, row in zip(lessons, rows, strict=True):
        assert f"[Colab]({tool.colab_url(f'notebooks/{name}')})" in row, name
