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
    config = lite.lite_config()["jupyter-config-data"]
    kernel = config["litePluginSettings"][lite.PYODIDE_PLUGIN]
    assert kernel["pyodideUrl"] == "./static/pyodide/pyodide.js"
    assert kernel["disablePyPIFallback"] is True
    # loaded as the kernel starts: what the kernel installs itself, and the course's imports
    preload = kernel["loadPyodideOptions"]["packages"]
    assert {"ssl", "sqlite3", "jedi", "ipython", "comm"} <= set(preload)
    assert {"numpy", "sympy", "matplotlib", "ipywidgets", "attnlib"} <= set(preload)
    assert set(preload) <= set(lite.KERNEL_PACKAGES) | set(lite.EXTRA_PACKAGES) | {
        "numpy",
        "matplotlib",
    }, "a preloaded package the site's lock may not carry"
    assert config["exposeAppInBrowser"] == "true"  # keep-path.js needs window.jupyterapp


def a_wheel(path, members):
    with zipfile.ZipFile(path, "w") as z:
        for name, data in members.items():
            info = zipfile.ZipInfo(name, date_time=(2025, 6, 5, 3, 10, 0))
            z.writestr(info, data, compress_type=zipfile.ZIP_DEFLATED)
    return path


def test_a_wheel_member_is_replaced_with_its_record_line(tmp_path):
    stale = b'{"_version": 390}'
    members = {
        "matplotlib/__init__.py": b"# matplotlib",
        "matplotlib/fontlist.json": stale,
        "matplotlib-3.8.4.dist-info/RECORD": (
            f"matplotlib/__init__.py,sha256=abc,12\nmatplotlib/fontlist.json,sha256=old,{len(stale)}\n"
            "matplotlib-3.8.4.dist-info/RECORD,,\n"
        ).encode(),
    }
    wheel = a_wheel(tmp_path / "matplotlib-3.8.4-cp312-cp312-any.whl", members)
    fresh = b'{"_version": 330}'
    lite.replace_in_wheel(wheel, lite.FONTLIST, fresh)
    with zipfile.ZipFile(wheel) as z:
        assert z.read(lite.FONTLIST) == fresh
        assert z.read("matplotlib/__init__.py") == b"# matplotlib"
        assert [i.date_time for i in z.infolist()] == [(2025, 6, 5, 3, 10, 0)] * 3
        record = z.read("matplotlib-3.8.4.dist-info/RECORD").decode().splitlines()
    import base64

    digest = base64.urlsafe_b64encode(hashlib.sha256(fresh).digest()).rstrip(b"=").decode()
    assert record[1] == f"matplotlib/fontlist.json,sha256={digest},{len(fresh)}"
    assert record[0] == "matplotlib/__init__.py,sha256=abc,12"
    first = wheel.read_bytes()
    lite.replace_in_wheel(wheel, lite.FONTLIST, fresh)
    assert wheel.read_bytes() == first, "the same input gives another wheel"
    with pytest.raises(lite.BuildError, match="has no matplotlib/nothing.json"):
        lite.replace_in_wheel(wheel, "matplotlib/nothing.json", b"")


def test_the_site_lock_names_matplotlib_with_its_new_font_list(tmp_path, monkeypatch):
    """The lock's sha256 is the served wheel's after the font list went in (Pyodide checks
    it as it loads); a cached list is used without node."""
    monkeypatch.setattr(lite, "CACHE", tmp_path / "cache")
    dest = tmp_path / "pyodide"
    dest.mkdir()
    wheel = a_wheel(dest / "matplotlib.whl", {lite.FONTLIST: b"{}", "m.dist-info/RECORD": b""})
    official = sha(wheel.read_bytes())
    lock = {"packages": {"matplotlib": {"file_name": wheel.name, "sha256": official}}}
    (dest / "pyodide-lock.json").write_text(json.dumps(lock))
    cached = tmp_path / "cache" / "fontlist" / f"{official}.json"
    cached.parent.mkdir(parents=True)
    cached.write_text('{"_version": 330, "ttflist": []}')
    monkeypatch.setattr(lite, "node_fontlist", lambda _: pytest.fail("node run, cache unused"))
    assert lite.refresh_fontlist(dest) == 330
    entry = json.loads((dest / "pyodide-lock.json").read_text())["packages"]["matplotlib"]
    assert entry["sha256"] == sha(wheel.read_bytes()) != official
    with zipfile.ZipFile(wheel) as z:
        assert json.loads(z.read(lite.FONTLIST)) == {"_version": 330, "ttflist": []}


def test_the_lab_page_loads_keep_path_once(tmp_path):
    (tmp_path / "lab").mkdir()
    page = tmp_path / "lab" / "index.html"
    page.write_text("<html><head><title>x</title></head><body></body></html>")
    lite.add_keep_path(tmp_path)
    lite.add_keep_path(tmp_path)
    text = page.read_text()
    assert text.count('<script src="../keep-path.js"></script>') == 1
    assert text.index("keep-path.js") < text.index("</head>")
    assert (tmp_path / "keep-path.js").read_text() == (lite.HERE / "keep-path.js").read_text()


def test_readme_and_website_link_to_the_browser_version():
    import build_site
    from colab_cell import lite_url

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert f"[run the course in your browser]({lite_url()})" in readme
    assert "nothing to install" in readme
    line = build_site.open_line({"kind": "exercises", "stem": "03_scoring"})
    assert f'<a href="{lite_url("exercises/03_scoring.ipynb")}">run in your browser</a>' in line
