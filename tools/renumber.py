"""Give every lesson the number of its place in ``tools/course_order.py`` and rewrite references.

Usage::

    python tools/renumber.py            # rename and rewrite, print what changed
    python tools/renumber.py --check    # change nothing; exit 1 if anything would change

A lesson is found by its files: ``notebooks/NN_stem.ipynb`` (and the same name in ``solutions/``
and ``exercises/``), with its checker module ``attnlib/checkers/lesson_NN.py``. Each lesson that
exists gets the number of its place among the existing stems of :data:`course_order.ORDER`, so
missing stems are skipped and the numbers stay compact. Everything is rewritten through ONE
mapping, old number -> new number, applied in a single pass (never one replacement after
another, which would turn 10 -> 12 -> 16):

- file names ``NN_stem`` anywhere (links, Colab and Binder URLs, ``lesson="NN_stem"`` fields,
  the registry's list);
- checker modules ``lesson_NN`` (imports, test names);
- prose: "lesson 11", "Lessons 13 to 18", "lessons 09, 10 and 12", "exercise 09", and bare
  ranges "13-18" or "01 to 07" (a new lesson landing inside a range widens it); a range whose
  lessons are no longer next to each other is left as it was and printed, to be rewritten by
  hand;
- link text ``[NN ...](notebooks/NN_stem.ipynb)`` and ``[NN](exercises/NN_stem.ipynb)``, a
  comment label ``# NN`` or ``# NN:`` on a line of its own, and each lesson notebook's title
  ``# NN · ...`` (set to its own number);
- rows of a course map (table lines) and items of a list of stems (lines holding only
  ``"NN_stem",``) are put in the new order.

The mapping comes from the files as they are, so a second run finds every lesson at its place
and changes nothing. Two lessons with the same number are refused: give a new lesson an unused
number (say 90) before running; "lesson 90" in its text or its neighbours' then becomes its
place. Left by hand: prose that says "next" or "later" without a number, a new lesson's row in
README.md's and lesson 00's course maps, then ``tools/lesson_length.py --write``,
``tools/generate.py`` and ``tools/execute.py`` on the notebooks whose code changed.
"""

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LESSON_DIRS = ("notebooks", "solutions", "exercises")
CHECKERS = Path("attnlib") / "checkers"
# the tool, its order and its test name lessons on purpose: never rewritten
SKIP = {"tools/renumber.py", "tools/course_order.py", "tests/test_renumber.py"}
TEXT_SUFFIXES = {".py", ".ipynb", ".md", ".txt", ".cfg", ".toml", ".yml", ".yaml", ".html",
                 ".css", ".js", ".json", ".rst", ".in", ""}  # fmt: skip

NUMBERED = re.compile(r"^(\d\d)_([a-z][a-z0-9_]*)\.ipynb$")


class RenumberError(ValueError):
    """The files do not allow a renumbering (two lessons share a number, an unknown stem)."""


def find_lessons(root):
    """The lessons on disk: stem -> current number (two digits, as a string).

    Parameters
    ----------
    root : Path
        The repository root.

    Returns
    -------
    dict
        ``{"scoring": "03", ...}`` from the file names in notebooks/, solutions/, exercises/.
    """
    found = {}
    for folder in LESSON_DIRS:
        for path in sorted((root / folder).glob("*.ipynb")):
            match = NUMBERED.match(path.name)
            if not match:
                continue
            number, stem = match.groups()
            if found.setdefault(stem, number) != number:
                raise RenumberError(
                    f"renumber: lesson {stem!r} has number {found[stem]} in one folder and "
                    f"{number} in {folder}/; give it one number everywhere first."
                )
    by_number = {}
    for stem, number in found.items():
        by_number.setdefault(number, []).append(stem)
    clashes = {n: stems for n, stems in by_number.items() if len(stems) > 1}
    if clashes:
        listed = "; ".join(f"{n}: {', '.join(sorted(s))}" for n, s in sorted(clashes.items()))
        raise RenumberError(
            f"renumber: two lessons share a number ({listed}). Save a new lesson under a number "
            "no other lesson uses (say 90) and run again."
        )
    return found


def plan(found, order):
    """Old number -> new number for every lesson on disk, from its place in ``order``.

    Parameters
    ----------
    found : dict
        stem -> current number, as :func:`find_lessons` returns.
    order : sequence of str
        The course order (stems); stems with no files are skipped.

    Returns
    -------
    dict
        ``{"13": "10", ...}``, one entry per lesson (unchanged ones map to themselves).

    Examples
    --------
    >>> plan({"a": "00", "b": "07", "c": "03"}, ["a", "gone", "c", "b"])
    {'00': '00', '03': '01', '07': '02'}
    """
    unknown = sorted(set(found) - set(order))
    if unknown:
        raise RenumberError(
            f"renumber: {', '.join(unknown)} not in tools/course_order.py's ORDER; put each "
            "stem where a learner meets it."
        )
    present = [stem for stem in order if stem in found]
    if len(present) > 100:
        raise RenumberError(f"renumber: {len(present)} lessons do not fit in two digits.")
    return {found[stem]: f"{place:02d}" for place, stem in sorted(
        ((p, s) for p, s in enumerate(present)), key=lambda ps: found[ps[1]])}  # fmt: skip


class Rewriter:
    """One pass of every rule over a text, through the mapping old number -> new number."""

    def __init__(self, found, mapping):
        self.mapping = mapping
        self.by_stem = {stem: mapping[number] for stem, number in found.items()}
        self.warnings = []
        self.where = ""
        stems = "|".join(sorted(map(re.escape, found), key=len, reverse=True))
        numbers = "|".join(sorted(mapping))
        num = rf"(?:{numbers})"
        tail = r"(?:\.\d+)?(?:\s*\([^()\n]{0,60}\))?"  # "03.2", "17 (precision)"
        sep = r"(?:,\s+and\s+|,\s*|\s+and\s+|\s+or\s+|\s+to\s+|\s+through\s+|\s*[-–]\s*)"
        self.pattern = re.compile(
            "|".join(
                (
                    rf"(?P<file>(?<![\w.])(?P<fnum>\d\d)_(?P<stem>{stems})(?![a-z0-9_]))",
                    rf"(?P<module>(?<=lesson_)(?P<mnum>{num})(?!\d))",
                    rf"(?P<prose>(?<![\w])(?:[Ll]essons?|[Ee]xercises?|[Nn]otebooks?)\s+"
                    rf"{num}{tail}(?:{sep}{num}{tail})*(?![\d.]\d|\w))",
                    rf"(?P<link>(?<=\[)(?P<lnum>{num})(?=(?:\]| [^\]\n]*\])\((?:\.\./)?"
                    r"(?:notebooks|exercises|solutions)/(?P=lnum)_))",
                    rf"(?P<label>(?<=# )(?P<cnum>{num})(?m:(?=:|[ \t]*$)))",
                    rf"(?P<range>(?<![\w.:/\-–])(?P<ra>{num})(?P<rsep>\s*[-–]\s*|\s+to\s+)"
                    rf"(?P<rb>{num})(?![\w.:/\-–]))",
                )
            )
        )
        self.number = re.compile(rf"(?<![\d.]){num}(?!\d)")

    def _range(self, a, separator, b, text):
        if int(a) >= int(b):
            return None
        new = sorted(int(self.mapping[f"{n:02d}"]) for n in range(int(a), int(b) + 1)
                     if f"{n:02d}" in self.mapping)  # fmt: skip
        # lessons that land inside the new span from outside the old range break it, unless
        # they are new (saved under a number past the course's end, like 90)
        inside = {o for o, n in self.mapping.items() if new[0] <= int(n) <= new[-1]}
        strays = [
            o for o in inside if not int(a) <= int(o) <= int(b) and int(o) < len(self.mapping)
        ]
        if strays or len(new) != int(b) - int(a) + 1:
            self.warnings.append(
                f"{self.where}: range {text!r}: its lessons are no longer next to each other"
            )
            return text
        return f"{new[0]:02d}{separator}{new[-1]:02d}"

    def _prose(self, text):
        # a parenthesis after a number ("lesson 17 (float16 has 10 bits)") is left as it is
        parts = re.split(r"(\([^()\n]*\))", text)
        return "".join(p if p.startswith("(") else self._prose_part(p) for p in parts)

    def _prose_part(self, text):
        # ranges inside a list first ("lessons 01 to 03 and 05"), then single numbers
        out, last = [], 0
        pieces = re.finditer(rf"({self.number.pattern})(\s*[-–]\s*|\s+to\s+|\s+through\s+)"
                             rf"({self.number.pattern})|{self.number.pattern}", text)  # fmt: skip
        for piece in pieces:
            out.append(text[last : piece.start()])
            if piece.group(2) is not None:
                done = self._range(piece.group(1), piece.group(2), piece.group(3), piece.group(0))
                out.append(done if done is not None else self._singles(piece.group(0)))
            else:
                out.append(self.mapping[piece.group(0)])
            last = piece.end()
        out.append(text[last:])
        return "".join(out)

    def _singles(self, text):
        return self.number.sub(lambda m: self.mapping[m.group(0)], text)

    def _one(self, match):
        if match.group("file"):
            return f"{self.by_stem[match.group('stem')]}_{match.group('stem')}"
        if match.group("module"):
            return self.mapping[match.group("mnum")]
        if match.group("prose"):
            return self._prose(match.group("prose"))
        if match.group("link"):
            return self.mapping[match.group("lnum")]
        if match.group("label"):
            return self.mapping[match.group("cnum")]
        text = match.group("range")
        done = self._range(match.group("ra"), match.group("rsep"), match.group("rb"), text)
        return text if done is None else done

    def text(self, text):
        """``text`` with every reference renumbered and course-map rows put in order."""
        return self.reorder(self.pattern.sub(self._one, text))

    def reorder(self, text):
        """Sort runs of table rows or stem-list lines that each name a lesson, by number."""
        lines = text.split("\n")
        key = re.compile(r"(?<![\w.])(\d\d)_(?:" + "|".join(map(re.escape, self.by_stem)) + r")")
        row = re.compile(r'^\s*(\||"\d\d_[a-z0-9_]+",\s*$)')
        i = 0
        while i < len(lines):
            j = i
            while j < len(lines) and row.match(lines[j]) and key.search(lines[j]):
                j += 1
            if j - i > 1:
                lines[i:j] = sorted(lines[i:j], key=lambda line: key.search(line).group(1))
            i = max(j, i + 1)
        return "\n".join(lines)


TITLE = re.compile(r"^(#\s+)\d\d(?=\s+·)", re.M)


def rewrite_notebook(text, rewriter, number=None):
    """A notebook's JSON text with each cell's source and text outputs rewritten.

    ``number`` is the lesson's own new number, for a lesson notebook: its title heading
    (``# 10 · Multi-head ...``) is set to it.
    """
    nb = json.loads(text)
    for cell in nb.get("cells", []):
        source = rewriter.text("".join(cell["source"]))
        if number is not None and cell.get("cell_type") == "markdown":
            source = TITLE.sub(lambda m: m.group(1) + number, source)
        cell["source"] = _lines(source)
        for output in cell.get("outputs", []):
            if "text" in output:
                output["text"] = _lines(rewriter.text("".join(output["text"])))
            for mime, value in output.get("data", {}).items():
                if mime.startswith("text/") and mime != "text/html" or mime == "text/html":
                    joined = "".join(value) if isinstance(value, list) else value
                    new = rewriter.text(joined)
                    output["data"][mime] = _lines(new) if isinstance(value, list) else new
    return json.dumps(nb, indent=1, ensure_ascii=False) + "\n"


def _lines(text):
    return text.splitlines(keepends=True)


def tracked_files(root):
    """Every text file git knows of (tracked or new, not ignored), as paths relative to root."""
    listing = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=root, capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    return [Path(p) for p in sorted(set(listing.split("\0"))) if p and (root / p).is_file()]


def renumber(root=ROOT, order=None, dry_run=False, out=print):
    """Rename the lessons' files to their places in ``order`` and rewrite every reference.

    Parameters
    ----------
    root : Path
        The repository root (a git work tree).
    order : sequence of str, optional
        The course order; :data:`tools.course_order.ORDER` by default.
    dry_run : bool
        Change nothing; only report.

    Returns
    -------
    list of str
        What changed (or would change): renames, then rewritten files.
    """
    if order is None:
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from course_order import ORDER as order
    root = Path(root)
    found = find_lessons(root)
    mapping = plan(found, order)
    rewriter = Rewriter(found, mapping)
    changes = []
    for path in tracked_files(root):
        if path.as_posix() in SKIP or path.suffix not in TEXT_SUFFIXES:
            continue
        try:
            text = (root / path).read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        rewriter.where = path.as_posix()
        if path.suffix == ".ipynb":
            own = NUMBERED.match(path.name) if path.parts[0] in LESSON_DIRS else None
            number = rewriter.by_stem.get(own.group(2)) if own else None
            new = rewrite_notebook(text, rewriter, number)
        else:
            new = rewriter.text(text)
        if new != text:
            changes.append(f"rewrote {path}")
            if not dry_run:
                (root / path).write_text(new, encoding="utf-8")
    moves = []
    for stem, number in found.items():
        new = mapping[number]
        if new == number:
            continue
        for folder in LESSON_DIRS:
            moves.append(
                (Path(folder) / f"{number}_{stem}.ipynb", Path(folder) / f"{new}_{stem}.ipynb")
            )
        moves.append((CHECKERS / f"lesson_{number}.py", CHECKERS / f"lesson_{new}.py"))
    moves = [(a, b) for a, b in moves if (root / a).exists()]
    for a, b in moves:
        changes.append(f"renamed {a} -> {b}")
    if not dry_run:
        # through temporary names, so 10 -> 12 never lands on a 12 that has not moved yet
        for a, b in moves:
            _git_mv(root, a, a.with_name(f"renumber-tmp-{b.name}"))
        for a, b in moves:
            _git_mv(root, a.with_name(f"renumber-tmp-{b.name}"), b)
    for line in dict.fromkeys(rewriter.warnings):
        changes.append(f"check by hand: {line}")
    for line in changes:
        out(line)
    return changes


def _git_mv(root, source, target):
    tracked = subprocess.run(["git", "ls-files", "--error-unmatch", str(source)], cwd=root,
                             capture_output=True).returncode == 0  # fmt: skip
    if tracked:
        subprocess.run(["git", "mv", str(source), str(target)], cwd=root, check=True)
    else:
        (root / source).rename(root / target)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="change nothing; exit 1 if needed")
    parser.add_argument("--root", type=Path, default=ROOT)
    args = parser.parse_args(argv)
    try:
        changes = renumber(args.root, dry_run=args.check)
    except RenumberError as error:
        print(error, file=sys.stderr)
        return 2
    if not changes:
        print("renumber: every lesson is at its place; nothing to change.")
    return 1 if args.check and changes else 0


if __name__ == "__main__":
    sys.exit(main())
