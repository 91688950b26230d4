"""Stored notebook outputs: hygiene, and every number the document prints.

nbval (run by `make test`) re-executes the notebooks and compares outputs; these
tests read the stored outputs themselves, so they also guard what a learner sees
before running anything.
"""

import json
import re
from pathlib import Path

import pytest

from attnlib.example import DOCUMENT, _fmt

ROOT = Path(__file__).resolve().parent.parent
LESSONS = sorted((ROOT / "notebooks").glob("*.ipynb"))
EXECUTED = LESSONS + sorted((ROOT / "solutions").glob("*.ipynb"))

BAD_TEXT = {
    r"np\.float(32|64)\(": "a bare np.float64(...) repr",
    r" at 0x[0-9a-fA-F]{6,}": "a memory address",
    r"/tmp/|/home/|/root/|/work/": "a machine path",
    r"(?<![\d.])-0\.0*(?!\d)": "a negative zero",
}


def load(path):
    return json.loads(path.read_text())


def output_text(out):
    if out["output_type"] == "stream":
        return "".join(out["text"])
    data = out.get("data", {})
    return "\n".join("".join(v) for k, v in data.items() if k.startswith("text/"))


def stored_text(paths):
    texts = []
    for path in paths:
        for cell in load(path)["cells"]:
            for out in cell.get("outputs", []):
                texts.append(output_text(out))
    return "\n".join(texts)


def test_there_are_lessons():
    names = [p.stem for p in LESSONS]
    assert names[:1] == ["00_start_here"], names
    assert all(re.match(r"^\d\d_[a-z0-9_]+$", n) for n in names), names


@pytest.mark.parametrize("path", EXECUTED, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_notebook_hygiene(path):
    nb = load(path)
    assert nb["metadata"]["kernelspec"]["name"] == "python3"
    assert "widgets" not in nb["metadata"], "saved widget state: re-run with `make notebooks`"
    code = [c for c in nb["cells"] if c["cell_type"] == "code"]
    assert code, "a lesson without code"
    counts = [c["execution_count"] for c in code]
    assert counts == list(range(1, len(code) + 1)), "run top to bottom in a fresh kernel"
    assert any(c["outputs"] for c in code), "outputs are not stored"
    for i, cell in enumerate(code, 1):
        for out in cell["outputs"]:
            assert out["output_type"] != "error", f"code cell {i} stores an error"
            assert out.get("name") != "stderr", f"code cell {i} stores stderr output"
            text = output_text(out)
            for pattern, what in BAD_TEXT.items():
                assert not re.search(pattern, text), f"code cell {i} stores {what}: {text[:200]!r}"


def document_rows():
    """Each row of each printed table: (table, row label, the values as printed)."""
    for name, doc in DOCUMENT.items():
        for label, row in zip(doc.rows, doc.values, strict=True):
            yield name, label, [_fmt(v, doc.decimals) for v in row]


def row_pattern(label, values):
    """A row laid out as attnlib.example.show prints it: the label, then the values."""
    cells = r"\s+".join(re.escape(v) for v in values)
    return re.compile(rf"^\s*{re.escape(label)}\s+{cells}\s*$", re.M)


def missing_rows(text):
    return [
        (name, label) for name, label, values in document_rows()
        if not row_pattern(label, values).search(text)
    ]  # fmt: skip


def test_every_number_the_document_prints_is_in_a_stored_lesson_output():
    assert missing_rows(stored_text(LESSONS)) == []


def _without_value(text, label, values, k):
    """The stored text with value k of this row deleted wherever the row is printed."""
    pattern = row_pattern(label, values)
    return pattern.sub(lambda m: m.group(0).replace(values[k], " ", 1), text)


@pytest.mark.parametrize(
    "name, label, values, k",
    [(n, lab, v, k) for n, lab, v in document_rows() for k in range(len(v))],
    ids=lambda x: str(x) if not isinstance(x, list) else "-",
)
def test_removing_any_one_value_is_noticed(name, label, values, k):
    text = stored_text(LESSONS)
    assert (name, label) not in missing_rows(text), "the row is not stored in the first place"
    assert (name, label) in missing_rows(_without_value(text, label, values, k))
