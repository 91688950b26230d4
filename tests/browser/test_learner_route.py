"""A learner's everyday route, in JupyterLab and Chromium, on a clone of the course (issue 26).

The course's tracked files are committed to a bare repository that plays the course's origin;
the learner clones it and makes `my-work/` as `make lab` does, and JupyterLab serves the clone
(as `make lab`: the clone is the root). In the browser the learner opens lesson 03, follows its
closing link to their copy, answers the first exercise and saves (Ctrl+S); `make progress`
counts the answer. They run lesson 03 (a widget lesson) top to bottom and save it, so the
tracked lesson now holds new outputs and widget ids: the state in which a plain `git pull`
aborted. Upstream, a maintainer changes lesson 03 and its exercise and pushes; the learner's
`make update` completes, the answer is intact, and the changed exercise is listed with the
command that puts a fresh copy beside it.

The clone's `.venv` is a link to the course's own (so `make` finds the installed course) and
its pyproject.toml is dated back, so make never reinstalls into it.
"""

import os
import re
import shutil
import subprocess
import time

import pytest

from .conftest import ROOT, serve_jupyter
from .test_lessons_in_browser import assert_clean, open_notebook, run_all

LESSON = "03_scoring.ipynb"
ANSWER = "2 * 2 + 1 * 1"  # eat's query (2, 1) . seeds' key (2, 1), exercise score_eat_seeds
WHO = ["-c", "user.name=course", "-c", "user.email=course@example.org"]


def git(cwd, *args):
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, f"git {' '.join(args)}:\n{done.stdout}{done.stderr}"
    return done.stdout


def make(cwd, target):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("MAKE", "MFLAGS"))}
    return subprocess.run(
        ["make", "--no-print-directory", target], cwd=cwd, capture_output=True, text=True, env=env
    )


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    """(origin, upstream clone, learner's clone with my-work/ made as `make lab` makes it)."""
    top = tmp_path_factory.mktemp("route")
    seed = top / "seed"
    for name in git(ROOT, "ls-files", "-z").split("\0"):
        if name and (ROOT / name).is_file():
            (seed / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / name, seed / name)
    git(seed, "init", "-q", "-b", "main")
    git(seed, "add", "-A")
    git(seed, *WHO, "commit", "-q", "-m", "the course")
    origin = top / "origin.git"
    git(top, "clone", "-q", "--bare", str(seed), str(origin))
    upstream, learner = top / "upstream", top / "learner"
    git(top, "clone", "-q", str(origin), str(upstream))
    git(top, "clone", "-q", str(origin), str(learner))
    (learner / ".venv").symlink_to(ROOT / ".venv")
    os.utime(learner / "pyproject.toml", (0, 0))  # older than .venv/.installed: no reinstall
    made = subprocess.run(
        [str(ROOT / ".venv/bin/python"), "tools/workspace.py"],  # make lab's first step
        cwd=learner,
        capture_output=True,
        text=True,
    )
    assert made.returncode == 0, made.stderr
    return origin, upstream, learner


@pytest.fixture(scope="module")
def learner_lab(clone, artefacts):
    """JupyterLab serving the learner's clone, as `make lab` serves the course folder."""
    from . import conftest

    saved, conftest.ROOT = conftest.ROOT, clone[2]
    try:
        server = serve_jupyter("jupyterlab", "LabApp", "/lab", artefacts / "server-learner.log")
        base = next(server)
    finally:
        conftest.ROOT = saved
    yield base
    server.close()


def save(page, path):
    """Ctrl+S in the current notebook; wait until the file on disk has changed."""
    stamp = path.stat().st_mtime_ns
    page.keyboard.press("Control+s")
    deadline = time.monotonic() + 30
    while path.stat().st_mtime_ns == stamp:
        assert time.monotonic() < deadline, f"Ctrl+S did not save {path.name} within 30 s"
        time.sleep(0.2)
    time.sleep(0.5)


def test_answer_progress_widget_lesson_then_update(browser, clone, learner_lab, artefacts):
    origin, upstream, learner = clone
    mine = learner / "my-work" / LESSON

    # 1. lesson 03's closing link opens the learner's copy; answer the first exercise, save
    page, errors = open_notebook(browser, learner_lab, f"notebooks/{LESSON}")
    try:
        # JupyterLab resolves a markdown link's href; its text is what the lesson wrote
        link = page.locator(".jp-RenderedMarkdown a", has_text=f"my-work/{LESSON}").last
        link.scroll_into_view_if_needed()
        link.click()
        copy = page.locator(".jp-NotebookPanel:visible")
        copy.locator("h1", has_text="(your copy)").wait_for()
        cell = copy.locator(".jp-CodeCell", has_text="score_eat_seeds = ...").first
        cell.scroll_into_view_if_needed()
        editor = cell.locator(".cm-content")
        editor.click()
        page.keyboard.press("Control+Home")
        page.keyboard.press("End")
        for _ in range(3):
            page.keyboard.press("Backspace")
        page.keyboard.type(ANSWER)
        save(page, mine)
        page.screenshot(path=artefacts / "learner-answer.png")
    finally:
        page.close()
    answered = mine.read_text(encoding="utf-8")
    assert f"score_eat_seeds = {ANSWER}" in answered, "the answer did not reach my-work/"

    # 2. make progress counts it
    progress = make(learner, "progress")
    assert progress.returncode == 0, progress.stdout + progress.stderr
    line = next(x for x in progress.stdout.splitlines() if x.startswith(f"my-work/{LESSON}"))
    assert "1 of" in line and "passed" in line, progress.stdout

    # 3. the widget lesson, run top to bottom and saved: the tracked file changes
    page, errors = open_notebook(browser, learner_lab, f"notebooks/{LESSON}")
    try:
        run_all(page)
        page.locator(".attnlib-view").first.wait_for()
        assert_clean(page, errors, "03_scoring in the learner's clone")
        save(page, learner / "notebooks" / LESSON)
    finally:
        page.close()
    dirty = git(learner, "status", "--porcelain", "--untracked-files=no")
    assert f"notebooks/{LESSON}" in dirty, "running the lesson changed nothing: no test"

    # 4. upstream changes lesson 03 and its exercise
    for folder in ("notebooks", "exercises"):
        path = upstream / folder / LESSON
        text = path.read_text(encoding="utf-8")
        path.write_text(re.sub("(?i)scoring every pair", r"\g<0>, revised", text, count=1))
    assert git(upstream, "status", "--porcelain").count(LESSON) == 2, "upstream change missing"
    git(upstream, *WHO, "commit", "-q", "-am", "lesson 03 and its exercise revised")
    git(upstream, "push", "-q", "origin", "main")

    # 5. make update completes; the answer is intact; the changed exercise is listed
    update = make(learner, "update")
    out = update.stdout + update.stderr
    assert update.returncode == 0, out
    assert git(learner, "rev-parse", "HEAD") == git(origin, "rev-parse", "main"), out
    assert "revised" in (learner / "exercises" / LESSON).read_text(encoding="utf-8")
    assert mine.read_text(encoding="utf-8") == answered, "make update changed the answer"
    fresh = f"--fresh exercises/{LESSON}"
    assert f"exercises/{LESSON} changed" in out and fresh in out, out
    assert git(learner, "status", "--porcelain", "--untracked-files=no") == "", out
