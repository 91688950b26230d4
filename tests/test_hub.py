"""A class on JupyterHub: the course handed out with nbgitpuller, a check run, work kept apart.

`make test-hub` installs JupyterHub 6.1.1 and nbgitpuller 1.3.0 with the course in a
side venv (build/venv-hub) and configurable-http-proxy from npm (build/chp, the tree
tools/hub/package-lock.json pins, installed with `npm ci`),
then this test starts a hub on 127.0.0.1 from deploy/jupyterhub/jupyterhub_config.py,
with two things swapped for a test: JupyterHub's DummyAuthenticator (one shared
password) and its SimpleLocalProcessSpawner (no Unix accounts needed). Three
students log in through the login form; each clicks an nbgitpuller link made by
tools/nbgitpuller_link.py that pulls the course from a local git remote (a bare
clone of this repository, at its committed HEAD) into their home; lesson 03 is opened through the
contents API; exercise 03's first check runs in a kernel of the student's server
(over its websocket) and its printed verdict is read back; then one student's
saved answers are shown to be out of the others' reach.

What this shows about isolation, honestly: each student's server is rooted at
their own home, so another student's server cannot list or fetch the file (its
contents API refuses paths outside its root), and the hub refuses one student's
token on another's server. It does NOT show isolation between kernels:
SimpleLocalProcessSpawner runs every server as the hub's own OS user, so a
student's kernel can open another's file by its absolute path (the test checks
and prints that this is so, so the claim cannot silently go stale). A real class
gets that isolation from its spawner: on one machine, LocalProcessSpawner runs
each server as the student's own Unix user (homes 0700); on Zero to JupyterHub
(deploy/jupyterhub/z2jh-values.yaml) each student has a pod of their own with
their own volume as home, so no kernel can reach another's files at all.

Without npm's configurable-http-proxy the hub test is skipped with the reason;
the checks of the link tool and the deploy files run in plain `make test`.
"""

import importlib.util
import json
import os
import re
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.parse
import uuid
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
DEPLOY = ROOT / "deploy" / "jupyterhub"
HUB_VENV = os.environ.get("ATTNLIB_HUB")
CHP = os.environ.get("ATTNLIB_CHP") or shutil.which("configurable-http-proxy") or ""
USERS = ("alice", "bob", "carol")
# what each student types as the answer of exercise 03's first check, and the verdict it gets
ANSWERS = {"alice": "2 * 2 + 1 * 1", "bob": "...", "carol": "4"}
VERDICTS = {
    "alice": "✓ score_eat_seeds: correct.",
    "bob": "score_eat_seeds: not attempted",
    "carol": "✗ score_eat_seeds: wrong",
}


def load_tool():
    spec = importlib.util.spec_from_file_location(
        "nbgitpuller_link", ROOT / "tools" / "nbgitpuller_link.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---- the link tool and the deploy files (no hub needed) ----


# The node the course's hub test runs on: Debian 12's and Ubuntu 24.04's node is 20
NODE = (20, 0, 0)


def node_accepts(engines, node=NODE):
    """Whether an npm ``engines.node`` range ("^18 || >=20", ">= 20", ">=22.12.0") admits
    ``node``; comparators in one alternative must all hold."""

    def version(text):
        parts = [int(p) for p in re.findall(r"\d+", text)[:3]]
        return tuple(parts + [0] * (3 - len(parts)))

    def holds(comparator):
        op, number = re.fullmatch(r"(>=|<=|>|<|=|\^|~)?\s*v?([\d.x*]+)", comparator).groups()
        if number in ("*", "x"):
            return True
        want = version(number)
        if op == "^":
            return node >= want and node[0] == want[0]
        if op == "~":
            return node >= want and node[:2] == want[:2]
        return {">=": node >= want, ">": node > want, "<=": node <= want, "<": node < want}.get(
            op, node[: len(number.split("."))] == want[: len(number.split("."))]
        )

    for alternative in engines.split("||"):
        comparators = re.findall(r"(?:>=|<=|>|<|=|\^|~)?\s*v?[\d.x*]+", alternative)
        if comparators and all(holds(c.strip()) for c in comparators):
            return True
    return False


def test_the_proxys_npm_tree_is_locked_and_runs_on_node_20(tmp_path):
    """tools/hub/package-lock.json pins every package of configurable-http-proxy's tree, and
    each one runs on node 20 (5.3.0 pulled commander 15, which needs node 22.12)."""
    lock = json.loads((ROOT / "tools/hub/package-lock.json").read_text(encoding="utf-8"))
    manifest = json.loads((ROOT / "tools/hub/package.json").read_text(encoding="utf-8"))
    wanted = manifest["dependencies"]["configurable-http-proxy"]
    assert re.fullmatch(r"\d+\.\d+\.\d+", wanted), f"not an exact version: {wanted}"
    packages = {k: v for k, v in lock["packages"].items() if k}
    assert packages["node_modules/configurable-http-proxy"]["version"] == wanted
    assert lock["packages"][""]["dependencies"] == manifest["dependencies"]
    for name, entry in packages.items():
        assert entry.get("version") and entry.get("integrity", "").startswith("sha512-"), name
        engines = entry.get("engines", {}).get("node")
        if engines:
            assert node_accepts(engines), f"{name} {entry['version']} needs node {engines}"
    makefile = (ROOT / "Makefile").read_text(encoding="utf-8")
    assert "npm ci" in makefile and "tools/hub/package-lock.json" in makefile


def test_the_node_range_check_refuses_what_node_20_cannot_run():
    assert node_accepts(">= 20") and node_accepts(">=20") and node_accepts("^18 || >=20")
    assert node_accepts(">= 12.0.0") and node_accepts(">=4") and node_accepts("*")
    assert not node_accepts(">=22.12.0")  # commander 15
    assert not node_accepts("^18") and not node_accepts(">=18 <20")
    assert node_accepts("^20.0.0") and not node_accepts(">=20.1")


def test_link_reads_the_repository_from_pyproject_and_opens_the_lesson():
    tool = load_tool()
    link = tool.nbgitpuller_link("https://hub.example.edu", tool.lesson_path(3))
    url = urllib.parse.urlsplit(link)
    query = dict(urllib.parse.parse_qsl(url.query))
    assert url.path == "/hub/user-redirect/git-pull"
    assert query["repo"] == tool.repository_url() and query["branch"] == "main"
    assert query["urlpath"] == "lab/tree/attention-course/notebooks/03_scoring.ipynb"
    assert query["targetpath"] == "attention-course"
    exercises = tool.lesson_path("03", exercises=True)
    assert exercises == "exercises/03_scoring.ipynb" and (ROOT / exercises).exists()


def test_link_tool_names_a_lesson_that_does_not_exist():
    tool = load_tool()
    last = sorted(p.name[:2] for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))[-1]
    with pytest.raises(
        ValueError, match=rf"nbgitpuller_link: lesson .* 42 matches 0 .*00 to {last}"
    ):
        tool.lesson_path(42)
    with pytest.raises(ValueError, match="nbgitpuller_link: interface must be one of"):
        tool.nbgitpuller_link("https://hub", "notebooks", interface="classic")


def test_z2jh_values_pull_this_course_into_one_volume_per_student():
    yaml = pytest.importorskip("yaml")
    values = yaml.safe_load((DEPLOY / "z2jh-values.yaml").read_text(encoding="utf-8"))
    tool = load_tool()
    single = values["singleuser"]
    command = single["lifecycleHooks"]["postStart"]["exec"]["command"]
    assert command == ["gitpuller", tool.repository_url(), tool.BRANCH, tool.TARGET]
    assert single["defaultUrl"] == f"/lab/tree/{tool.TARGET}/notebooks/00_start_here.ipynb"
    assert (ROOT / "notebooks" / "00_start_here.ipynb").exists()
    assert single["storage"]["type"] == "dynamic"  # a volume per student
    assert values["cull"]["enabled"] is True
    auth = values["hub"]["config"]["JupyterHub"]["authenticator_class"]
    assert "dummy" not in auth.lower(), "a class hub must not let anyone in with any password"


# ---- the hub ----


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


TEST_CONFIG = """
# The class configuration, then what a test on 127.0.0.1 needs instead of real accounts.
load_subconfig({class_config!r})
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{hub_port}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{api_port}"
c.ConfigurableHTTPProxy.command = [{chp!r}]
c.JupyterHub.db_url = "sqlite:///{tmp}/jupyterhub.sqlite"
c.JupyterHub.cookie_secret_file = "{tmp}/cookie_secret"
c.JupyterHub.pid_file = "{tmp}/jupyterhub.pid"
c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = {password!r}
c.Authenticator.allowed_users = {users!r}
c.Authenticator.admin_users = set()
c.JupyterHub.spawner_class = "simple"
c.SimpleLocalProcessSpawner.home_dir_template = "{tmp}/home/{{username}}"
c.Spawner.cmd = [{singleuser!r}]
c.Spawner.args = {args!r}
c.Spawner.notebook_dir = ""  # SimpleLocalProcessSpawner starts each server in its home
c.Spawner.mem_limit = None
c.Spawner.cpu_limit = None
c.JupyterHub.services = [{{"name": "class-test", "api_token": {token!r}}}]
c.JupyterHub.load_roles.append(
    {{"name": "class-test", "services": ["class-test"],
      "scopes": ["admin:users", "admin:servers", "tokens", "list:users", "read:users"]}}
)
"""


class Hub:
    """A JupyterHub started for the test, in its own process group; `stop()` ends it."""

    def __init__(self, tmp):
        self.tmp = tmp
        self.port, self.token, self.password = free_port(), secrets.token_hex(16), "class-of-3"
        self.base = f"http://127.0.0.1:{self.port}"
        bin_dir = Path(HUB_VENV).resolve() / "bin"
        args = ["--allow-root"] if os.getuid() == 0 else []
        config = tmp / "test_config.py"
        config.write_text(
            TEST_CONFIG.format(
                class_config=str(DEPLOY / "jupyterhub_config.py"),
                port=self.port,
                hub_port=free_port(),
                api_port=free_port(),
                chp=str(Path(CHP).resolve()),
                tmp=tmp,
                password=self.password,
                users=set(USERS),
                singleuser=str(bin_dir / "jupyterhub-singleuser"),
                args=args,
                token=self.token,
            )
        )
        env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}", COURSE_HUB_CULL="0")
        self.log = open(tmp / "hub.log", "w+")  # noqa: SIM115 (read back on failure)
        self.process = subprocess.Popen(
            [str(bin_dir / "jupyterhub"), "-f", str(config)],
            cwd=tmp,
            env=env,
            stdout=self.log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )

    def api(self, method, path, **kw):
        import requests

        headers = {"Authorization": f"token {self.token}"}
        return requests.request(
            method, f"{self.base}/hub/api{path}", headers=headers, timeout=60, **kw
        )

    def wait(self, what, ready, timeout=120):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            assert self.process.poll() is None, f"the hub exited ({self.process.returncode})"
            try:
                if ready():
                    return
            except OSError:
                pass
            time.sleep(0.5)
        pytest.fail(f"{what}: not ready within {timeout} s")

    def tail(self):
        self.log.seek(0)
        return self.log.read()[-4000:]

    def stop(self):
        os.killpg(self.process.pid, signal.SIGTERM)  # the hub stops the students' servers
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait()
        # a server that outlived the hub (each runs in its own session): end it by its pid
        home = str(self.tmp / "home")
        for proc in Path("/proc").glob("[0-9]*"):
            try:
                if os.readlink(proc / "cwd").startswith(home):
                    os.kill(int(proc.name), signal.SIGKILL)
            except OSError:
                pass
        self.log.close()


def run_cell(base, user, token, kernel_id, code):
    """Run code in a kernel over the server's websocket; return its text output."""
    import websocket

    ws_url = base.replace("http://", "ws://") + f"/user/{user}/api/kernels/{kernel_id}/channels"
    ws = websocket.create_connection(ws_url, header=[f"Authorization: token {token}"], timeout=120)
    try:
        msg_id, session = uuid.uuid4().hex, uuid.uuid4().hex
        ws.send(
            json.dumps(
                {
                    "header": {
                        "msg_id": msg_id,
                        "session": session,
                        "username": user,
                        "msg_type": "execute_request",
                        "version": "5.3",
                    },
                    "parent_header": {},
                    "metadata": {},
                    "channel": "shell",
                    "content": {
                        "code": code,
                        "silent": False,
                        "store_history": True,
                        "user_expressions": {},
                        "allow_stdin": False,
                        "stop_on_error": True,
                    },
                }
            )
        )
        out = []
        while True:
            msg = json.loads(ws.recv())
            if msg.get("parent_header", {}).get("msg_id") != msg_id:
                continue
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream":
                out.append(content["text"])
            elif kind in ("execute_result", "display_data"):
                out.append(content["data"].get("text/plain", ""))
            elif kind == "error":
                out.append(f"{content['ename']}: {content['evalue']}")
            elif kind == "status" and content["execution_state"] == "idle":
                return "".join(out)
    finally:
        ws.close()


def login(hub, user):
    """Log in through the hub's form, as a browser does; return the session (its cookies)."""
    import requests

    session = requests.Session()
    form = session.get(f"{hub.base}/hub/login", timeout=60)
    xsrf = re.search(r'name="_xsrf"\s+value="([^"]+)"', form.text)
    assert xsrf, "no _xsrf field in the hub's login form"
    answer = session.post(
        f"{hub.base}/hub/login",
        data={"username": user, "password": hub.password, "_xsrf": xsrf.group(1)},
        allow_redirects=False,
        timeout=60,
    )
    assert answer.status_code == 302, f"{user}: login gave {answer.status_code}"
    assert any(
        c.name == "jupyterhub-session-id" or c.name.startswith("jupyterhub-hub-login")
        for c in session.cookies
    )
    wrong = requests.post(
        f"{hub.base}/hub/login",
        data={"username": user, "password": "not-the-password", "_xsrf": xsrf.group(1)},
        cookies={"_xsrf": session.cookies.get("_xsrf", "")},
        allow_redirects=False,
        timeout=60,
    )
    assert wrong.status_code != 302, "the hub let a wrong password in"
    return session


def pull(hub, user, token, link):
    """What the git-pull page does in a browser: read the pull's event stream until it ends."""
    import requests

    query = urllib.parse.urlsplit(link).query
    url = f"{hub.base}/user/{user}/git-pull/api?{query}"
    events = []
    with requests.get(
        url, headers={"Authorization": f"token {token}"}, stream=True, timeout=180
    ) as r:
        assert r.status_code == 200, f"{user}: git-pull api gave {r.status_code}"
        for line in r.iter_lines(decode_unicode=True):
            if line and line.startswith("data: "):
                event = json.loads(line[len("data: ") :])
                events.append(event)
                if event.get("phase") in ("finished", "error"):
                    break
    assert events and events[-1]["phase"] == "finished", f"{user}: {events[-3:]}"


@pytest.fixture
def hub(tmp_path):
    if not HUB_VENV:
        pytest.skip("starts JupyterHub: `make test-hub`")
    if not CHP or not Path(CHP).exists():
        pytest.skip(
            "configurable-http-proxy could not be installed from npm (`make test-hub` runs "
            "`npm ci` of tools/hub/package-lock.json in build/chp)"
        )
    hub = Hub(tmp_path)
    try:
        hub.wait("the hub", lambda: hub.api("GET", "/").status_code == 200)
        yield hub
    except BaseException:
        print(hub.tail())
        raise
    finally:
        hub.stop()


def test_a_class_of_three_pulls_the_course_runs_a_check_and_keeps_work_apart(hub, tmp_path):
    import requests

    tool = load_tool()
    remote = tmp_path / "course.git"  # the local git remote: a bare clone of this repository
    subprocess.run(["git", "clone", "--quiet", "--bare", str(ROOT), str(remote)], check=True)
    # the commit under test as a branch of the remote (a CI checkout may be a detached HEAD)
    branch = "class-test"
    subprocess.run(
        [
            "git",
            "--git-dir",
            str(remote),
            "fetch",
            "--quiet",
            str(ROOT),
            f"HEAD:refs/heads/{branch}",
        ],
        check=True,
    )
    link = tool.nbgitpuller_link(hub.base, tool.lesson_path(3), repo=remote.as_uri(), branch=branch)
    lesson = f"{tool.TARGET}/{tool.lesson_path(3)}"
    exercise = f"{tool.TARGET}/{tool.lesson_path(3, exercises=True)}"
    tokens, kernels, outputs = {}, {}, {}
    try:
        for user in USERS:
            session = login(hub, user)
            assert hub.api("POST", f"/users/{user}/server").status_code in (201, 202)
            hub.wait(
                f"{user}'s server",
                lambda u=user: (
                    hub.api("GET", f"/users/{u}").json()["servers"].get("", {}).get("ready")
                ),
            )
            # the student clicks the link: the hub sends them to their own server's git-pull page
            page = session.get(link, timeout=120)
            assert page.status_code == 200 and f"/user/{user}/git-pull" in page.url, (
                page.status_code,
                page.url,
            )
            assert "nbgitpuller" in page.text.lower()
            tokens[user] = hub.api(
                "POST", f"/users/{user}/tokens", json={"expires_in": 900}
            ).json()["token"]
            pull(hub, user, tokens[user], link)
            auth = {"Authorization": f"token {tokens[user]}"}
            base = f"{hub.base}/user/{user}/api"
            # lesson 03 is in the student's home, and opens
            assert (tmp_path / "home" / user / lesson).is_file()
            opened = requests.get(f"{base}/contents/{lesson}", headers=auth, timeout=60)
            assert opened.status_code == 200, opened.status_code
            cells = opened.json()["content"]["cells"]
            heading = next(c["source"] for c in cells if c["cell_type"] == "markdown")
            assert re.match(r"# 03\b", heading), heading.splitlines()[0]
            # exercise 03: the setup cell, then the first check with this student's answer
            nb = requests.get(f"{base}/contents/{exercise}", headers=auth, timeout=60).json()[
                "content"
            ]
            code = [
                c
                for c in nb["cells"]
                if c["cell_type"] == "code" and c.get("id") != "colab-install"
            ]
            check = next(c for c in code if 'check("score_eat_seeds"' in c["source"])
            assert check["source"].startswith("score_eat_seeds = ..."), (
                f"{user}'s exercise 03 already holds an answer: another student's work shows"
            )
            check["source"] = check["source"].replace("= ...", f"= {ANSWERS[user]}", 1)
            started = requests.post(
                f"{base}/kernels",
                headers=auth,
                json={"name": "python3", "path": os.path.dirname(exercise)},
                timeout=120,
            )
            assert started.status_code == 201, started.text
            kernels[user] = started.json()["id"]
            setup = run_cell(hub.base, user, tokens[user], kernels[user], code[0]["source"])
            assert "Error" not in setup, setup
            outputs[user] = run_cell(hub.base, user, tokens[user], kernels[user], check["source"])
            print(f"{user}: {outputs[user].strip()}")
            assert VERDICTS[user] in outputs[user], (user, outputs[user])
            # the student saves, as JupyterLab does: the notebook with the answer
            saved = requests.put(
                f"{base}/contents/{exercise}",
                headers=auth,
                json={"type": "notebook", "format": "json", "content": nb},
                timeout=60,
            )
            assert saved.status_code == 200, saved.text

        # alice's answers are in her home only
        alice_file = tmp_path / "home" / "alice" / exercise
        assert "score_eat_seeds = 2 * 2 + 1 * 1" in alice_file.read_text(encoding="utf-8")
        note = {"type": "file", "format": "text", "content": "alice's own notes"}
        alice = {"Authorization": f"token {tokens['alice']}"}
        bob = {"Authorization": f"token {tokens['bob']}"}
        assert (
            requests.put(
                f"{hub.base}/user/alice/api/contents/notes.txt",
                headers=alice,
                json=note,
                timeout=60,
            ).status_code
            == 201
        )
        assert not (tmp_path / "home" / "bob" / "notes.txt").exists()
        bobs = requests.get(
            f"{hub.base}/user/bob/api/contents/{exercise}", headers=bob, timeout=60
        ).json()
        bobs_check = [
            c for c in bobs["content"]["cells"] if 'check("score_eat_seeds"' in c["source"]
        ]
        assert "2 * 2 + 1 * 1" not in bobs_check[0]["source"], "bob's copy holds alice's answer"
        # bob's server cannot fetch alice's files: not by name, not by climbing out of its root
        for path in ("notes.txt", "..%2Falice%2Fnotes.txt", "%2E%2E/alice/notes.txt"):
            got = requests.get(f"{hub.base}/user/bob/api/contents/{path}", headers=bob, timeout=60)
            assert got.status_code in (400, 403, 404), (path, got.status_code)
            assert "alice's own notes" not in got.text
        # and the hub does not let bob's token into alice's server
        got = requests.get(f"{hub.base}/user/alice/api/contents/notes.txt", headers=bob, timeout=60)
        assert got.status_code == 403 and "alice's own notes" not in got.text, got.status_code
        got = requests.get(
            f"{hub.base}/user/alice/api/contents/notes.txt", headers=alice, timeout=60
        )
        assert got.status_code == 200 and got.json()["content"] == "alice's own notes"
        # the limit of this spawner, checked so the docstring cannot go stale: every server runs
        # as the hub's OS user, so bob's *kernel* can read alice's file by its absolute path
        absolute = tmp_path / "home" / "alice" / "notes.txt"
        seen = run_cell(
            hub.base, "bob", tokens["bob"], kernels["bob"], f"print(open({str(absolute)!r}).read())"
        )
        assert "alice's own notes" in seen
        print(
            "SimpleLocalProcessSpawner: bob's kernel can read alice's file by absolute path (one OS user)"
        )
    except BaseException:
        print(hub.tail())
        raise


def test_the_teaching_pages_commands_print_the_links():
    page = (ROOT / "docs" / "teaching.md").read_text(encoding="utf-8")
    section = page.split("## Teaching a class on JupyterHub", 1)[1].split("\n## ", 1)[0]
    commands = [
        line.split("#")[0].split()
        for block in re.findall(r"```bash\n(.*?)```", section, re.S)
        for line in block.splitlines()
        if line.startswith(".venv/bin/python tools/nbgitpuller_link.py")
    ]
    assert len(commands) == 2, commands
    tool = load_tool()
    for argv in commands:
        out = subprocess.run(
            [sys.executable, *argv[1:]], cwd=ROOT, capture_output=True, text=True, check=True
        ).stdout.strip()
        query = dict(urllib.parse.parse_qsl(urllib.parse.urlsplit(out).query))
        want = tool.lesson_path(3, exercises="--exercises" in argv)
        assert query["urlpath"] == f"lab/tree/{tool.TARGET}/{want}", out
    for path in re.findall(r"`(deploy/jupyterhub/[^`]+)`", section):
        assert (ROOT / path).is_file(), path


def test_the_z2jh_image_command_builds_the_binder_image_with_nbgitpuller():
    """The repo2docker command written in z2jh-values.yaml, as a dry run (no Docker needed):
    the Dockerfile it would build ends by installing the nbgitpuller the hub test uses."""
    import shlex

    repo2docker = os.environ.get("ATTNLIB_REPO2DOCKER") or shutil.which("repo2docker")
    side = ROOT / "build" / "venv-repo2docker" / "bin" / "repo2docker"
    repo2docker = repo2docker or (str(side) if side.exists() else None)
    if not repo2docker:
        pytest.skip("needs repo2docker: `make test-binder` installs it in build/venv-repo2docker")
    text = (DEPLOY / "z2jh-values.yaml").read_text(encoding="utf-8")
    match = re.search(r"^#\s+(repo2docker .*?)\s\.\n", text, re.S | re.M)
    assert match, "z2jh-values.yaml no longer shows the repo2docker command"
    argv = shlex.split(re.sub(r"\\\n#\s*", " ", match.group(1)))
    pinned = re.search(r"'nbgitpuller==([\d.]+)'", (ROOT / "Makefile").read_text()).group(1)
    assert f"nbgitpuller=={pinned}" in " ".join(argv), "the image and the hub test differ"
    yaml = pytest.importorskip("yaml")
    image = yaml.safe_load(text)["singleuser"]["image"]
    assert argv[argv.index("--image-name") + 1] == f"{image['name']}:{image['tag']}"
    dry = subprocess.run(
        [repo2docker, *argv[1:], "--no-build", "--debug", "."],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
    )
    dockerfile = dry.stdout + dry.stderr
    assert dry.returncode == 0, dockerfile[-2000:]
    assert f"RUN python -m pip install --no-cache-dir nbgitpuller=={pinned}" in dockerfile
    assert "environment.yml" in dockerfile  # built from binder/, as Binder builds it
