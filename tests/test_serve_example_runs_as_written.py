"""The examples of docs/serve.md run as written (Hannun's three organisations, O3M's platform
and its partners): the launcher's command, the organisations' applications (the python block,
saved under the name it gives itself), SIGTERM, and `mpcbandit serve-replay` printing what the
page shows."""

import os
import re
import signal
import subprocess
import sys

import pytest

from children import popen
from conftest import REPO
from deadlines import deadline

pytestmark = pytest.mark.slow  # whole examples: the quick tier (-m "not slow") leaves it out

DOC = REPO / "docs" / "serve.md"


def _example(heading: str, name: str) -> tuple[list[str], str, str, str]:
    """The example's shell session (its commands and the outputs shown) and its script."""
    text = DOC.read_text()
    section = text[text.index(heading):]
    shell, script = re.findall(r"```(?:python)?\n(.*?)```", section, re.S)[:2]
    assert script.startswith(f"# {name}")
    commands = [ln[2:] for ln in shell.splitlines() if ln.startswith("$ ")]
    lines = shell.splitlines()
    shown_run = lines[lines.index(f"$ python {name}") + 1]
    shown_replay = lines[-1]
    return commands, script, shown_run, shown_replay


def _mpcbandit(command: str) -> list[str]:
    words = command.split("#")[0].split()
    assert words[0] == "mpcbandit"
    return [sys.executable, "-m", "mpcbandit", *[w for w in words[1:] if w != "&"]]


@pytest.mark.parametrize("heading, name", [
    ("### Example: three organisations", "serve_example.py"),
    ("### Example: a video platform and four data partners", "o3m_example.py")])
def test_the_example_of_docs_serve_runs_as_written(tmp_path, heading, name):
    commands, script, shown_run, shown_replay = _example(heading, name)
    assert commands[1] == f"python {name}" and commands[2].startswith("kill %1")
    (tmp_path / name).write_text(script)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with open(tmp_path / "launcher.log", "wb") as log:
        service = popen(_mpcbandit(commands[0]), cwd=tmp_path, env=env, stdout=log,
                        stderr=subprocess.STDOUT)
    try:
        run = subprocess.run([sys.executable, name], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=deadline(180))
        assert run.returncode == 0, run.stderr
        visits, outcome = run.stdout.strip().split(", ")   # the outcome varies with the draws
        assert visits == shown_run.split(", ")[0]
        assert re.fullmatch(r"\d+ clicks|mean reward -?\d\.\d{3}", outcome), outcome
    finally:
        service.send_signal(signal.SIGTERM)   # kill %1
        code = service.wait(deadline(60))
    assert code == 0, (tmp_path / "launcher.log").read_text()
    replay = subprocess.run(_mpcbandit(commands[3]), cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=deadline(120))
    assert replay.returncode == 0 and replay.stdout.strip() == shown_replay, replay.stdout
