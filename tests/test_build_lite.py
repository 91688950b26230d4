"""tools/build_lite.py checks every file it fetches: these tests feed it wrong ones.

No network and no real download: small stand-in files, wheels and an npm tarball are made
in a temporary folder. The real build and the site in Chromium: ``make test-lite``.
"""

import hashlib
import io
import json
import re
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tools"))

import build_lite as lite  # noqa: E402


def sha(data):
    return hashlib.sha256(data).hexdigest()


def test_every_requirement_is_pinned_by_hash():
    for name in ("requirements-build.txt", "requirements-kernel.txt", "requirements-pyodide.txt"):
        path = lite.HERE / name
        pins = lite.pinned_hashes(path)
        assert pins, name
        for spec, hashes in pins.items():
            assert re.fullmatch(r"[\w.-]+==[\w.]+", spec), (name, spec)
            assert hashes, (name, spec)
    build = lite.pinned_hashes(lite.HERE / "requirements-build.txt")
    for spec in ("jupyterlite-core==0.6.4", "jupyterlite-pyodide-kernel==0.6.1"):
        assert spec in build
    assert "jupyterlab-widgets==3.0.15" in build  # 3.0.17 warns about its own versions


def test_a_requirement_without_a_hash_stops_the_build(tmp_path):
    path = tmp_path / "requirements.txt"
    path.write_text("sympy==1.13.3 \\\n    --hash=sha256:" + "0" * 64 + "\nmpmath==1.3.0\n")
    with pytest.raises(lite.BuildError, match="mpmath==1.3.0 has no --hash=sha256 pin"):
        lite.pinned_hashes(path)


def test_a_downloaded_wheel_with_another_hash_stops_the_build(tmp_path):
    wheel = tmp_path / "comm-0.2.3-py3-none-any.whl"
    wheel.write_bytes(b"the real wheel")
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"comm==0.2.3 --hash=sha256:{sha(b'the real wheel')}\n")
    assert lite.check_wheels(tmp_path, requirements) == {"comm==0.2.3": wheel}
    wheel.write_bytes(b"a wheel someone swapped")
    with pytest.raises(lite.BuildError, match="comm-0.2.3-py3-none-any.whl: sha256 .* pinned"):
        lite.check_wheels(tmp_path, requirements)


def test_the_npm_integrity_is_npms_sha512(tmp_path):
    path = tmp_path / "hello"
    path.write_bytes(b"hello")
    # `printf hello | openssl dgst -sha512 -binary | base64`
    want = (
        "m3HSJL1i83hdltRq0+o9czGb+8KJDKra4t/3JRlnPKcjI8PZm6XBHXx6zG4UuMXaDEZjR1wuXDre9G9zvN7AQw=="
    )
    assert lite.npm_integrity(path) == "sha512-" + want


def carrier_wheel(tmp_path, files):
    path = tmp_path / "carrier-0.1-py3-none-any.whl"
    with zipfile.ZipFile(path, "w") as z:
        for name, data in files.items():
            z.writestr(lite.PACKAGES_PREFIX + name, data)
    return path


def test_a_pyodide_package_file_must_match_the_official_lock(tmp_path):
    files = {"numpy-2.0.2.whl": b"numpy for wasm", "six-1.16.0.whl": b"six"}
    carrier = carrier_wheel(tmp_path, files)
    want = {name: sha(data) for name, data in files.items()}
    out = tmp_path / "ok"
    out.mkdir()
    lite.take_package_files(carrier, want, out)
    assert (out / "numpy-2.0.2.whl").read_bytes() == b"numpy for wasm"
    want["six-1.16.0.whl"] = sha(b"another six")
    with pytest.raises(lite.BuildError, match="six-1.16.0.whl: sha256 .* official .*stopping"):
        lite.take_package_files(carrier, want, tmp_path / "ok")
    with pytest.raises(lite.BuildError, match="lacks pillow.whl"):
        lite.take_package_files(carrier, {"pillow.whl": "0" * 64}, out)


def fake_npm_tarball(tmp_path, packages):
    lock = {"info": {"version": lite.PYODIDE_VERSION}, "packages": packages}
    path = tmp_path / "pyodide.tgz"
    with tarfile.open(path, "w:gz") as tar:
        members = {f"package/{name}": b"core file" for name in lite.PYODIDE_CORE}
        members["package/pyodide-lock.json"] = json.dumps(lock).encode()
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def entry(name, file_name, data, depends=()):
    return {"name": name, "file_name": file_name, "sha256": sha(data), "depends": list(depends)}


def test_the_site_lock_keeps_only_what_the_course_needs_and_adds_its_wheels(tmp_path):
    official = {
        name: entry(name, f"{name}.whl", name.encode(), deps)
        for name, deps in {
            "micropip": ["packaging"],
            "packaging": [],
            "ssl": ["openssl"],
            "openssl": [],
            "sqlite3": [],
            "jedi": ["parso"],
            "parso": [],
            "ipython": ["traitlets", "prompt_toolkit"],  # names as the lock writes them
            "prompt-toolkit": [],
            "traitlets": [],
            "numpy": [],
            "matplotlib": ["numpy"],
            "sympy": ["mpmath"],  # replaced by the PyPI wheel
            "mpmath": [],
            "pandas": ["numpy"],  # not needed: left out
        }.items()
    }
    tarball = fake_npm_tarball(tmp_path, official)
    wheels = {}
    for name in ("sympy", "mpmath", "ipywidgets", "comm"):
        wheels[name] = tmp_path / f"{name}-1.0-py3-none-any.whl"
        wheels[name].write_bytes(f"pypi {name}".encode())
    attnlib = tmp_path / "attnlib-0.1.0-py3-none-any.whl"
    attnlib.write_bytes(b"the course")
    carrier = carrier_wheel(
        tmp_path, {e["file_name"]: e["name"].encode() for e in official.values()}
    )
    dest = tmp_path / "site" / "static" / "pyodide"
    n = lite.stage_pyodide(dest, tarball, wheels, attnlib, carrier)
    lock = json.loads((dest / "pyodide-lock.json").read_text())["packages"]
    assert n == len(lock)
    assert "pandas" not in lock and not (dest / "pandas.whl").exists()
    assert {"prompt-toolkit", "openssl", "parso", "numpy", "matplotlib"} <= set(lock)
    assert lock["sympy"]["file_name"] == "sympy-1.0-py3-none-any.whl"
    assert lock["sympy"]["sha256"] == sha(b"pypi sympy")
    assert lock["attnlib"]["depends"] == ["numpy", "sympy", "matplotlib", "ipywidgets"]
    assert lock["attnlib"]["imports"] == ["attnlib"]
    for item in lock.values():  # every file the lock names is there with its sha256
        assert sha((dest / item["file_name"]).read_bytes()) == item["sha256"], item["name"]

    # --cdn: the official files stay on Pyodide's CDN, the course's own are served here
    cdn = tmp_path / "cdn" / "static" / "pyodide"
    lite.stage_pyodide(cdn, tarball, wheels, attnlib, carrier=None)
    lock = json.loads((cdn / "pyodide-lock.json").read_text())["packages"]
    assert lock["numpy"]["file_name"] == lite.CDN + "numpy.whl"
    assert lock["attnlib"]["file_name"] == attnlib.name and (cdn / attnlib.name).exists()


def test_an_unreachable_source_says_so_in_one_line_and_offers_the_cdn():
    err = lite.Unavailable("provisa (Pyodide's package files)", "No matching distribution", True)
    assert "\n" not in str(err)
    assert "could not be fetched" in str(err) and "make lite LITE_ARGS=--cdn" in str(err)
    assert "--cdn" not in str(lite.Unavailable("the npm package", "offline"))


def test_the_site_config_keeps_every_request_on_the_site():
    kernel = lite.lite_config()["jupyter-config-data"]["litePluginSettings"][lite.PYODIDE_PLUGIN]
    assert kernel == {"pyodideUrl": "./static/pyodide/pyodide.js", "disablePyPIFallback": True}


def test_readme_and_website_link_to_the_browser_version():
    import build_site
    from colab_cell import lite_url

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"[run the course in your browser]({lite_url()})" in readme
    assert "nothing to install" in readme
    line = build_site.open_line({"kind": "exercises", "stem": "03_scoring"})
    assert f'<a href="{lite_url("exercises/03_scoring.ipynb")}">run in your browser</a>' in line
