"""Is this machine ready for the course? Find python and the packages the course uses.

Nothing here imports the packages it checks: versions are read from the
installed package metadata, so a missing package is reported in words instead
of as an ImportError in the learner's first cell.

>>> found, report = check_setup()
>>> [name for name, _ in found]
['python', 'numpy', 'sympy', 'matplotlib', 'ipywidgets', 'jupyterlab', 'ipython', 'ipykernel',
 'jupyter_client']
"""

import platform
import re
from importlib import metadata

# (name, oldest version the course supports); keep in step with pyproject.toml
REQUIRED = (
    ("python", "3.10"),
    ("numpy", "1.24"),
    ("sympy", "1.12"),
    ("matplotlib", "3.7"),
    ("ipywidgets", "8.0"),
    ("jupyterlab", "4.0"),
    ("ipython", "8.0"),
    ("ipykernel", "6.0"),
    ("jupyter_client", "8.0"),
)

FIX = (
    "fix: in the course folder run `make lab` (it installs everything into .venv), "
    "or `conda env create -f environment.yml`; then restart the kernel and run this again."
)


def _release(version):
    """The leading numbers of a version string: ``"2.4.0rc1"`` -> ``(2, 4, 0)``."""
    match = re.match(r"\d+(\.\d+)*", version)
    return tuple(int(part) for part in match.group(0).split(".")) if match else ()


def installed_version(name):
    """The installed version of ``name`` as a string, or None when it is not installed."""
    if name == "python":
        return platform.python_version()
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return None


def _problem(name, version, oldest):
    if version is None:
        return f"{name} is missing"
    if _release(version) < _release(oldest):
        return f"{name} {version} is too old (needs {oldest} or newer)"
    return None


def verdict(found, required=REQUIRED):
    """One line when all is well, otherwise the problems and how to fix them.

    Parameters
    ----------
    found : list of (str, str or None)
        As returned by :func:`check_setup`.
    required : sequence of (str, str)
        The same packages with the oldest version that works.

    Returns
    -------
    str

    Examples
    --------
    >>> print(verdict([("numpy", "2.4.0")], [("numpy", "1.24")]))
    setup check: all 1 packages found
    >>> print(verdict([("numpy", None)], [("numpy", "1.24")]))  # doctest: +ELLIPSIS
    setup check: 1 of 1 packages not ready: numpy is missing
    fix: ...
    """
    oldest = dict(required)
    problems = [p for name, version in found if (p := _problem(name, version, oldest[name]))]
    if not problems:
        return f"setup check: all {len(found)} packages found"
    return (
        f"setup check: {len(problems)} of {len(found)} packages not ready: "
        + "; ".join(problems)
        + "\n"
        + FIX
    )


def check_setup(required=REQUIRED):
    """Find the version of each package the course needs and say what is wrong.

    Parameters
    ----------
    required : sequence of (str, str)
        Package names with the oldest version that works.

    Returns
    -------
    found : list of (str, str or None)
        Each package with the version found, or None when it is missing.
    report : str
        One line per package (its version, ``MISSING`` or ``TOO OLD``), then the
        :func:`verdict`, e.g. ``setup check: all 9 packages found``.

    Examples
    --------
    >>> found, report = check_setup([("python", "3.0")])
    >>> report.splitlines()[-1]
    'setup check: all 1 packages found'
    """
    found, lines = [], []
    for name, oldest in required:
        version = installed_version(name)
        found.append((name, version))
        if version is None:
            lines.append(f"{name:<14} MISSING (needs {oldest} or newer)")
        elif _problem(name, version, oldest):
            lines.append(f"{name:<14} {version}  TOO OLD (needs {oldest} or newer)")
        else:
            lines.append(f"{name:<14} {version}")
    lines.append(verdict(found, required))
    return found, "\n".join(lines)
