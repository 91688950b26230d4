"""Gradescope: the autograder zip, and run_autograder's Python entry in a simulated layout.

The published results format (NOTES.md): ``score``, ``tests`` (each ``name``, ``score``,
``max_score``, ``output``, ``visibility`` of hidden / after_due_date / after_published /
visible) and the optional ``stdout_visibility``.
"""

import json
import os
import stat
import subprocess
import sys
import zipfile

import pytest

from attnlib.grade import gradescope
from attnlib.selfcheck import registry
from tests.test_check_cli import mixed_notebook

from .conftest import alive, write
from .test_exports import run

VISIBILITIES = {"hidden", "after_due_date", "after_published", "visible"}
TEST_FIELDS = {"name": str, "score": float, "max_score": float, "output": str, "visibility": str}


def validate(results):
    """Assert that ``results`` is a valid Gradescope results.json; return its tests."""
    assert set(results) <= {"score", "tests", "output", "stdout_visibility", "execution_time",
                            "visibility", "extra_data", "leaderboard"}  # fmt: skip
    assert isinstance(results["score"], float)
    assert results["stdout_visibility"] in VISIBILITIES
    for test in results["tests"]:
        assert set(test) == set(TEST_FIELDS)
        for field, kind in TEST_FIELDS.items():
            assert isinstance(test[field], kind), (field, test)
        assert test["visibility"] in VISIBILITIES
        assert 0 <= test["score"] <= test["max_score"] or test["max_score"] == 0 == test["score"]
    assert results["score"] == pytest.approx(sum(t["score"] for t in results["tests"]))
    return results["tests"]


@pytest.fixture(scope="session")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gradescope")
    status, out, err = run("gradescope", "build", folder / "autograder.zip",
                           "--lessons", "03_scoring", "05_softmax")  # fmt: skip
    assert status == 0, err
    return folder / "autograder.zip"


def test_the_zip_has_setup_and_run_autograder_at_its_root_and_the_course(built, tmp_path):
    with zipfile.ZipFile(built) as zf:
        infos = {i.filename: i for i in zf.infolist()}
        setup, runner = zf.read("setup.sh").decode(), zf.read("run_autograder").decode()
        config = json.loads(zf.read("config.json"))
    for name in ("setup.sh", "run_autograder"):
        assert (infos[name].external_attr >> 16) & stat.S_IXUSR, name
    assert 'pip install -c "$CONSTRAINTS" /autograder/source/course' in setup
    assert "course/attnlib/grade/gradescope-constraints.txt" in infos
    assert 'exec "$AUTOGRADER_ROOT/venv/bin/python" -m attnlib.grade.gradescope' in runner
    assert {"course/pyproject.toml", "course/attnlib/grade/gradescope.py",
            "course/exercises/03_scoring.ipynb"} <= set(infos)  # fmt: skip
    assert not any(name.startswith("course/solutions/") for name in infos)
    assert config == {"lessons": ["03_scoring", "05_softmax"], "points": None,
                      "visibility": "visible"}  # fmt: skip
    status, _, _ = run("gradescope", "build", tmp_path / "hidden.zip", "--lessons", "03_scoring",
                       "--visibility", "after_published")  # fmt: skip
    with zipfile.ZipFile(tmp_path / "hidden.zip") as zf:
        assert json.loads(zf.read("config.json"))["visibility"] == "after_published"
    again = tmp_path / "again.zip"
    gradescope.build(again, lessons=["03_scoring", "05_softmax"])
    assert again.read_bytes() == built.read_bytes()  # the same inputs give the same zip
    with pytest.raises(gradescope.BuildError, match=r"--lessons: \['99_nothing'\] are not"):
        gradescope.build(tmp_path / "x.zip", lessons=["99_nothing"])


def test_run_autograder_grades_the_submission_and_writes_valid_results(built, tmp_path, capsys):
    root = tmp_path / "autograder"
    gradescope.install_files(built, root)  # as Gradescope unpacks it: ROOT/source
    write(root / "submission" / "03_scoring.ipynb", mixed_notebook())
    data = gradescope.run(root)
    results = json.loads((root / "results" / "results.json").read_text())
    assert results == data
    tests = {t["name"]: t for t in validate(results)}
    expected_names = [f"{e.lesson}: {e.id}" for e in registry.exercises().values()
                      if e.lesson in ("03_scoring", "05_softmax")]  # fmt: skip
    assert list(tests) == expected_names
    assert tests["03_scoring: score_eat_seeds"]["score"] == 1.0
    wrong = tests["03_scoring: rank_witness"]
    assert wrong["score"] == 0.0 and wrong["output"].startswith("Wrong: z = 0 proves nothing")
    assert tests["05_softmax: softmax"]["output"] == "05_softmax.ipynb was not handed in."
    assert results["score"] == 1.0 and results["stdout_visibility"] == "hidden"
    assert "5 exercises in 1 notebook" in capsys.readouterr().out  # the instructor's log


def test_the_run_autograder_script_finds_notebooks_one_folder_down(built, tmp_path, monkeypatch):
    root = tmp_path / "autograder"
    gradescope.install_files(built, root)
    (root / "submission" / "my-work").mkdir(parents=True)
    monkeypatch.setenv("AUTOGRADER_ROOT", str(root))
    validate(gradescope.run())  # no notebook at all: every test 0, still valid
    write(root / "submission" / "my-work" / "03_scoring.ipynb", b"not json")
    python = root / "venv" / "bin" / "python"  # what setup.sh would have installed
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\nexec {sys.executable} "$@"\n')
    python.chmod(0o755)
    script = root / "source" / "run_autograder"
    done = subprocess.run([str(script)], env={**os.environ, "AUTOGRADER_ROOT": str(root)},
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    tests = validate(json.loads((root / "results" / "results.json").read_text()))
    assert tests[-1]["name"] == "03_scoring.ipynb: the whole notebook"
    assert tests[-1]["output"].startswith("not gradable: the file is not valid JSON")


# ---- Gradescope where bubblewrap cannot make namespaces (Docker's default container) -------

FAKE_BWRAP = """#!/bin/sh
echo "bwrap: No permissions to create new namespace" >&2
exit 1
"""
STEAL_KEY = """import subprocess, sys
from attnlib.selfcheck import check
SOURCE = {source!r}
leak = subprocess.run([sys.executable, "-c", "import sys; sys.path.insert(0, SOURCE + '/course');"
                       "from attnlib.selfcheck import registry;"
                       "print(float(registry.get('score_eat_seeds').expected))"
                       .replace("SOURCE", repr(SOURCE))], capture_output=True, text=True)
if leak.returncode == 0:
    check("score_eat_seeds", float(leak.stdout))
"""
FORGE_AND_KILL = """import json, os, signal, time
RESULTS = {results!r}
forged = json.dumps({{"score": 1000.0, "stdout_visibility": "hidden", "tests": [
    {{"name": "forged", "score": 1000.0, "max_score": 1000.0, "output": "", "visibility": "visible"}}]}})
def forge():
    try:
        with open(RESULTS + "/results.json", "w") as f:
            f.write(forged)
    except OSError:
        pass
forge()
if os.fork() == 0:  # a child of its own session writes again once the grader is done
    os.setsid()
    with open({pid_file!r}, "w") as f:
        f.write(str(os.getpid()))
    for _ in range(40):
        time.sleep(0.25)
        forge()
    os._exit(0)
pid = os.getpid()
while pid > 1:  # kill the grader and run_autograder above it
    with open(f"/proc/{{pid}}/stat") as f:
        pid = int(f.read().rsplit(")", 1)[1].split()[1])
    with open(f"/proc/{{pid}}/cmdline", "rb") as f:
        command = f.read()
    if b"attnlib.grade.gradescope" in command or b"run_autograder" in command:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
"""


def private_folders(paths):
    """The folders on the way to ``paths`` that other users cannot enter."""
    return [
        folder
        for path in paths
        for folder in (path, *path.parents)
        if folder.is_dir() and not folder.stat().st_mode & 0o001
    ]


def readable_copy(source, target):
    """``source`` copied to ``target`` (hard links where one file system holds both: the
    files' own modes already let any uid read them, only a folder above was closed)."""
    import shutil

    def link_or_copy(src, dst):
        try:
            os.link(src, dst)
        except OSError:
            shutil.copy2(src, dst)

    shutil.copytree(source, target, symlinks=True, copy_function=link_or_copy)
    for folder in [target, *target.rglob("*")]:
        if folder.is_dir() and not folder.is_symlink():
            folder.chmod(0o755)
    return target


@pytest.fixture
def container(built):
    """An /autograder layout in a folder others may traverse, and a bwrap that cannot run.

    The kernel's uid imports the course's packages from this venv's site-packages; where a
    folder above them is closed to other users (a clone inside ``mktemp -d``, 0700), it
    imports them from a copy in that open folder instead. The course package itself comes
    from the grader's stripped copy, which is always in an open folder.
    """
    import shutil
    import tempfile
    from pathlib import Path

    base = Path(tempfile.mkdtemp(prefix="attnlib-gradescope-"))
    base.chmod(0o755)
    root = base / "autograder"
    gradescope.install_files(built, root)
    (root / "results").mkdir(mode=0o777)
    (root / "results").chmod(0o777)  # as open as it may be before the grader starts
    # what setup.sh makes: a venv of the system's Python (which any uid may run, unlike a
    # Python under root's home), here reusing this one's packages instead of installing
    system = Path(f"/usr/bin/python{sys.version_info.major}.{sys.version_info.minor}")
    if not system.is_file():
        pytest.skip(f"no {system} to make the container's venv from")
    subprocess.run([system, "-m", "venv", "--without-pip", root / "venv"], check=True)
    import site
    import sysconfig

    ours = sysconfig.get_paths()["purelib"]
    assert ours in site.getsitepackages() or ours in sys.path
    import attnlib

    needed = [Path(ours), Path(attnlib.__file__).parent]  # what the kernel's uid must import
    if private_folders(needed):  # e.g. a clone inside `mktemp -d`, which is 0700
        ours = str(readable_copy(Path(ours), base / "site-packages"))
        assert not private_folders([Path(ours)])
    (next((root / "venv" / "lib").glob("python*")) / "site-packages" / "course.pth").write_text(
        f"import site; site.addsitedir({ours!r})\n"
    )
    bwrap = base / "bwrap"
    bwrap.write_text(FAKE_BWRAP)
    bwrap.chmod(0o755)
    for folder in [root, *root.rglob("*")]:
        if folder.is_dir():
            folder.chmod(0o755 if folder.name != "results" else 0o777)
    env = {**os.environ, "AUTOGRADER_ROOT": str(root), "ATTNLIB_BWRAP": str(bwrap)}
    yield root, env
    shutil.rmtree(base, ignore_errors=True)


@pytest.mark.skipif(os.geteuid() != 0, reason="dropping to an unprivileged uid needs root")
def test_without_namespaces_the_kernel_is_no_root_and_cannot_forge_or_read_the_key(container):
    import re
    import time

    from .conftest import code, unsolved

    root, env = container
    nb = unsolved()  # last, after the stub's own check cells: the last answer counts
    nb["cells"].append(code(STEAL_KEY.format(source=str(root / "source"))))
    pid_file = f"/tmp/attnlib-forger-{os.getpid()}-{root.parent.name}.pid"  # /tmp: any uid
    forge = FORGE_AND_KILL.format(results=str(root / "results"), pid_file=pid_file)
    nb["cells"].append(code(forge))
    write(root / "submission" / "03_scoring.ipynb", nb)
    done = subprocess.run([str(root / "source" / "run_autograder")], env=env,
                          capture_output=True, text=True, timeout=600)  # fmt: skip
    assert done.returncode == 0, done.stderr
    log = done.stdout
    assert "isolation: NO SANDBOX (bubblewrap could not make a sandbox here: bwrap: No perm" in log
    uids = [int(u) for u in re.search(r"the kernel ran as uid ([\d, ]+),", log).group(1).split(",")]
    assert uids and 0 not in uids
    time.sleep(3)  # the forger's child, had it lived, would have written by now
    text = (root / "results" / "results.json").read_text()
    results = json.loads(text)
    tests = {t["name"]: t for t in validate(results)}
    assert "1000" not in text and "forged" not in tests
    assert tests["03_scoring: score_eat_seeds"]["score"] == 0.0  # the key was not readable
    assert results["score"] == 0.0
    forger = int(open(pid_file).read())  # it was started, as the kernel's uid
    os.unlink(pid_file)
    assert not alive(forger)  # and killed before results.json was written
    assert stat.S_IMODE((root / "results").stat().st_mode) == 0o700
    assert f"{root / 'source'}" in log and f"{root / 'results'}" in log  # protected, and said


@pytest.mark.skipif(os.geteuid() != 0, reason="the protection is root's")
def test_an_instructor_can_require_the_sandbox(container, capsys, monkeypatch):
    root, env = container
    write(root / "submission" / "03_scoring.ipynb", mixed_notebook())
    monkeypatch.setenv("ATTNLIB_BWRAP", env["ATTNLIB_BWRAP"])
    monkeypatch.setenv(gradescope.REQUIRE_ENV, "1")
    data = gradescope.run(root)
    assert data["score"] == 0.0 and data["tests"] == []
    assert json.loads((root / "results" / "results.json").read_text()) == data
    log = capsys.readouterr().out
    assert "no sandbox can be made here" in log and "refused to grade without a sandbox" in log
    monkeypatch.delenv(gradescope.REQUIRE_ENV)
    config = json.loads((root / "source" / "config.json").read_text())
    (root / "source" / "config.json").write_text(json.dumps(config | {"require_sandbox": True}))
    assert gradescope.run(root)["tests"] == []
    status, _, _ = run("gradescope", "build", root / "req.zip", "--lessons", "03_scoring",
                       "--require-sandbox")  # fmt: skip
    with zipfile.ZipFile(root / "req.zip") as zf:
        assert json.loads(zf.read("config.json"))["require_sandbox"] is True


def test_the_constraints_pin_every_course_dependency_for_python_3_10_and_newer():
    """setup.sh installs with the constraints file; it pins each runtime dependency (and
    what this venv needs of theirs) with ==, for Ubuntu 22.04's 3.10 and for this Python."""
    from pathlib import Path

    import pytest as _pytest

    tomllib = _pytest.importorskip("tomllib", reason="tomllib is Python 3.11 and newer")
    from packaging.requirements import Requirement

    from tests.grader.conftest import ROOT

    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import gradescope_constraints as tool
    finally:
        sys.path.remove(str(ROOT / "tools"))
    text = (ROOT / gradescope.CONSTRAINTS).read_text()
    pins = [Requirement(line) for line in text.splitlines() if line and not line.startswith("#")]
    assert all(str(p.specifier).startswith("==") for p in pins)
    wanted = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    here = ".".join(map(str, sys.version_info[:3]))
    for python in ("3.10.12", here):
        env = {"python_full_version": python, "python_version": python.rsplit(".", 1)[0]}
        pinned = {tool._canonical(p.name) for p in pins if not p.marker or p.marker.evaluate(env)}
        for requirement in wanted:
            assert tool._canonical(Requirement(requirement).name) in pinned, (python, requirement)
    assert set(tool.installed_pins()) <= {tool._canonical(p.name) for p in pins}
    assert Path(tool.OUT) == ROOT / gradescope.CONSTRAINTS
