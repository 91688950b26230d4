"""Binder: binder/ agrees with pyproject.toml, and repo2docker's dry run builds it as meant.

The dry run (`repo2docker --no-build --debug --no-run .`) prints the Dockerfile it
would build, in about a second, with no Docker. It needs jupyter-repo2docker, which
`make test-binder` installs into a side venv (build/venv-repo2docker); without it
that test is skipped.
"""

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
BINDER = ROOT / "binder"
tomllib = pytest.importorskip("tomllib")
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
ENV = yaml.safe_load((BINDER / "environment.yml").read_text())
REPO2DOCKER = os.environ.get("ATTNLIB_REPO2DOCKER") or shutil.which("repo2docker")
if not REPO2DOCKER and (ROOT / "build/venv-repo2docker/bin/repo2docker").exists():
    REPO2DOCKER = str(ROOT / "build/venv-repo2docker/bin/repo2docker")


def requirement(text):
    """'numpy>=1.24' -> ('numpy', '>=1.24')."""
    name, spec = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", text).groups()
    return name.lower().replace("_", "-"), spec.replace(" ", "")


def pinned_python():
    specs = [d for d in ENV["dependencies"] if isinstance(d, str) and d.startswith("python")]
    assert len(specs) == 1, specs
    match = re.fullmatch(r"python=(\d+)\.(\d+)", specs[0])
    assert match, f"repo2docker reads only python=X.Y, not {specs[0]!r}"
    return int(match.group(1)), int(match.group(2))


def test_python_is_pinned_as_repo2docker_reads_it_and_allowed_by_pyproject():
    major, minor = pinned_python()
    oldest = tuple(int(p) for p in PROJECT["requires-python"].removeprefix(">=").split("."))
    assert (major, minor) >= oldest


def test_binder_installs_the_same_packages_as_pyproject():
    conda = {requirement(d) for d in ENV["dependencies"] if isinstance(d, str)}
    conda = {r for r in conda if r[0] != "python"}
    wanted = PROJECT["dependencies"] + PROJECT["optional-dependencies"]["lab"]
    assert conda == {requirement(d) for d in wanted}


def test_environment_names_no_repository_file_so_it_is_built_before_the_copy():
    # a pip section with `-e .` would make repo2docker build the environment after copying
    # the repository, so every commit would rebuild it
    assert not [d for d in ENV["dependencies"] if isinstance(d, dict)]


def test_postbuild_installs_the_course_and_turns_off_the_news():
    script = (BINDER / "postBuild").read_text()
    assert os.access(BINDER / "postBuild", os.X_OK)
    assert "pip install --no-deps -e ." in script
    settings = re.search(r"echo '(\{.*\})'", script).group(1)
    assert '"fetchNews": "false"' in settings
    makefile = (ROOT / "Makefile").read_text()
    assert f"echo '{settings}'" in makefile, "Binder and `make lab` should set the same"
    assert script.index("pip install") < script.index("overrides.json")


@pytest.mark.skipif(not REPO2DOCKER, reason="no repo2docker (make test-binder installs it)")
def test_repo2docker_dry_run_picks_the_pinned_python_and_caches_the_environment():
    out = subprocess.run(
        [REPO2DOCKER, "--no-build", "--debug", "--no-run", str(ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-2000:]
    major, minor = pinned_python()
    assert f"Building conda environment for python={major}.{minor}" in text, text[:2000]
    assert "Python version unspecified" not in text
    steps = [
        "COPY --chown=0:0 src/binder/environment.yml",  # only the environment file first
        '--file "binder/environment.yml"',  # the environment is built from it
        "COPY --chown=0:0 src/ ${REPO_DIR}/",  # then the whole repository
        "RUN ./binder/postBuild",  # then the course is installed
    ]
    where = [text.find(step) for step in steps]
    assert all(i >= 0 for i in where), dict(zip(steps, where, strict=True))
    assert where == sorted(where), dict(zip(steps, where, strict=True))
