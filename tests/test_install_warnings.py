"""Installing the course prints no setuptools warning (issue 19, item 5).

setuptools announces what will stop working as warnings in the build's output (a license
written as a TOML table stops building on 2027-02-18). Both ways the course is installed
are built here as pip builds them, in an isolated build environment with the
``build-system.requires`` of pyproject.toml, verbosely, and their output is scanned:

- ``pip wheel -v --no-deps .`` (``pip install .``, Colab's ``pip install git+...``);
- ``pip install -v --no-deps -e .`` into an empty venv (``make lab``).

Allowed: setuptools' ``InformationOnly`` notice that an editable install is editable
("Editable installation."), which every flat-layout project gets, and distutils' note that
byte-compiling is off when the environment sets ``PYTHONDONTWRITEBYTECODE``.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib")
ROOT = Path(__file__).resolve().parent.parent
WARNING = re.compile(r"\b\w*Warning\b|^\s*warning:", re.M)
ALLOWED = (
    "Warning: Editable installation.",  # setuptools' InformationOnly notice, not a problem
    "byte-compiling is disabled, skipping.",  # PYTHONDONTWRITEBYTECODE in the environment
)


def warnings_in(output):
    return [
        line.strip()
        for line in output.splitlines()
        if WARNING.search(line) and not any(ok in line for ok in ALLOWED)
        and not line.startswith("WARNING: Location ")  # this machine's pip find-links
    ]  # fmt: skip


def pip(*args):
    out = subprocess.run(
        [sys.executable, "-m", "pip", *args], capture_output=True, text=True, timeout=900
    )
    text = out.stdout + out.stderr
    assert out.returncode == 0, text[-3000:]
    return text


def test_pyproject_uses_the_spdx_license_with_a_setuptools_that_reads_it():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert project["project"]["license"] == "MIT"
    requires = project["build-system"]["requires"]
    floor = [r for r in requires if r.startswith("setuptools")]
    assert floor and re.fullmatch(r"setuptools>=(\d+)", floor[0])
    assert int(floor[0].split(">=")[1]) >= 77, "setuptools reads SPDX license strings from 77"


def test_pip_builds_and_installs_the_course_without_a_setuptools_warning(tmp_path):
    text = pip("wheel", "-v", "--no-deps", "--wheel-dir", str(tmp_path / "wheels"), str(ROOT))
    assert "Building wheel for attnlib" in text or "Created wheel for attnlib" in text
    assert warnings_in(text) == [], "\n".join(warnings_in(text))
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    text = pip(
        "--python", str(venv / "bin" / "python"), "install", "-v", "--no-deps", "-e", str(ROOT)
    )
    assert "Successfully installed attnlib" in text
    assert warnings_in(text) == [], "\n".join(warnings_in(text))


def test_the_scan_sees_setuptools_warnings():
    seen = """  /tmp/pip-build-env-x/site-packages/setuptools/config/_apply_pyprojecttoml.py:82:
    BuildBackendWarning: `project.license` as a TOML table is deprecated
  warning: no files found matching 'x'
  /tmp/e.py:354: BuildBackendWarning: Editable installation.
WARNING: Location 'file:///opt/x/' is ignored: it is neither a file nor a directory."""
    assert warnings_in(seen) == [
        "BuildBackendWarning: `project.license` as a TOML table is deprecated",
        "warning: no files found matching 'x'",
    ]
