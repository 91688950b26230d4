"""How long each lesson is: words of prose and an honest reading time.

    python tools/lesson_length.py                       # every lesson in notebooks/
    python tools/lesson_length.py notebooks/05_softmax.ipynb
    python tools/lesson_length.py --write               # also update the minutes columns

The rule (shared by the three lesson engineers, issue 11):

- **Prose words** are counted in markdown cells only. Display math (``$$...$$``), inline
  math (``$...$``), code spans (```...```), fenced code blocks and HTML comments are removed
  first; what is left is split on whitespace, and a word is a piece holding at least one
  letter or digit (so table rules such as ``|---|`` and bullets do not count).
- **Minutes** = prose words / 100 (careful reading of text full of math runs at about 100
  words a minute, half the pace of ordinary prose) + 1 minute per code cell (read the
  code, run it, read its output), rounded to the nearest minute. 1,100 words and 19 code
  cells make 30 minutes. The Colab install cell (id ``colab-install``, written by
  ``tools/colab_cell.py``) is setup, not lesson time, and is not counted.
- A lesson should hold at most ``LIMIT`` = 1,100 words of prose, about 30 minutes;
  ``tests/test_lesson_lengths.py`` fails above ``HARD_LIMIT`` = 1,150.

The course maps show a reader's measured minutes instead (``tools/reader_times.py``: the
lesson, then its exercises); the rule's estimate stands in only for a lesson not yet timed.
``--write`` puts them into the ``minutes`` column of the course map in README.md (between
the ``<!-- course-map -->`` markers) and in lesson 00's course map, so both stay what this
tool gives (the tests compare them).
"""

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))
from reader_times import MEASURED, ONE_SITTING  # noqa: E402, F401 (a sibling module)

LESSONS = ROOT / "notebooks"
README = ROOT / "README.md"
START = LESSONS / "00_start_here.ipynb"

WORDS_PER_MINUTE = 100
MINUTES_PER_CODE_CELL = 1.0
LIMIT = 1100
HARD_LIMIT = 1150

_NOT_PROSE = [
    re.compile(r"```.*?```", re.S),  # fenced code blocks
    re.compile(r"<!--.*?-->", re.S),  # HTML comments
    re.compile(r"\$\$.*?\$\$", re.S),  # display math
    re.compile(r"(?<!\\)\$.+?(?<!\\)\$", re.S),  # inline math
    re.compile(r"`[^`]*`"),  # code spans
]
_WORD = re.compile(r"[A-Za-z0-9]")


def prose_words(markdown):
    """Number of prose words in one markdown text, by the rule in the module docstring.

    >>> prose_words("Divide $S$ by $\\\\sqrt{d_k}$ with `scale_scores`, then | --- | softmax.")
    5
    """
    for pattern in _NOT_PROSE:
        markdown = pattern.sub(" ", markdown)
    return sum(1 for piece in markdown.split() if _WORD.search(piece))


def measure(path):
    """(prose words, code cells, minutes) of one notebook."""
    cells = json.loads(Path(path).read_text())["cells"]
    words = sum(prose_words("".join(c["source"])) for c in cells if c["cell_type"] == "markdown")
    # the Colab install cell (tools/colab_cell.py) is setup, not lesson time
    code = sum(1 for c in cells if c["cell_type"] == "code" and c.get("id") != "colab-install")
    minutes = round(words / WORDS_PER_MINUTE + MINUTES_PER_CODE_CELL * code)
    return words, code, minutes


def lessons(paths=()):
    found = [Path(p) for p in paths] or sorted(LESSONS.glob("[0-9][0-9]_*.ipynb"))
    return {p.stem: measure(p) for p in found}


def map_minutes(name, rule_minutes):
    """The course map's minutes cell of one lesson: the reader's measured minutes
    ("lesson + exercises", tools/reader_times.py), else the word-count estimate.

    >>> map_minutes("03_scoring", 26), map_minutes("00_start_here", 14), map_minutes("98_x", 20)
    ('30 + 35', '12', '20')
    """
    timed = MEASURED.get(name.split("_", 1)[1])
    if timed is None:
        return str(rule_minutes)
    lesson, exercises = timed
    return f"{lesson} + {exercises}" if exercises else str(lesson)


def _with_minutes(line, minutes_by_lesson, pick):
    """A markdown table row with its minutes cell (the last one) set, if it names a lesson."""
    lesson = pick(line)
    if lesson not in minutes_by_lesson:
        return line
    cells = line.rstrip("\n").split("|")
    cells[-2] = f" {minutes_by_lesson[lesson]} "
    return "|".join(cells)


def write_readme(minutes_by_lesson, text):
    """README text with the course map's last column (minutes) set from the tool."""
    head, rest = text.split("<!-- course-map -->", 1)
    table, tail = rest.split("<!-- /course-map -->", 1)

    def pick(line):
        first = line.split("|")[1] if line.startswith("|") else ""
        m = re.search(r"\(notebooks/(\d\d_[a-z0-9_]+)\.ipynb\)", first)
        return m.group(1) if m else None

    rows = [_with_minutes(line, minutes_by_lesson, pick) for line in table.split("\n")]
    return head + "<!-- course-map -->" + "\n".join(rows) + "<!-- /course-map -->" + tail


def write_start(minutes_by_lesson, source):
    """Lesson 00's course-map cell with its last column (minutes) set from the tool."""

    def pick(line):
        m = re.match(r"\|\s*`(\d\d_[a-z0-9_]+)`", line)
        return m.group(1) if m else None

    return "\n".join(_with_minutes(line, minutes_by_lesson, pick) for line in source.split("\n"))


def write(table):
    """Put each lesson's minutes into README.md's and lesson 00's course maps."""
    minutes = {name: map_minutes(name, m) for name, (_, _, m) in table.items()}
    README.write_text(write_readme(minutes, README.read_text()))
    nb = json.loads(START.read_text())
    for cell in nb["cells"]:
        text = "".join(cell["source"])
        if cell["cell_type"] == "markdown" and text.startswith("## Course map"):
            cell["source"] = write_start(minutes, text).splitlines(keepends=True)
    # the layout nbformat writes, so `attnlib execute` later changes nothing here
    START.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="*", help="lesson notebooks (default: all of notebooks/)")
    parser.add_argument("--write", action="store_true", help="update the minutes columns")
    args = parser.parse_args(argv)
    table = lessons(args.paths)
    print(f"{'lesson':<36}{'prose words':>12}{'code cells':>12}{'minutes':>9}{'timed':>10}")
    for name, (words, code, minutes) in table.items():
        flag = "  over the limit" if words > LIMIT else ""
        timed = map_minutes(name, "-") if name.split("_", 1)[1] in MEASURED else "-"
        print(f"{name:<36}{words:>12}{code:>12}{minutes:>9}{timed:>10}{flag}")
    print(
        f"rule: minutes = words / {WORDS_PER_MINUTE} + {MINUTES_PER_CODE_CELL} per code cell;"
        f" limit {LIMIT} words"
    )
    if args.write:
        # twice: the minutes written into lesson 00 are words of lesson 00 themselves
        for _ in range(2):
            write(lessons(args.paths))
        print("wrote the minutes into README.md and", START.relative_to(ROOT))
    return 0 if all(w <= HARD_LIMIT for w, _, _ in table.values()) else 1


if __name__ == "__main__":
    sys.exit(main())
