"""The setup check in lesson 00: it must name what is missing or too old, and how to fix it."""

from importlib import metadata

import pytest

from attnlib import setup_check
from attnlib.setup_check import REQUIRED, check_setup, verdict


def fake_versions(monkeypatch, **versions):
    """Pretend the installed versions are ``versions``; a value of None means not installed."""
    real = metadata.version

    def version(name):
        if name in versions:
            if versions[name] is None:
                raise metadata.PackageNotFoundError(name)
            return versions[name]
        return real(name)

    monkeypatch.setattr(setup_check.metadata, "version", version)


def test_this_machine_is_ready():
    found, report = check_setup()
    assert [name for name, _ in found] == [name for name, _ in REQUIRED]
    assert all(version for _, version in found)
    assert report.splitlines()[-1] == "setup check: all 9 packages found"
    assert verdict(found) == "setup check: all 9 packages found"


def test_missing_package_is_named_with_the_fix(monkeypatch):
    fake_versions(monkeypatch, sympy=None)
    found, report = check_setup()
    assert ("sympy", None) in found
    assert "sympy          MISSING (needs 1.12 or newer)" in report
    assert "setup check: 1 of 9 packages not ready: sympy is missing" in report
    assert "make lab" in report and "environment.yml" in report
    assert "all 9 packages found" not in report


def test_too_old_package_is_named(monkeypatch):
    fake_versions(monkeypatch, matplotlib="3.6.3", ipywidgets=None)
    found, report = check_setup()
    assert ("matplotlib", "3.6.3") in found
    assert "matplotlib     3.6.3  TOO OLD (needs 3.7 or newer)" in report
    assert (
        "2 of 9 packages not ready: matplotlib 3.6.3 is too old (needs 3.7 or newer); "
        "ipywidgets is missing"
    ) in report


@pytest.mark.parametrize(
    "version, ok",
    [("1.24.0", True), ("1.24", True), ("2.0.0rc1", True), ("1.9.3", False), ("1.23.5", False)],
)
def test_versions_compare_as_numbers_not_text(monkeypatch, version, ok):
    # "1.9" < "1.24" as numbers, though "1.9" > "1.24" as text
    fake_versions(monkeypatch, numpy=version)
    found, _ = check_setup([("numpy", "1.24")])
    assert (verdict(found, [("numpy", "1.24")]) == "setup check: all 1 packages found") is ok


def test_the_check_imports_none_of_the_packages_it_checks():
    import subprocess
    import sys

    code = (
        "import sys; from attnlib.setup_check import check_setup; check_setup(); "
        "print(sorted(m for m in ('sympy', 'matplotlib', 'ipywidgets', 'jupyterlab') "
        "if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_oldest_versions_agree_with_pyproject():
    import re
    from pathlib import Path

    tomllib = pytest.importorskip("tomllib")  # Python 3.11+
    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    wanted = {"python": project["project"]["requires-python"].removeprefix(">=")}
    extras = project["project"]["optional-dependencies"]
    for spec in project["project"]["dependencies"] + extras["lab"]:
        name, oldest = re.fullmatch(r"([A-Za-z0-9_.-]+)>=([0-9.]+)(,!=[0-9.]+)*", spec).groups()[:2]
        wanted[name] = oldest
    assert dict(REQUIRED) == wanted


# Colab ------------------------------------------------------------------------------------------


@pytest.fixture
def on_colab(monkeypatch):
    """Pretend this kernel runs on Colab (its kernel imports google.colab at start)."""
    import sys
    import types

    monkeypatch.setitem(sys.modules, "google.colab", types.ModuleType("google.colab"))


def test_colab_is_recognised_and_its_ipywidgets_7_is_what_it_needs(on_colab, monkeypatch):
    fake_versions(monkeypatch, ipywidgets="7.7.1", jupyterlab=None)
    assert setup_check.on_colab()
    found, report = check_setup()
    assert [name for name, _ in found] == [name for name, _ in setup_check.COLAB_REQUIRED]
    assert "jupyterlab" not in dict(found)  # Colab is the front end
    assert report.splitlines()[0].startswith("on Google Colab: no JupyterLab needed")
    assert "ipywidgets     7.7.1" in report
    assert report.splitlines()[-1] == "setup check (Colab): all 6 packages found"
    assert verdict(found) == "setup check (Colab): all 6 packages found"


def test_on_colab_ipywidgets_8_is_named_as_too_new(on_colab, monkeypatch):
    fake_versions(monkeypatch, ipywidgets="8.1.5")
    found, report = check_setup()
    assert "ipywidgets     8.1.5  TOO NEW for Colab (needs below 8)" in report
    assert "1 of 6 packages not ready: ipywidgets 8.1.5 is too new for Colab" in report
    assert "%pip install ipywidgets==7.7.1" in report and "Restart session" in report
    assert "make lab" not in report


def test_on_colab_a_missing_course_points_at_the_first_cell(on_colab, monkeypatch):
    fake_versions(monkeypatch, ipywidgets="7.7.1", attnlib=None)
    _, report = check_setup()
    assert "attnlib        MISSING" in report
    assert "run this notebook's first cell" in report


def test_off_colab_nothing_changes():
    import sys

    assert "google.colab" not in sys.modules
    assert not setup_check.on_colab()
    _, report = check_setup()
    assert "Colab" not in report
