"""The README is for learners; teaching, the API and the measurements have their own pages.

The README reaches `make lab` in one screen from a clone line, stays under 3,000 words and
names only `make` targets that exist; the teaching page holds the grading guide; every shell
command in these pages runs as written in a fresh shell in the course folder (the course's
programs are `.venv/bin/...`: a fresh shell has no `attnlib` and may have no `python`).
"""

import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
PAGES = ["README.md", "docs/teaching.md", "docs/api.md", "benchmarks/README.md"]
# words a fresh shell does not have, or that run the wrong Python, at the start of a command
NOT_ON_A_FRESH_PATH = {"attnlib", "python", "pip", "jupyter", "pytest", "ruff"}


def shell_commands(text):
    """[(block index, command words)] for every command in the page's ```bash blocks.

    Continuation lines are joined, comments dropped, `a && b` split, `VAR=x` prefixes skipped.
    """
    found = []
    for number, block in enumerate(re.findall(r"```bash\n(.*?)```", text, re.S)):
        for line in block.replace("\\\n", " ").splitlines():
            words, command = shlex.split(line, comments=True) + ["&&"], []
            for word in words:
                if word != "&&":
                    command.append(word)
                    continue
                while command and re.fullmatch(r"[A-Z_]+=\S*", command[0]):
                    command = command[1:]
                if command:
                    found.append((number, command))
                command = []
    return found


def test_shell_commands_finds_what_a_page_writes():
    text = "```bash\nLC_ALL=C attnlib check \\\n  x/  # grade\nmake lab && python y.py\n```\n"
    assert shell_commands(text) == [
        (0, ["attnlib", "check", "x/"]),
        (0, ["make", "lab"]),
        (0, ["python", "y.py"]),
    ]


@pytest.mark.parametrize("page", PAGES)
def test_every_command_runs_as_a_fresh_shell_runs_it(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    activated = set()  # blocks that activate an environment first (the conda route)
    bad = []
    for number, words in shell_commands(text):
        if words[:2] == ["conda", "activate"]:
            activated.add(number)
        elif words[0] in NOT_ON_A_FRESH_PATH and number not in activated:
            bad.append(" ".join(words))
    assert not bad, f"{page}: commands a fresh shell cannot run (use .venv/bin/...): {bad}"


@pytest.mark.parametrize("page", PAGES)
def test_every_make_target_named_exists(page):
    text = (ROOT / page).read_text(encoding="utf-8")
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    named = set(re.findall(r"`make ([a-z][\w.-]*)", text))
    named |= {w[1] for _, w in shell_commands(text) if w[0] == "make" and len(w) > 1}
    targets = set(re.findall(r"^([a-z][\w-]*):", makefile, re.M)) | {".venv/.installed"}
    assert named, f"{page} names no make target: the check saw nothing"
    assert named <= targets, f"{page} names make targets the Makefile lacks: {named - targets}"


def test_readme_reaches_make_lab_from_a_clone_line_in_one_screen():
    lines = README.splitlines()
    clone = next(i for i, line in enumerate(lines) if line.startswith("git clone "))
    lab = next(i for i, line in enumerate(lines) if line.strip() == "make lab")
    assert clone < lab < 40, f"clone on line {clone + 1}, `make lab` on line {lab + 1}"
    folder = lines[clone].split()[2].rstrip("/").rsplit("/", 1)[1]
    assert f"cd {folder}" in lines[clone:lab], "no `cd` into the cloned folder before make lab"


def test_readme_is_for_learners_and_short():
    words = len(README.split())
    assert words < 3000, f"README.md has {words} words"
    for learner in ("my-work/", "make progress", "make update", "00_start_here.ipynb"):
        assert learner in README.split("## Course map")[0], f"the Quickstart lacks {learner}"
    for elsewhere in ("--shard", "tmpfs", "Gradescope's", "sbatch", "gradebook-layout"):
        assert elsewhere not in README, f"README still holds teaching detail: {elsewhere}"


def test_teaching_page_holds_the_grading_guide():
    text = (ROOT / "docs/teaching.md").read_text(encoding="utf-8")
    headings = re.findall(r"^#+ (.*)$", text, re.M)
    for wanted in ("Grading a class", "JupyterHub", "Gradescope", "larger than one machine"):
        assert any(wanted in h for h in headings), f"docs/teaching.md has no {wanted!r} section"
    for detail in (
        "bubblewrap",
        "--gradebook",
        "canvas",
        "moodle",
        "--shard",
        "sbatch",
        "grade-job.yaml",
        "--feedback",
        "--similarity",
        "--written",
    ):
        assert detail in text, f"docs/teaching.md no longer covers {detail}"
    for path in re.findall(r"`(deploy/[^`\s]+)`", text):
        assert (ROOT / path).exists(), f"docs/teaching.md names {path}, which does not exist"


def test_the_dtype_rules_are_written_once():
    pages = {p: (ROOT / p).read_text(encoding="utf-8") for p in PAGES}
    where = [p for p, text in pages.items() for _ in re.finditer(r"float16 in, float16 out", text)]
    assert where == ["docs/api.md"], where
