"""Store notebooks in the form JupyterLab 4 and Notebook 7 save, so opening one changes nothing.

    python tools/normalize.py notebooks solutions exercises   # rewrite in place (maintainers)
    python tools/normalize.py --check notebooks               # write nothing; exit 1 if any differs

What JupyterLab 4.6 rewrites when it opens a notebook and its kernel starts (found by
opening every course notebook in Chromium and saving it through the server, see
tests/browser/test_unmodified_on_open.py):

- ``metadata.kernelspec`` becomes the installed kernel's spec: ``display_name`` is
  ``"Python 3 (ipykernel)"`` (ipykernel's kernel.json), not nbformat's ``"Python 3"``;
- ``metadata.language_info`` becomes the kernel's whole ``language_info`` (name,
  version, mimetype, codemirror_mode, pygments_lexer, nbconvert_exporter, file_extension);
  a notebook that stores less (``{"name": "python"}``) is marked modified as soon as
  its kernel starts.

The server writes the file with nbformat: one-space indent, sorted keys, non-ASCII kept,
a newline at the end, nbformat 4.5 with cell ids. ``tools/execute.py`` and
``tools/generate.py`` write through :func:`write`, so what they store is this form.

``language_info.version`` is the Python version of the kernel that ran the notebook
(here 3.11.7): a learner whose Python differs sees the notebook marked modified once
its kernel starts, and saving it changes only that line.
"""

import argparse
import functools
import sys
from pathlib import Path

KERNEL_NAME = "python3"


@functools.lru_cache(maxsize=1)
def _kernel_metadata():
    from ipykernel.ipkernel import IPythonKernel
    from jupyter_client.kernelspec import get_kernel_spec

    spec = get_kernel_spec(KERNEL_NAME)
    return spec.display_name, spec.language, repr(IPythonKernel.language_info)


def kernel_metadata():
    """``(kernelspec, language_info)`` as JupyterLab writes them for this machine's kernel.

    Read from the installed kernel spec and ipykernel's own ``language_info`` (what its
    ``kernel_info_reply`` sends), so no kernel has to start.
    """
    import ast

    display_name, language, info = _kernel_metadata()  # read once: ipykernel imports slowly
    kernelspec = {"display_name": display_name, "language": language, "name": KERNEL_NAME}
    return kernelspec, ast.literal_eval(info)  # a fresh copy for every caller


def jupyterlab_form(nb, language_info=None):
    """Give ``nb`` (a NotebookNode, changed in place and returned) the metadata JupyterLab saves.

    ``language_info`` defaults to this machine's kernel's; :mod:`tools.execute` passes the
    one the executing kernel reported. Other notebook metadata is kept; cell ids are
    added if missing (nbformat 4.5).
    """
    import nbformat

    kernelspec, machine_info = kernel_metadata()
    nb.metadata["kernelspec"] = nbformat.from_dict(kernelspec)
    nb.metadata["language_info"] = nbformat.from_dict(dict(language_info or machine_info))
    nb.nbformat, nb.nbformat_minor = 4, max(5, nb.get("nbformat_minor", 5))
    nbformat.validator.normalize(nb)  # fills missing cell ids without touching existing ones
    for cell in nb.cells:
        if "id" not in cell:
            raise ValueError(f"jupyterlab_form: a {cell.cell_type} cell has no id after normalize")
    return nb


def saved_text(nb):
    """The exact text the Jupyter server writes for ``nb`` (nbformat, newline at the end)."""
    import nbformat

    text = nbformat.writes(nb, version=nbformat.NO_CONVERT)
    return text if text.endswith("\n") else text + "\n"


def write(nb, path, language_info=None):
    """Write ``nb`` to ``path`` in JupyterLab's saved form; return True if the file changed."""
    path = Path(path)
    text = saved_text(jupyterlab_form(nb, language_info))
    if path.exists() and path.read_text(encoding="utf-8") == text:
        return False
    path.write_text(text, encoding="utf-8")
    return True


def notebook_paths(paths, where="normalize"):
    """Expand files and folders into a sorted list of ``.ipynb`` files; ``where`` names the tool."""
    found = []
    for p in map(Path, paths):
        if p.is_dir():
            found.extend(sorted(p.glob("*.ipynb")))
        elif p.suffix == ".ipynb" and p.is_file():
            found.append(p)
        else:
            raise SystemExit(f"{where}: {p} is not a notebook or a folder of notebooks.")
    return found


def main(argv=None):
    import nbformat

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+", help="notebook files or folders")
    parser.add_argument("--check", action="store_true", help="write nothing; exit 1 if any differs")
    args = parser.parse_args(argv)
    differs = 0
    for path in notebook_paths(args.paths):
        nb = nbformat.read(path, as_version=4)
        text = saved_text(jupyterlab_form(nb))
        if path.read_text(encoding="utf-8") == text:
            continue
        differs += 1
        if args.check:
            print(f"{path}: not in JupyterLab's saved form; run `python tools/normalize.py {path}`")
        else:
            path.write_text(text, encoding="utf-8")
            print(f"normalized {path}")
    return 1 if args.check and differs else 0


if __name__ == "__main__":
    sys.exit(main())
