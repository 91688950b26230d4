"""Opening a notebook in JupyterLab changes nothing (issue 19, item 2).

Each lesson and exercise is opened in JupyterLab (served like `make lab`,
autosave off), its kernel is left to start and settle, and the tab must not carry
JupyterLab's modified mark (``jp-mod-dirty``): a notebook stored in another form than
JupyterLab saves (e.g. ``language_info`` without the kernel's version, nbformat's
``"Python 3"`` kernelspec name) is marked modified as soon as its kernel starts, and
closing it asks to save. The form is written by tools/normalize.py (used by
tools/execute.py and tools/generate.py); tests/test_saved_form.py holds every tracked
notebook, solutions included, to it without a browser.

A second test saves one exercise through the page (Ctrl+S) into a scratch copy of the
course and finds the file byte for byte as stored.
"""

import shutil
import time
from pathlib import Path

import pytest

from .conftest import ROOT, serve_jupyter

NOTEBOOKS = sorted(
    str(p.relative_to(ROOT))
    for folder in ("notebooks", "exercises")
    for p in (ROOT / folder).glob("*.ipynb")
)
TIMEOUT = 90_000  # ms: a kernel start on a busy machine
SETTLE = 2.0  # s after the kernel is idle: metadata updates arrive by then
IDLE = ".jp-Notebook-ExecutionIndicator[data-status='idle']"
CURRENT_TAB = ".lm-TabBar-tab.jp-mod-current"


def shut_down_kernels(page, base):
    """Delete every session, so the next notebook starts its own kernel on a quiet server.

    Through the page's own cookies: the server wants its _xsrf cookie echoed in a header.
    """
    xsrf = [c["value"] for c in page.context.cookies() if c["name"] == "_xsrf"]
    headers = {"X-XSRFToken": xsrf[0]} if xsrf else {}
    for session in page.request.get(f"{base}/api/sessions").json():
        answer = page.request.delete(f"{base}/api/sessions/{session['id']}", headers=headers)
        assert answer.ok, f"could not shut down a kernel: {answer.status}"


def open_and_settle(browser, base, path):
    """Open ``path`` in a fresh page, wait for its kernel to be idle; return the page."""
    page = browser.new_page()
    page.goto(f"{base}/lab/tree/{path}?reset")  # ?reset: no tabs restored from before
    page.wait_for_selector(".jp-NotebookPanel .jp-Notebook", timeout=TIMEOUT)
    page.wait_for_selector(IDLE, timeout=TIMEOUT)
    time.sleep(SETTLE)
    return page


def is_dirty(page):
    return "jp-mod-dirty" in (page.locator(CURRENT_TAB).get_attribute("class") or "")


@pytest.mark.parametrize("path", NOTEBOOKS)
def test_opening_a_notebook_does_not_mark_it_modified(lab, browser, path):
    before = (ROOT / path).read_bytes()
    page = open_and_settle(browser, lab, path)
    try:
        title = page.locator(CURRENT_TAB).inner_text()
        assert Path(path).name in title
        assert not is_dirty(page), (
            f"{path} is marked modified right after opening: store it as JupyterLab saves "
            f"(`python tools/normalize.py {path}`, or tools/execute.py / tools/generate.py)"
        )
    finally:
        shut_down_kernels(page, lab)
        page.close()
    assert (ROOT / path).read_bytes() == before  # nothing was saved


@pytest.fixture(scope="module")
def scratch_lab(tmp_path_factory, artefacts):
    """JupyterLab on a scratch copy of the course, where a test may save."""
    root = tmp_path_factory.mktemp("course")
    for folder in ("exercises", "notebooks"):
        shutil.copytree(ROOT / folder, root / folder)
    from . import conftest

    saved_root, conftest.ROOT = conftest.ROOT, root
    try:
        gen = serve_jupyter("jupyterlab", "LabApp", "/lab", artefacts / "server-scratch.log")
        base = next(gen)
    finally:
        conftest.ROOT = saved_root
    yield base, root
    gen.close()


@pytest.mark.parametrize("path", ["exercises/05_softmax.ipynb", "notebooks/03_scoring.ipynb"])
def test_saving_an_opened_notebook_writes_the_same_bytes(scratch_lab, browser, path):
    base, root = scratch_lab
    before = (root / path).read_bytes()
    (root / path).write_bytes(before)
    page = open_and_settle(browser, base, path)
    try:
        stamp = (root / path).stat().st_mtime_ns
        page.keyboard.press("Control+s")
        deadline = time.monotonic() + 30
        while (root / path).stat().st_mtime_ns == stamp:  # wait for the save to land
            assert time.monotonic() < deadline, "Ctrl+S did not save within 30 s"
            time.sleep(0.2)
        time.sleep(0.5)
    finally:
        shut_down_kernels(page, base)
        page.close()
    assert (root / path).read_bytes() == before, f"JupyterLab rewrote {path} on save"
