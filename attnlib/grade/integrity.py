"""The installed course package's integrity: its files' digests, before and after a notebook.

Without a sandbox a kernel could write into the installed ``attnlib`` (a checker that
passes everything); the grader compares :func:`package_files` after every notebook with
the digests taken before the first, and stops the run when they differ.
"""

import hashlib
import os
from pathlib import Path


def package_root():
    import attnlib

    return Path(attnlib.__file__).resolve().parent


def compile_package():
    """Write the package's bytecode now (where allowed), so that grading writes none."""
    import compileall

    compileall.compile_dir(package_root(), quiet=2)


def package_files():
    """``{relative path: SHA-256}`` of the installed ``attnlib`` package, bytecode included.

    Kernels run with ``PYTHONDONTWRITEBYTECODE``, and :func:`compile_package` runs
    before the first look, so a ``.pyc`` that appears or changes is tampering too.
    """
    root = package_root()
    found = {}
    for path in sorted(root.rglob("*")):
        if path.is_symlink():
            found[str(path.relative_to(root))] = "-> " + os.readlink(path)
        elif path.is_file():
            found[str(path.relative_to(root))] = hashlib.sha256(path.read_bytes()).hexdigest()
    return found


def package_digest():
    """One SHA-256 over :func:`package_files`."""
    return hashlib.sha256(repr(sorted(package_files().items())).encode()).hexdigest()


def changed_files(before, after):
    """Names of the files added, removed or changed between two :func:`package_files`."""
    return sorted(
        name for name in before.keys() | after.keys() if before.get(name) != after.get(name)
    )
