"""`make update` and the one place to answer: `tools/workspace.py --update/--adopt/--fresh`.

A small course (two lessons, their exercises and solutions, the tools) is committed to a bare
repository that plays the course's origin; a learner clones it, makes `my-work/`, answers,
runs a lesson (its outputs change), types answers into a blank template and edits a lesson's
text. Upstream then changes lesson 03 and its exercise. `--update` must complete: the pull
lands, every tracked file is as committed, the learner's answers and notes survive, the
changed exercise is listed with the command that puts a fresh copy beside the learner's own.
"""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tools.generate import NOTE_START, TEMPLATE_SUFFIX  # noqa: E402
from tools.workspace import COMMAND, FRESH, own_copy_text  # noqa: E402

LESSONS = ("03_scoring.ipynb", "04_scaling.ipynb")


def git(cwd, *args):
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def workspace(cwd, *args):
    return subprocess.run(
        [sys.executable, "tools/workspace.py", *args], cwd=cwd, capture_output=True, text=True
    )


def edit(path, change):
    nb = json.loads(path.read_text(encoding="utf-8"))
    change(nb)
    path.write_text(json.dumps(nb, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


def source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]


def answer_cell(nb):
    """The index of the first code cell that holds a stub (`...`) to answer."""
    return next(
        i for i, c in enumerate(nb["cells"]) if c["cell_type"] == "code" and "..." in source(c)
    )


def answered(nb, words="# my own answer"):
    i = answer_cell(nb)
    nb["cells"][i]["source"] = words + "\n" + source(nb["cells"][i])


@pytest.fixture
def course(tmp_path):
    """(origin bare repository, upstream maintainer's clone, learner's clone)."""
    seed = tmp_path / "seed"
    for folder in ("notebooks", "exercises", "solutions", "tools"):
        (seed / folder).mkdir(parents=True)
    for name in LESSONS:
        for folder in ("notebooks", "exercises", "solutions"):
            shutil.copy(ROOT / folder / name, seed / folder / name)
    for tool in ("workspace.py", "generate.py", "normalize.py", "__init__.py"):
        shutil.copy(ROOT / "tools" / tool, seed / "tools" / tool)
    (seed / ".gitignore").write_text("my-work/\n__pycache__/\n")
    git(seed, "init", "-q", "-b", "main")
    git(seed, "-c", "user.name=c", "-c", "user.email=c@x", "add", "-A")
    git(seed, "-c", "user.name=c", "-c", "user.email=c@x", "commit", "-q", "-m", "course")
    origin = tmp_path / "origin.git"
    git(tmp_path, "clone", "-q", "--bare", str(seed), str(origin))
    upstream, learner = tmp_path / "upstream", tmp_path / "learner"
    git(tmp_path, "clone", "-q", str(origin), str(upstream))
    git(tmp_path, "clone", "-q", str(origin), str(learner))
    assert workspace(learner).returncode == 0
    return origin, upstream, learner


def push_upstream_change(upstream):
    """A maintainer rewords lesson 03's exercise and changes lesson 03; pushes it."""

    def reword(nb):
        nb["cells"][1]["source"] = source(nb["cells"][1]) + "\n\nReworded upstream."

    edit(upstream / "exercises" / "03_scoring.ipynb", reword)
    edit(upstream / "notebooks" / "03_scoring.ipynb", reword)
    who = ["-c", "user.name=m", "-c", "user.email=m@x"]
    git(upstream, *who, "commit", "-q", "-am", "reword lesson 03 and its exercise")
    git(upstream, "push", "-q", "origin", "main")


def test_update_puts_back_pulls_keeps_my_work_and_lists_the_changed_exercise(course):
    origin, upstream, learner = course
    mine = learner / "my-work" / "03_scoring.ipynb"
    edit(mine, answered)
    my_answer = mine.read_text(encoding="utf-8")

    def ran(nb):  # what running a lesson saves: new outputs, a new widget id, metadata
        for cell in nb["cells"]:
            if cell["cell_type"] == "code":
                cell["execution_count"] = 99
                cell["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "x\n"}]
        nb["metadata"]["widgets"] = {"state": {"model-id-1234": {}}}

    edit(learner / "notebooks" / "03_scoring.ipynb", ran)
    edit(learner / "exercises" / "04_scaling.ipynb", lambda nb: answered(nb, "# typed here"))
    edit(learner / "notebooks" / "04_scaling.ipynb", lambda nb: answered(nb, "# my note"))
    push_upstream_change(upstream)

    done = workspace(learner, "--update")
    out = done.stdout + done.stderr
    assert done.returncode == 0, out
    # the pull landed and every tracked file is as committed: the next update cannot block
    assert git(learner, "rev-parse", "HEAD") == git(origin, "rev-parse", "main"), out
    assert git(learner, "status", "--porcelain", "--untracked-files=no") == "", out
    assert "Reworded upstream." in (learner / "exercises" / "03_scoring.ipynb").read_text()
    # the learner's answer is intact; the changed exercise is listed with the fresh command
    assert mine.read_text(encoding="utf-8") == my_answer
    assert f"{COMMAND} --fresh exercises/03_scoring.ipynb" in out, out
    assert "exercises/04_scaling.ipynb changed" not in out
    # answers typed into the template moved into the (unanswered) copy; notes kept aside
    adopted = (learner / "my-work" / "04_scaling.ipynb").read_text(encoding="utf-8")
    assert "# typed here" in adopted and NOTE_START not in adopted
    kept = (learner / "my-work" / "edited" / "notebooks" / "04_scaling.ipynb").read_text()
    assert "# my note" in kept

    # the command it printed puts the new version beside the learner's, never over it
    done = subprocess.run(
        [sys.executable, "tools/workspace.py", "--fresh", "exercises/03_scoring.ipynb"],
        cwd=learner,
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    new = learner / "my-work" / FRESH / "03_scoring.ipynb"
    assert "Reworded upstream." in new.read_text() and mine.read_text() == my_answer
    assert "](../../exercises/03_scoring.ipynb)" in new.read_text()  # links one level down
    assert workspace(learner, "--fresh", "exercises/03_scoring.ipynb").returncode == 0
    edit(new, lambda nb: answered(nb, "# started in the fresh copy"))
    again = workspace(learner, "--fresh", "exercises/03_scoring.ipynb")
    assert again.returncode == 1 and "rename it" in again.stdout
    assert "# started in the fresh copy" in new.read_text()


def test_adopt_never_overwrites_answers_in_my_work(course):
    _, _, learner = course
    mine = learner / "my-work" / "03_scoring.ipynb"
    edit(mine, lambda nb: answered(nb, "# answered in my-work"))
    template = learner / "exercises" / "03_scoring.ipynb"
    edit(template, lambda nb: answered(nb, "# answered in the template"))
    done = workspace(learner, "--adopt", "exercises/03_scoring.ipynb")
    assert done.returncode == 0, done.stderr
    assert "# answered in my-work" in mine.read_text()
    aside = learner / "my-work" / "from-exercises" / "03_scoring.ipynb"
    assert "# answered in the template" in aside.read_text(), done.stdout
    assert str(aside.relative_to(learner)) in done.stdout
    assert git(learner, "status", "--porcelain", "--untracked-files=no") == ""
    # a second time: a free name, never the first file
    edit(template, lambda nb: answered(nb, "# again"))
    assert workspace(learner, "--adopt", "exercises/03_scoring.ipynb").returncode == 0
    assert "# answered in the template" in aside.read_text()
    assert "# again" in (aside.parent / "03_scoring-2.ipynb").read_text()


def test_the_learners_copy_says_it_is_theirs_and_the_template_says_it_is_blank():
    for path in sorted((ROOT / "exercises").glob("*.ipynb")):
        nb = json.loads(path.read_text(encoding="utf-8"))
        title = next(source(c) for c in nb["cells"] if c["cell_type"] == "markdown")
        first, _, rest = title.partition("\n\n")
        assert first.startswith("# ") and first.endswith(TEMPLATE_SUFFIX), path.name
        assert rest.startswith(NOTE_START) and "generated by `tools/generate.py`" in rest
        assert f"](../my-work/{path.name})" in rest.split("\n\n")[0]
        assert "make progress" in title and "attnlib check exercises/" not in title, path.name
        own = json.loads(own_copy_text(path))
        own_title = next(source(c) for c in own["cells"] if c["cell_type"] == "markdown")
        assert own_title.split("\n")[0].endswith("(your copy)") and NOTE_START not in own_title


def test_progress_names_answers_typed_into_a_template_with_the_command_that_moves_them(
    tmp_path, monkeypatch, capsys
):
    from attnlib import cli

    (tmp_path / "exercises").mkdir()
    (tmp_path / "my-work").mkdir()
    (tmp_path / "tools").mkdir()
    (tmp_path / "tools" / "workspace.py").write_text("")
    for name in LESSONS:
        shutil.copy(ROOT / "exercises" / name, tmp_path / "exercises" / name)
    monkeypatch.chdir(tmp_path)
    assert cli.typed_templates() == []  # as generated: nothing to say
    cli.print_typed_templates()
    assert capsys.readouterr().out == ""

    def ran(nb):  # outputs and metadata are not answers
        i = answer_cell(nb)
        nb["cells"][i]["outputs"] = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
        nb["cells"][i]["execution_count"] = 7
        nb["metadata"]["widgets"] = {"state": {}}

    edit(tmp_path / "exercises" / "04_scaling.ipynb", ran)
    edit(tmp_path / "exercises" / "03_scoring.ipynb", answered)
    assert cli.typed_templates() == [Path("exercises/03_scoring.ipynb")]
    cli.print_typed_templates()
    out = capsys.readouterr().out
    assert f"{COMMAND} --adopt exercises/03_scoring.ipynb" in out
    assert "04_scaling" not in out


def test_every_lesson_ends_by_linking_to_the_learners_copy_and_make_progress():
    from tools.generate import closings

    states = closings(ROOT / "notebooks", ROOT / "solutions", check_only=True)
    assert len(states) == len(list((ROOT / "solutions").glob("*.ipynb")))
    stale = [p.name for p, state in states if state != "unchanged"]
    assert not stale, f"run `make exercises`: closing cells out of date in {stale}"
    for path, _ in states:
        nb = json.loads(path.read_text(encoding="utf-8"))
        last = [source(c) for c in nb["cells"] if c["cell_type"] == "markdown"][-1]
        assert f"](../my-work/{path.name})" in last and "make progress" in last, path.name
        assert "attnlib check exercises" not in last, path.name


def test_closing_source_rewrites_only_the_tail_after_the_sentences_own_opening():
    from tools.generate import closing_source

    old = closing_source("## Next\n\nPractise the blend.", "06_b.ipynb")
    assert old.count("Practise") == 2  # no sentence of its own yet: one added at the end
    kept = closing_source(old.replace("in [`my-work/06_b", "in [`my-work/07_c"), "06_b.ipynb")
    assert kept == old and "Practise the blend." in kept
