"""Foundations before they are used (issue 16, item 7).

Lesson 08 counts variance and the saturation lesson measures the Jacobian by nudging; neither
may lean on loss, gradient or the chain rule, which lesson 18 introduces. Lesson 18 defines those words, each
on one number, before its backward pass uses them.
"""

import json
import re

import pytest

from tests.test_notebooks import ROOT


def _text(path):
    cells = json.loads(path.read_text())["cells"]
    return ["".join(c["source"]) for c in cells]


@pytest.mark.parametrize("folder", ["notebooks", "solutions", "exercises"])
def test_lesson_08_uses_no_word_that_lesson_18_introduces(folder):
    text = "\n".join(_text(ROOT / folder / "08_why_sqrt_dk.ipynb"))
    used = re.findall(r"\b(loss|gradients?|chain rule|backward)\b", text, flags=re.I)
    assert not used, f"{folder}/08_why_sqrt_dk.ipynb uses {sorted(set(used))}"


def _first_cells(cells, words):
    return {word: next((i for i, c in enumerate(cells) if word in c), len(cells)) for word in words}


def test_lesson_08_counts_the_variance_before_sympy_integrates():
    cells = _text(ROOT / "notebooks" / "08_why_sqrt_dk.ipynb")
    first = _first_cells(cells, ("**variance**", "**covariance**", "Normal("))
    assert first["**variance**"] < first["**covariance**"] < first["Normal("] < len(cells)


def test_saturation_nudges_the_jacobian_before_sympy_differentiates():
    cells = _text(ROOT / "notebooks" / "09_saturation.ipynb")
    first = _first_cells(cells, ("**Jacobian**", "sp.diff"))
    assert first["**Jacobian**"] < first["sp.diff"] < len(cells)  # nudged, then differentiated
    used = re.findall(r"\b(loss|gradients?|chain rule|backward)\b", "\n".join(cells), flags=re.I)
    assert not used, f"notebooks/09_saturation.ipynb uses {sorted(set(used))}"


def test_lesson_18_defines_its_words_before_the_backward_pass():
    cells = _text(ROOT / "notebooks" / "18_gradients.ipynb")
    for word in ("**loss**", "**gradient**", "**Finite differences**", "**chain rule**"):
        assert any(word in c for c in cells), f"lesson 18 does not define {word}"
    # the backward pass is the next lesson's, which starts from these words
    (backward,) = (ROOT / "notebooks").glob("*_attention_backward.ipynb")
    assert backward.name > "18_gradients.ipynb", backward.name
    assert not any(c.startswith("## The backward pass") for c in cells)
    assert any(c.startswith("## The backward pass") for c in _text(backward))


def test_lesson_18_shows_the_chain_rule_step_with_numbers_before_symbols():
    cells = _text(ROOT / "notebooks" / "18_gradients.ipynb")
    nudge = next(i for i, c in enumerate(cells) if "(G * dY).sum()" in c)  # numbers: nudge, compare
    rule = next(i for i, c in enumerate(cells) if "G$ held fixed" in c)  # the rule in symbols
    transpose = next(i for i, c in enumerate(cells) if "J.T @ G" in c)
    assert nudge < rule < transpose
    delta = next(i for i, c in enumerate(cells) if "\\delta_{ij}" in c)
    assert "is 1 when $i = j$ and 0 otherwise" in cells[delta]  # defined where it is first used
