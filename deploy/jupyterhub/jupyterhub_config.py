"""JupyterHub for a class taking the course, on one machine: `jupyterhub -f jupyterhub_config.py`.

For a few dozen students on one server. Each student logs in with an account of
this machine (PAM, JupyterHub's default) and gets a JupyterLab of their own that
runs as their own Unix user, in their own home: file permissions keep one
student's answers from another (make homes 0700). Content arrives by nbgitpuller
links (`.venv/bin/python tools/nbgitpuller_link.py https://HUB --lesson 3`), which clone the
course into ~/attention-course on the first click and merge new commits later
without overwriting a student's changes.

The machine needs, in the environment the hub starts servers from:
`pip install jupyterhub nbgitpuller -e /path/to/the/course` (JupyterLab, the
course and its kernel come with the course), and configurable-http-proxy
(`npm install -g configurable-http-proxy`). Serve it behind HTTPS.

For a larger class (30 to 300), use Zero to JupyterHub on Kubernetes
(z2jh-values.yaml beside this file): one pod and one volume per student.

tests/test_hub.py loads this file and swaps in a dummy login and a spawner that
needs no Unix accounts, to run a class of three on 127.0.0.1.
"""

import os
from pathlib import Path

c = get_config()  # noqa: F821 (JupyterHub's config loader provides it)

HERE = Path(__file__).resolve().parent


def names(filename):
    """One user name per line of a file beside this config ('#' starts a comment)."""
    path = HERE / filename
    if not path.exists():
        return set()
    lines = (line.split("#")[0].strip() for line in path.read_text().splitlines())
    return {line for line in lines if line}


# Who may log in: roster.txt beside this file lists the students' logins, one a line, and
# teachers.txt the teachers (hub admins: they can open a student's server from /hub/admin).
# With no roster nobody but the teachers gets in.
c.Authenticator.allowed_users = names("roster.txt")
c.Authenticator.admin_users = names("teachers.txt")
c.JupyterHub.load_roles = []
c.JupyterHub.bind_url = os.environ.get("COURSE_HUB_URL", "http://127.0.0.1:8000")

# Each student's server: JupyterLab, rooted at their home, where nbgitpuller puts the course.
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.http_timeout = 120  # a first start on a loaded machine can be slow
c.Spawner.start_timeout = 120
# Limits a spawner can enforce (systemd, Kubernetes); LocalProcessSpawner only reports them.
c.Spawner.mem_limit = "1G"
c.Spawner.cpu_limit = 1.0
# A student's server stops after an hour idle (needs `pip install jupyterhub-idle-culler`).
if os.environ.get("COURSE_HUB_CULL", "1") == "1":
    try:
        import jupyterhub_idle_culler  # noqa: F401
    except ImportError:
        pass
    else:
        c.JupyterHub.services = [
            {
                "name": "idle-culler",
                "command": ["python3", "-m", "jupyterhub_idle_culler", "--timeout=3600"],
            }
        ]
        c.JupyterHub.load_roles.append(
            {
                "name": "idle-culler",
                "scopes": ["list:users", "read:users:activity", "read:servers", "delete:servers"],
                "services": ["idle-culler"],
            }
        )
