"""The README's other routes: each starts Jupyter with the course folder as the server's root.

For the conda and Notebook 7 routes the test reads the command out of the README
(so the two cannot drift), starts it from the course folder exactly as written,
plus only what a test needs (a free port, no browser, no token; `--allow-root`
when running as root, as the README says), and fetches lesson 00 and lesson 03's
exercise notebook, through the path lesson 03 links to, over HTTP: the contents
API and the page a browser opens. Then it stops the server by its process group.
The conda route runs the `jupyter` of the course's .venv (conda itself is not
installed here): what is tested is the command line, which is the same.

VS Code starts no server; its instructions are checked for paths and commands
that exist. The server tests run with `make test-routes` (they need Notebook 7,
`.[browser]`); plain `make test` runs only the VS Code check.
"""

import json
import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")
BIN = Path(sys.executable).parent
SERVERS = os.environ.get("ATTNLIB_ROUTES") == "1"
LESSON = "notebooks/00_start_here.ipynb"
# route in the README -> (the command's first words, the page a browser opens for a path)
ROUTES = {
    "conda or mamba": (["jupyter", "lab"], "lab/tree/{}"),
    "Jupyter Notebook 7": ([".venv/bin/jupyter", "notebook"], "notebooks/{}"),
}


def route_text(route):
    """The README's paragraph(s) for one route: from its bold name to the next bold name."""
    match = re.search(rf"^\*\*{re.escape(route)}\*\*(.*?)(?=^\*\*|^## )", README, re.S | re.M)
    assert match, f"README.md has no **{route}** route"
    return match.group(1)


def readme_command(route):
    """The command of a route that starts Jupyter, as the README writes it (split like a shell)."""
    start, _ = ROUTES[route]
    blocks = re.findall(r"```bash\n(.*?)```", route_text(route), re.S)
    commands = [
        c.strip() for block in blocks for line in block.splitlines() for c in line.split("&&")
    ]
    found = [shlex.split(c) for c in commands if shlex.split(c)[: len(start)] == start]
    assert len(found) == 1, f"README's {route} route: {len(found)} commands start with {start}"
    return found[0]


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(url):
    try:
        with urllib.request.urlopen(url, timeout=30) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.read()


def exercise_link_of_lesson_03():
    """The path lesson 03's text links to for its exercises, relative to the course folder."""
    nb = json.loads((ROOT / "notebooks" / "03_scoring.ipynb").read_text(encoding="utf-8"))
    text = "".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "markdown")
    links = re.findall(r"\]\((\.\./exercises/[^)#]+\.ipynb)\)", text)
    assert links, "lesson 03 no longer links to its exercise notebook"
    return os.path.normpath(os.path.join("notebooks", links[0]))


@pytest.mark.skipif(not SERVERS, reason="starts Jupyter servers: `make test-routes`")
@pytest.mark.parametrize("route", list(ROUTES))
def test_route_serves_lesson_00_and_an_exercise(route, tmp_path):
    argv = readme_command(route)
    assert "--ServerApp.root_dir=." in argv, f"{route}: the server's root is not the course folder"
    assert LESSON in argv, f"{route}: the command does not open lesson 00"
    if argv[0] == "jupyter":
        argv[0] = str(BIN / "jupyter")  # conda's environment, played by the course's .venv
    port = free_port()
    argv += [f"--port={port}", "--no-browser", "--IdentityProvider.token=", "--ServerApp.password="]
    if os.getuid() == 0:
        assert "--allow-root" in README, "the README does not tell root to add --allow-root"
        argv.append("--allow-root")
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(tmp_path / "runtime"))
    log = open(tmp_path / "server.log", "w+")  # noqa: SIM115 (read back on failure)
    server = subprocess.Popen(
        argv, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT, start_new_session=True, env=env
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            assert server.poll() is None, f"{route}: the server exited with {server.returncode}"
            try:
                if get(f"{base}/api/status")[0] == 200:
                    break
            except OSError:
                pass
            time.sleep(0.5)
        else:
            pytest.fail(f"{route}: the server did not answer within 90 s")
        _, page = ROUTES[route]
        for path in (LESSON, exercise_link_of_lesson_03()):
            status, body = get(f"{base}/api/contents/{path}?content=0")
            assert status == 200, f"{route}: contents API gives {status} for {path}"
            assert json.loads(body)["type"] == "notebook", path
            status, _ = get(f"{base}/{page.format(path)}")
            assert status == 200, f"{route}: /{page.format(path)} gives {status}"
        status, _ = get(f"{base}/api/contents/solutions/03_scoring.ipynb?content=0")
        assert status == 200, f"{route}: solutions/ is not reachable ({status})"
    except AssertionError:
        log.seek(0)
        print(log.read()[-3000:])
        raise
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log.close()


def test_vs_code_instructions_name_real_paths_and_commands():
    text = " ".join(route_text("VS Code").split())
    for words in ("Open Folder", "Select Kernel", "Python Environments"):
        assert words in text, f"the VS Code route no longer says {words!r}"
    quoted = re.findall(r"`([^`]+)`", text)
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    paths = [q for q in quoted if not q.startswith("make ") and ("/" in q or q.startswith("."))]
    assert ".venv/bin/python" in paths and LESSON in paths, paths
    for q in quoted:
        if q.startswith("make "):
            target = q.split()[1]
            made = {"lab": r"^lab:", ".venv/.installed": r"^\$\(STAMP\):"}
            assert target in made and re.search(made[target], makefile, re.M), q
    assert re.search(r"^VENV\s*:=\s*\.venv$", makefile, re.M), "make no longer creates .venv"
    if any(q.startswith("my-work") for q in paths):
        lab = re.search(r"^lab:.*?(?=^\S)", makefile, re.M | re.S).group(0)
        assert "tools/workspace.py" in lab, "make lab no longer makes my-work/"
    for q in paths:
        if q.startswith((".venv", "my-work")):
            continue  # made by `make lab`; checked against the Makefile above and below
        assert (ROOT / q).exists(), f"the VS Code route names {q}, which does not exist"
