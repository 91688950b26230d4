"""The setup files agree with each other, and `import attnlib` stays light."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from attnlib.setup_check import BROKEN

ROOT = Path(__file__).resolve().parent.parent


def pyproject():
    """pyproject.toml's [project] table (tomllib: Python 3.11 and later; skipped on 3.10)."""
    tomllib = pytest.importorskip("tomllib")
    return tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def requirement(text):
    """'numpy>=1.24' -> ('numpy', '>=1.24'); names compared case- and dash-insensitively."""
    name, spec = re.match(r"^\s*([A-Za-z0-9_.\-]+)\s*(.*)$", text).groups()
    return name.lower().replace("_", "-"), spec.replace(" ", "")


def test_environment_yml_lists_the_same_packages_as_pyproject():
    project = pyproject()
    extras = project["optional-dependencies"]
    wanted = project["dependencies"] + extras["lab"] + extras["test"]
    env = yaml.safe_load((ROOT / "environment.yml").read_text())
    conda = [d for d in env["dependencies"] if isinstance(d, str)]
    conda = {requirement(d) for d in conda} - {("pip", "")}
    python = {r for r in conda if r[0] == "python"}
    assert python == {("python", ">=3.10")}, "environment.yml's python should match requires-python"
    assert project["requires-python"] == ">=3.10"
    assert conda - python == {requirement(d) for d in wanted}
    pip_section = [d for d in env["dependencies"] if isinstance(d, dict)]
    assert pip_section == [{"pip": ["-e ."]}], "conda users install attnlib itself from the repo"


def test_import_attnlib_loads_no_sympy_matplotlib_or_ipywidgets():
    code = (
        "import attnlib, sys; "
        "print(sorted({m.split('.')[0] for m in sys.modules} & {'sympy', 'matplotlib', 'ipywidgets'}))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"


def test_makefile_offers_the_two_learner_commands():
    makefile = (ROOT / "Makefile").read_text()
    assert re.search(r"^lab: ", makefile, re.M) and re.search(r"^test: ", makefile, re.M)
    assert "--LabApp.default_url=/lab/tree/notebooks/00_start_here.ipynb $(LAB_ARGS)" in makefile


def test_the_dependency_floors_are_the_versions_tested_in_the_colab_venv():
    """pyproject.toml's floors for Colab's packages are the pins `make test-widgets-ipywidgets7`
    installs and runs the widget tests and the grader under."""
    project = pyproject()
    floors = dict(requirement(d) for d in project["dependencies"])
    pins = re.search(r"^COLAB_PINS := (.*)$", (ROOT / "Makefile").read_text(), re.M).group(1)
    pinned = dict(requirement(p.strip("'").replace("==", ">=")) for p in pins.split())
    assert set(pinned) == {"ipywidgets", "ipython", "ipykernel", "jupyter-client"}
    for name, spec in pinned.items():
        tested, floor = spec.removeprefix(">="), floors[name].split(",")[0].removeprefix(">=")
        assert tuple(map(int, floor.split("."))) <= tuple(map(int, tested.split("."))), name
        assert tested.split(".")[:2] == floor.split(".")[:2], (
            f"{name}: floor {floor}, tested {tested}"
        )


# ipykernel 7.0 to 7.3 send the shell reply around the socket's stream, which can leave the next
# request unread (ipykernel issue 1554, fixed in 7.4, which needs Python 3.11): a cell that
# never finishes, for a learner in JupyterLab and for the grader (1 run in 3 of a class on 3.10)
STRANDING_IPYKERNELS = [v for name, v in BROKEN if name == "ipykernel"]


def test_no_ipykernel_that_strands_a_request_is_installed():
    from importlib.metadata import version

    assert version("ipykernel") not in STRANDING_IPYKERNELS, "reinstall: make clean && make lab"


def test_no_ipykernel_that_strands_a_request_is_allowed():
    from packaging.requirements import Requirement

    wanted = [Requirement(d) for d in pyproject()["dependencies"]]
    (ipykernel,) = [r for r in wanted if r.name == "ipykernel"]
    allowed = [v for v in STRANDING_IPYKERNELS if ipykernel.specifier.contains(v)]
    assert STRANDING_IPYKERNELS and allowed == [], f"pyproject.toml allows ipykernel {allowed}"
    assert ipykernel.specifier.contains("6.17.1") and ipykernel.specifier.contains("7.4.0")


def test_the_gradescope_pins_meet_pyproject():
    """Every pin in the autograder's constraints (for each Python it marks) satisfies the
    course's own requirement of that package: a stale file would install, on Gradescope's
    Ubuntu 22.04 (Python 3.10), a version the course excludes."""
    from packaging.requirements import Requirement

    wanted = {r.name.lower(): r for r in map(Requirement, pyproject()["dependencies"])}
    text = (ROOT / "attnlib" / "grade" / "gradescope-constraints.txt").read_text()
    pins = [Requirement(line) for line in text.splitlines() if line and not line.startswith("#")]
    checked = 0
    for pin in pins:
        if pin.name.lower() in wanted:
            (version,) = [s.version for s in pin.specifier]
            assert wanted[pin.name.lower()].specifier.contains(version), f"{pin} ({pin.marker})"
            checked += 1
    assert checked >= len(wanted), f"{checked} pins of the {len(wanted)} dependencies"
