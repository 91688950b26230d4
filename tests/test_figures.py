"""Every figure a notebook stores says what it shows (issue 16: alt text on every figure).

A figure is shown with ``attnlib.plot.show(alt)``: its output carries the alt text in
``metadata["image/png"]["alt"]`` (the website writes it into ``<img alt>``) and as its
``text/plain`` (which nbval compares, so the sentence cannot drift from the notebook).
"""

import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = sorted(
    p for folder in ("notebooks", "solutions", "exercises") for p in (ROOT / folder).glob("*.ipynb")
)


def figures(path):
    """(cell index, output) for every stored image output of a notebook."""
    cells = json.loads(path.read_text())["cells"]
    return [
        (i, out)
        for i, cell in enumerate(cells)
        for out in cell.get("outputs", [])
        if any(kind.startswith("image/") for kind in out.get("data", {}))
    ]


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_every_stored_figure_has_alt_text(path):
    for i, out in figures(path):
        alt = out.get("metadata", {}).get("image/png", {}).get("alt", "")
        assert len(alt.split()) >= 8, f"cell {i}: a figure without alt text (use plot.show(alt))"
        assert "".join(out["data"]["text/plain"]) == f"[figure] {alt}", f"cell {i}"


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_no_figure_is_shown_without_alt_text(path):
    cells = json.loads(path.read_text())["cells"]
    for i, cell in enumerate(cells):
        if cell["cell_type"] == "code":
            assert "plt.show()" not in "".join(cell["source"]), f"cell {i}: use plot.show(alt)"


def test_the_lessons_have_figures_to_check():
    shown = sum(len(figures(p)) for p in NOTEBOOKS)
    assert shown >= 24, shown  # every lesson figure counted; a broken glob would find none
