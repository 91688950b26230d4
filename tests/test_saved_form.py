"""Every tracked notebook is stored as JupyterLab 4 saves it (tools/normalize.py).

The browser test (tests/browser/test_unmodified_on_open.py) shows that such a notebook
opens unmodified; this one keeps every commit in that form without a browser.
``language_info.version`` is the Python that ran the notebook, so it is not compared
with this machine's: a contributor on another Python still passes.
"""

import json
import sys
from pathlib import Path

import nbformat
import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from tools.normalize import jupyterlab_form, kernel_metadata, saved_text  # noqa: E402

TRACKED = sorted(
    p for folder in ("notebooks", "solutions", "exercises") for p in (ROOT / folder).glob("*.ipynb")
)


@pytest.mark.parametrize("path", TRACKED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_is_stored_as_jupyterlab_saves_it(path):
    text = path.read_text(encoding="utf-8")
    stored = json.loads(text)
    kernelspec, language_info = kernel_metadata()
    assert stored["metadata"]["kernelspec"] == kernelspec
    info = dict(stored["metadata"]["language_info"])
    assert set(info) == set(language_info), "language_info as the kernel reports it"
    assert {k: v for k, v in info.items() if k != "version"} == {
        k: v for k, v in language_info.items() if k != "version"
    }
    nb = nbformat.reads(text, as_version=4)
    expected = saved_text(jupyterlab_form(nb, language_info=info))
    assert text == expected, f"run `python tools/normalize.py {path.relative_to(ROOT)}`"


def test_the_form_is_what_a_jupyter_server_writes(tmp_path):
    """nbformat as the server writes it: indent 1, sorted keys, non-ASCII kept, final newline."""
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_markdown_cell("√d_k · é")]
    nb.cells[0].id = "a"
    text = saved_text(jupyterlab_form(nb))
    assert text.endswith("}\n") and not text.endswith("\n\n")
    assert '\n "cells": [\n  {\n' in text and "√d_k · é" in text
    assert json.loads(text)["nbformat_minor"] == 5
    written = tmp_path / "x.ipynb"
    nbformat.write(nbformat.reads(text, as_version=4), written)  # the server's own call
    assert written.read_text(encoding="utf-8") == text
