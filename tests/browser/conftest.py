"""Fixtures for the real-browser tests: JupyterLab, Notebook 7 and Debian's Chromium.

The server serves the repository root, as `make lab` does, with no token on a
free localhost port, in its own process group; user settings live in a temporary
folder (no news toast, no autosave, every cell attached to the page), so a run
never writes to the lessons or to the user's JupyterLab settings.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
ARTEFACTS = ROOT / "artefacts" / "browser"
CHROMIUM = os.environ.get("ATTNLIB_CHROMIUM", "/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
]
SETTINGS = {
    # no "Would you like to get notified about official Jupyter news?" toast
    "@jupyterlab/apputils-extension/notification": {"fetchNews": "false", "checkForUpdates": False},
    # running the lessons must never save them: they are committed files
    "@jupyterlab/docmanager-extension/plugin": {"autosave": False},
    # attach every cell to the page, so the test sees all prompts and outputs; start the
    # notebook's kernel without asking (a busy server can be slow to list kernels)
    "@jupyterlab/notebook-extension/tracker": {
        "windowingMode": "none",
        "autoStartDefaultKernel": True,
    },
}

NOTEBOOK7_PLUGINS = {"@jupyterlab/docmanager-extension/plugin"}

LATENCY = []  # lines for the terminal summary, filled by the tests


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url):
    with urllib.request.urlopen(url, timeout=5) as response:
        return json.loads(response.read())


def serve_jupyter(app, app_class, default_url, log_path, settings_for=SETTINGS):
    """Start a Jupyter server app on the repo root; yield its base URL; stop it and its kernels.

    ``app`` is the module to run (``jupyterlab`` or ``notebook``), ``app_class`` the name
    its options go under (``LabApp``, ``JupyterNotebookApp``).
    """
    # our own temporary folder: pytest prunes its shared ones while other runs go on
    home = Path(tempfile.mkdtemp(prefix=f"attnlib-{app}-"))
    settings = home / "settings"
    for plugin, values in settings_for.items():
        path = settings / f"{plugin}.jupyterlab-settings"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(values))
    port = free_port()
    command = [
        sys.executable,
        "-m",
        app,
        "--no-browser",
        f"--port={port}",
        "--ServerApp.ip=127.0.0.1",
        "--IdentityProvider.token=",
        "--ServerApp.password=",
        f"--ServerApp.root_dir={ROOT}",  # as `make lab`: the repo root, lesson 00 first
        f"--{app_class}.default_url={default_url}",
        f"--{app_class}.user_settings_dir={settings}",
        f"--{app_class}.workspaces_dir={home / 'workspaces'}",
    ]
    if os.geteuid() == 0:  # Jupyter refuses to run as root unless told (containers, CI)
        command.append("--allow-root")
    env = dict(os.environ, JUPYTER_RUNTIME_DIR=str(home / "runtime"))
    log = open(log_path, "w")  # noqa: SIM115 - closed at teardown
    server = subprocess.Popen(
        command, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 60
        while True:
            if server.poll() is not None:
                raise RuntimeError(f"jupyter {app} exited:\n{log_path.read_text()}")
            try:
                get_json(f"{base}/api/status")
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise RuntimeError(f"jupyter {app} did not answer within 60 s") from None
                time.sleep(0.3)
        yield base
    finally:
        try:  # shut the kernels down through the server, then stop the server's group
            for kernel in get_json(f"{base}/api/kernels"):
                request = urllib.request.Request(
                    f"{base}/api/kernels/{kernel['id']}", method="DELETE"
                )
                urllib.request.urlopen(request, timeout=10).close()
        except OSError:
            pass
        if server.poll() is None:
            os.killpg(server.pid, signal.SIGTERM)
            try:
                server.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(server.pid, signal.SIGKILL)
                server.wait()
        log.close()
        shutil.rmtree(home, ignore_errors=True)


@pytest.fixture(scope="session")
def lab(artefacts):
    """JupyterLab on the repo root, as `make lab` starts it; yields its base URL."""
    yield from serve_jupyter(
        "jupyterlab",
        "LabApp",
        "/lab/tree/notebooks/00_start_here.ipynb",
        artefacts / "server.log",
    )


@pytest.fixture(scope="session")
def notebook7(artefacts):
    """Jupyter Notebook 7 (`jupyter notebook`) on the repo root; yields its base URL."""
    # only the plugins Notebook 7 has: user settings for a plugin it lacks break its page
    settings = {k: v for k, v in SETTINGS.items() if k in NOTEBOOK7_PLUGINS}
    yield from serve_jupyter(
        "notebook", "JupyterNotebookApp", "/tree", artefacts / "server-notebook7.log", settings
    )


@pytest.fixture(scope="session")
def browser():
    if not Path(CHROMIUM).exists() and not shutil.which("chromium"):
        pytest.fail(
            f"no Chromium at {CHROMIUM}: install Debian's package (apt-get install chromium)"
        )
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture(scope="session")
def artefacts():
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    return ARTEFACTS


def pytest_terminal_summary(terminalreporter):
    if LATENCY:
        terminalreporter.section("widget latency: slider change -> updated page")
        for line in LATENCY:
            terminalreporter.write_line(line)
