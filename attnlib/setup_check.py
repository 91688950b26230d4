"""Is this machine ready for the course? Find python and the packages the course uses.

Nothing here imports the packages it checks: versions are read from the
installed package metadata, so a missing package is reported in words instead
of as an ImportError in the learner's first cell.

On Google Colab what matters is different: Colab is the front end, so there is
no JupyterLab to find, and its front end shows ipywidgets 7.x only (it runs
7.7.1), so an ipywidgets 8 installed over it is the problem. There the check
looks for the course itself (the notebook's first cell installs it) instead.

In the browser (the JupyterLite site, Python compiled to WebAssembly by Pyodide, where
``sys.platform == "emscripten"``) there is also no JupyterLab or kernel to install: the
check looks for the lessons' libraries and the course, and says what differs there.

>>> found, report = check_setup()
>>> [name for name, _ in found]
['python', 'numpy', 'sympy', 'matplotlib', 'ipywidgets', 'ipython', 'ipykernel', 'jupyter_client',
 'jupyterlab']
"""

import platform
import re
import sys
from importlib import metadata

# (name, oldest version the course supports); keep in step with pyproject.toml
REQUIRED = (
    ("python", "3.10"),
    ("numpy", "1.24"),
    ("sympy", "1.12"),
    ("matplotlib", "3.7"),
    ("ipywidgets", "7.7.1"),
    ("ipython", "7.34"),
    ("ipykernel", "6.17"),
    ("jupyter_client", "6.1.12"),
    ("jupyterlab", "4.0"),  # pyproject.toml's `lab` extra: off Colab the course needs it
)

# Releases that install but misbehave: (name, version) -> what goes wrong. Keep in step with
# pyproject.toml, which excludes them.
BROKEN = {
    ("ipykernel", v): "can leave a cell running forever (ipykernel issue 1554)"
    for v in ("7.0.0", "7.0.1", "7.1.0", "7.2.0", "7.3.0")
}

FIX = (
    "fix: in the course folder run `make lab` (it installs everything into .venv), "
    "or `conda env create -f environment.yml`; then restart the kernel and run this again."
)

# On Colab: its own numpy, sympy, matplotlib and ipywidgets 7.x, plus the course (attnlib)
COLAB_REQUIRED = (
    ("python", "3.10"),
    ("numpy", "1.24"),
    ("sympy", "1.12"),
    ("matplotlib", "3.7"),
    ("ipywidgets", "7.7"),
    ("attnlib", "0.1"),
)
COLAB_BELOW = {"ipywidgets": "8"}  # Colab's front end cannot show ipywidgets 8 widgets
COLAB_NOTE = (
    "on Google Colab: no JupyterLab needed (Colab is the front end); "
    "widgets need Colab's own ipywidgets 7.x"
)
COLAB_FIX = (
    "fix on Colab: run this notebook's first cell (it installs the course and leaves Colab's "
    "own packages alone); if ipywidgets is too new, run `%pip install ipywidgets==7.7.1`; "
    "then Runtime > Restart session and run this again."
)


# In the browser (JupyterLite): the site brings every package, the course included
BROWSER_REQUIRED = (
    ("python", "3.10"),
    ("numpy", "1.24"),
    ("sympy", "1.12"),
    ("matplotlib", "3.7"),
    ("ipywidgets", "8.0"),
    ("attnlib", "0.1"),
)
BROWSER_NOTE = (
    "in the browser (JupyterLite, Python in WebAssembly): nothing to install.\n"
    "Your work is saved in this browser's storage and survives a reload, but not clearing the "
    "site's data or another browser: File > Download saves the open notebook to your computer.\n"
    "A check of a function runs in this kernel with no time limit; there is no terminal, "
    "so `attnlib check exercises/` needs the installed course (make lab)."
)
BROWSER_FIX = (
    "fix in the browser: reload the page (Pyodide may not have finished loading); if that "
    "does not help, install the course instead (make lab) or open it on Binder."
)


def in_browser():
    """True in the JupyterLite site's kernel: Pyodide, Python compiled to WebAssembly."""
    return sys.platform == "emscripten"


def on_colab():
    """True inside Google Colab, whose kernel imports ``google.colab`` at start."""
    return "google.colab" in sys.modules


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


def _problem(name, version, oldest, below=None):
    if version is None:
        return f"{name} is missing"
    if _release(version) < _release(oldest):
        return f"{name} {version} is too old (needs {oldest} or newer)"
    if below and _release(version) >= _release(below):
        return f"{name} {version} is too new for Colab (needs {oldest} up to below {below})"
    if (name, version) in BROKEN:
        return f"{name} {version} {BROKEN[name, version]}"
    return None


def _for_colab(colab):
    return on_colab() if colab is None else colab


def _place(colab):
    """(required, below, note, fix, title) for Colab, the browser, or an installed course."""
    if _for_colab(colab):
        return COLAB_REQUIRED, COLAB_BELOW, COLAB_NOTE, COLAB_FIX, "setup check (Colab)"
    if colab is None and in_browser():
        return BROWSER_REQUIRED, {}, BROWSER_NOTE, BROWSER_FIX, "setup check (browser)"
    return REQUIRED, {}, None, FIX, "setup check"


def verdict(found, required=None, colab=None):
    """One line when all is well, otherwise the problems and how to fix them.

    Parameters
    ----------
    found : list of (str, str or None)
        As returned by :func:`check_setup`.
    required : sequence of (str, str), optional
        The same packages with the oldest version that works; by default
        ``REQUIRED``, ``COLAB_REQUIRED`` on Colab, ``BROWSER_REQUIRED`` in the browser.
    colab : bool, optional
        Judge as on Colab (ipywidgets must stay below 8, Colab's own fix);
        by default, whether this kernel runs on Colab.

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
    >>> print(verdict([("ipykernel", "7.3.0")], [("ipykernel", "6.17")]))  # doctest: +ELLIPSIS
    setup check: 1 of 1 packages not ready: ipykernel 7.3.0 can leave a cell running forever ...
    fix: ...
    >>> print(verdict([("ipywidgets", "8.1.5")], [("ipywidgets", "7.7")], colab=True))
    ... # doctest: +ELLIPSIS
    setup check (Colab): 1 of 1 packages not ready: ipywidgets 8.1.5 is too new for Colab ...
    fix on Colab: ...
    """
    default, below, _, fix, title = _place(colab)
    required = default if required is None else required
    oldest = dict(required)
    problems = [
        p
        for name, version in found
        if (p := _problem(name, version, oldest[name], below.get(name)))
    ]
    if not problems:
        return f"{title}: all {len(found)} packages found"
    return (
        f"{title}: {len(problems)} of {len(found)} packages not ready: "
        + "; ".join(problems)
        + "\n"
        + fix
    )


def check_setup(required=None, colab=None):
    """Find the version of each package the course needs and say what is wrong.

    Parameters
    ----------
    required : sequence of (str, str), optional
        Package names with the oldest version that works; by default
        ``REQUIRED``, ``COLAB_REQUIRED`` on Colab, ``BROWSER_REQUIRED`` in the browser.
    colab : bool, optional
        Check as on Colab; by default, whether this kernel runs on Colab. On
        Colab the report starts with a line saying what matters there; in the
        browser (JupyterLite) with lines saying what differs there.

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
    default, below, note, _, _ = _place(colab)
    required = default if required is None else required
    found, lines = [], [note] if note else []
    for name, oldest in required:
        version = installed_version(name)
        found.append((name, version))
        if version is None:
            lines.append(f"{name:<14} MISSING (needs {oldest} or newer)")
        elif _release(version) < _release(oldest):
            lines.append(f"{name:<14} {version}  TOO OLD (needs {oldest} or newer)")
        elif _problem(name, version, oldest, below.get(name)):
            lines.append(f"{name:<14} {version}  TOO NEW for Colab (needs below {below[name]})")
        else:
            lines.append(f"{name:<14} {version}")
    lines.append(verdict(found, required, colab))
    return found, "\n".join(lines)
