"""The packages a graded kernel imports are compiled to bytecode when the course is installed.

The grader's sandbox mounts the packages read-only, so a kernel there cannot write the bytecode
it compiles: a venv installed without it (uv's default) made every graded kernel compile
IPython, ipykernel, numpy, sympy and matplotlib from source at each start (sympy and matplotlib
took 4.7 s instead of 1.1 s here), and so does any kernel where PYTHONDONTWRITEBYTECODE is set.
The Makefile's install step compiles them (`uv pip install --compile-bytecode`; pip does it by
default).
"""

import importlib.util
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
KERNEL_IMPORTS = ["IPython", "ipykernel.kernelapp", "zmq", "numpy", "sympy", "matplotlib.pyplot"]


@pytest.mark.skipif(
    not Path(sys.prefix).resolve().is_relative_to(ROOT),
    reason="a Python environment the course's Makefile did not install",
)
def test_the_modules_a_graded_kernel_imports_are_compiled():
    missing = []
    for name in KERNEL_IMPORTS:
        origin = importlib.util.find_spec(name).origin
        if not Path(importlib.util.cache_from_source(origin)).exists():
            missing.append(f"{name} ({origin})")
    assert not missing, "no bytecode for: " + ", ".join(missing)
