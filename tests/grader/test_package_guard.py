"""A notebook that writes into the installed course package stops the run (exit 2).

Only possible without the sandbox (in it, the package is read-only: test_hostile_class's
probes), so this runs the fallback on purpose (--no-sandbox)."""

import json
import os
import uuid

import attnlib
from attnlib.cli import main

from .conftest import code, insert_after_setup, unsolved, write


def test_a_file_written_into_the_package_stops_the_class_with_exit_2(tmp_path, capsys):
    planted = attnlib.__path__[0] + f"/checkers/zz_planted_{uuid.uuid4().hex}.py"
    cell = code(f"open({planted!r}, 'w').write('PASS_EVERYTHING = True\\n')")
    write(tmp_path / "mallory" / "03_scoring.ipynb", insert_after_setup(unsolved(), cell))
    try:
        status = main(["check", "--json", "-q", "--no-sandbox", str(tmp_path / "mallory")])
        report = json.loads(capsys.readouterr().out)
    finally:
        if os.path.exists(planted):
            os.remove(planted)
    assert status == 2
    assert report["all_passed"] is False
    assert "the installed course package (attnlib) changed while grading" in report["error"]
    assert str(tmp_path / "mallory" / "03_scoring.ipynb") in report["error"]
    assert f"checkers/{os.path.basename(planted)}" in report["error"]  # names what changed
    assert "--resume" in report["error"]  # and how to go on once reinstalled
