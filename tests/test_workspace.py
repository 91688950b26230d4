"""A learner's answers survive the course's commands (issue 19, item 1).

`make lab` copies the exercises into the learner's git-ignored `my-work/` and serves the
course. This test runs `make lab` on a copy of the course, saves answers into `my-work/`
through the Jupyter server's contents API exactly as JupyterLab's browser client saves
(``PUT /api/contents/<path>`` with ``{"type": "notebook", "format": "json", "content":
...}``), also lets the "autosave" of an untouched exercise go through, then runs the
generator check of `make test` and `make exercises`: the answers are intact and the check
is green.
"""

import http.cookiejar
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tools.generate import BEGIN, END, NOTE_START, solution_regions  # noqa: E402
from tools.workspace import make_workspace  # noqa: E402

LESSON = "05_softmax.ipynb"
VENV = ROOT / ".venv"


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def course_copy(tmp_path):
    """The files `make lab`, `make exercises` and the generator check use, and the venv."""
    repo = tmp_path / "course"
    repo.mkdir()
    for folder in ("solutions", "exercises", "tools", "notebooks"):
        shutil.copytree(ROOT / folder, repo / folder, ignore=shutil.ignore_patterns("__pycache__"))
    stamp = (VENV / ".installed").stat().st_mtime
    for name in ("Makefile", "pyproject.toml"):
        shutil.copy2(ROOT / name, repo / name)
        os.utime(repo / name, (stamp - 60, stamp - 60))  # the venv is up to date: no install
    (repo / ".venv").symlink_to(VENV)
    (repo / "attnlib").symlink_to(ROOT / "attnlib")  # ruff sorts its imports as first-party
    return repo


COOKIES = http.cookiejar.CookieJar()
BROWSER = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(COOKIES))


def request(url, method="GET", body=None):
    """A request as JupyterLab's page makes it: the server's _xsrf cookie echoed in a header."""
    data = None if body is None else json.dumps(body).encode()
    req = urllib.request.Request(url, data=data, method=method)
    req.add_header("Content-Type", "application/json")
    xsrf = [c.value for c in COOKIES if c.name == "_xsrf"]
    if xsrf:
        req.add_header("X-XSRFToken", xsrf[0])
    with BROWSER.open(req, timeout=30) as response:
        body = response.read()
        return response.status, json.loads(body) if body[:1] in b"{[" else None


def answers_of(solution):
    """code cell id -> the solution's source with the markers dropped (the learner's answer)."""
    answers = {}
    for cell in nbformat.read(solution, as_version=4).cells:
        if cell.cell_type == "code" and solution_regions(cell.source):
            lines = [line for line in cell.source.splitlines() if line.strip() not in (BEGIN, END)]
            answers[cell.id] = "\n".join(lines)
    return answers


def run(command, cwd):
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=600)


@pytest.mark.skipif(not (VENV / ".installed").exists(), reason="needs the course venv (make)")
def test_answers_saved_as_jupyterlab_saves_survive_make_test_checks_and_make_exercises(tmp_path):
    repo = course_copy(tmp_path)
    port = free_port()
    home = tmp_path / "jupyter"
    lab_args = (
        f"--port={port} --no-browser --ServerApp.ip=127.0.0.1 --IdentityProvider.token= "
        f"--ServerApp.password= --LabApp.user_settings_dir={home}/settings "
        f"--LabApp.workspaces_dir={home}/workspaces"
    )
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(home / "runtime"))
    log = open(tmp_path / "lab.log", "w")  # noqa: SIM115 - closed below
    server = subprocess.Popen(
        ["make", "lab", f"LAB_ARGS={lab_args}"],
        cwd=repo,
        env=env,
        stdout=log,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, (tmp_path / "lab.log").read_text()
            try:
                status, _ = request(f"{base}/api/status")
                break
            except OSError:
                assert time.monotonic() < deadline, "make lab did not serve within 120 s"
                time.sleep(0.5)
        request(f"{base}/lab/tree/notebooks/00_start_here.ipynb")  # the page: sets _xsrf
        assert any(c.name == "_xsrf" for c in COOKIES)
        # make lab made the learner's copies; the note in each says it is theirs
        mine = repo / "my-work" / LESSON
        assert sorted(p.name for p in (repo / "my-work").glob("*.ipynb")) == sorted(
            p.name for p in (repo / "exercises").glob("*.ipynb")
        )
        # 1. JupyterLab's autosave of the untouched blank exercise: the file stays the same
        blank = (repo / "exercises" / LESSON).read_text()
        _, model = request(f"{base}/api/contents/exercises/{LESSON}?content=1")
        put = {"type": "notebook", "format": "json", "content": model["content"]}
        request(f"{base}/api/contents/exercises/{LESSON}", "PUT", put)
        assert (repo / "exercises" / LESSON).read_text() == blank
        # 2. answers typed into my-work/ and saved as the browser saves
        _, model = request(f"{base}/api/contents/my-work/{LESSON}?content=1")
        answers = answers_of(repo / "solutions" / LESSON)
        assert len(answers) >= 3
        title = next(c for c in model["content"]["cells"] if c["cell_type"] == "markdown")
        assert "**Your copy.**" in title["source"] and NOTE_START not in title["source"]
        for cell in model["content"]["cells"]:
            if cell["id"] in answers:
                cell["source"] = answers[cell["id"]]
        put = {"type": "notebook", "format": "json", "content": model["content"]}
        status, saved = request(f"{base}/api/contents/my-work/{LESSON}", "PUT", put)
        assert status == 200 and saved["path"] == f"my-work/{LESSON}"
        answered = mine.read_text()
        stored = {c.id: c.source for c in nbformat.read(mine, as_version=4).cells}
        assert all(stored[i] == a for i, a in answers.items())
    finally:
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()
    python = str(VENV / "bin" / "python")
    # the check `make test` runs on exercises/ (it failed after a save before): green
    check = run([python, "tools/generate.py", "--check"], repo)
    assert check.returncode == 0, check.stdout + check.stderr
    # make exercises: exercises/ as generated, my-work/ untouched
    made = run(["make", "exercises"], repo)
    assert made.returncode == 0, made.stdout + made.stderr
    assert mine.read_text() == answered
    assert (repo / "exercises" / LESSON).read_text() == blank
    # make lab again (its first step): the copy is kept, not replaced
    copied, kept = make_workspace(repo / "exercises", repo / "my-work")
    assert copied == [] and mine in kept and mine.read_text() == answered
    check = run([python, "tools/generate.py", "--check"], repo)
    assert check.returncode == 0, check.stdout + check.stderr
    # make test's lint step does not read my-work/: a learner's untidy answer cannot fail it
    nb = nbformat.read(mine, as_version=4)
    nb.cells.append(nbformat.v4.new_code_cell("import os,sys\nx=1;y =2"))
    nbformat.write(nb, mine)
    lint = run([str(VENV / "bin" / "ruff"), "check", "--no-cache", "."], repo)  # make lint
    assert lint.returncode == 0, lint.stdout + lint.stderr


def test_make_workspace_copies_only_missing_notebooks_and_marks_them_yours(tmp_path):
    exercises = tmp_path / "exercises"
    exercises.mkdir()
    shutil.copy(ROOT / "exercises" / LESSON, exercises / LESSON)
    shutil.copy(ROOT / "exercises" / "03_scoring.ipynb", exercises / "03_scoring.ipynb")
    mine = tmp_path / "my-work"
    mine.mkdir()
    (mine / LESSON).write_text("my answers")
    copied, kept = make_workspace(exercises, mine)
    assert copied == [mine / "03_scoring.ipynb"] and kept == [mine / LESSON]
    assert (mine / LESSON).read_text() == "my answers"
    nb = nbformat.read(mine / "03_scoring.ipynb", as_version=4)
    title = next(c for c in nb.cells if c.cell_type == "markdown")
    assert "**Your copy.**" in title.source and "](../exercises/03_scoring.ipynb)" in title.source
    assert title.source.startswith("# 03") and NOTE_START not in title.source
    assert not list(mine.glob(".*partial"))


def test_every_exercise_links_to_the_learners_copy():
    for path in sorted((ROOT / "exercises").glob("*.ipynb")):
        nb = nbformat.read(path, as_version=4)
        title = next(c for c in nb.cells if c.cell_type == "markdown")
        assert NOTE_START in title.source, f"{path.name}: no note; run `make exercises`"
        assert f"](../my-work/{path.name})" in title.source


def test_my_work_is_ignored_by_git_and_graded_by_default(tmp_path, monkeypatch):
    assert "my-work/" in (ROOT / ".gitignore").read_text().splitlines()
    from attnlib.cli import default_paths

    monkeypatch.chdir(tmp_path)
    (tmp_path / "exercises").mkdir()
    assert default_paths() == ["exercises/"]
    (tmp_path / "my-work").mkdir()
    assert default_paths() == ["my-work/"]
