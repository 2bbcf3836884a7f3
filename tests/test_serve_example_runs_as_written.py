"""The example of docs/serve.md runs as written: the launcher's command, the three
organisations' applications (the python block, saved as serve_example.py), SIGTERM, and
`mpcbandit serve-replay` printing what the page shows."""

import os
import re
import signal
import subprocess
import sys

from conftest import REPO

DOC = REPO / "docs" / "serve.md"


def _example() -> tuple[list[str], str, str, str]:
    """The example's shell session (its commands and the outputs shown) and its script."""
    text = DOC.read_text()
    section = text[text.index("### Example: three organisations"):]
    shell, script = re.findall(r"```(?:python)?\n(.*?)```", section, re.S)[:2]
    assert script.startswith("# serve_example.py")
    commands = [ln[2:] for ln in shell.splitlines() if ln.startswith("$ ")]
    lines = shell.splitlines()
    shown_run = lines[lines.index("$ python serve_example.py") + 1]
    shown_replay = lines[-1]
    return commands, script, shown_run, shown_replay


def _mpcbandit(command: str) -> list[str]:
    words = command.split("#")[0].split()
    assert words[0] == "mpcbandit"
    return [sys.executable, "-m", "mpcbandit", *[w for w in words[1:] if w != "&"]]


def test_the_example_of_docs_serve_runs_as_written(tmp_path):
    commands, script, shown_run, shown_replay = _example()
    assert commands[1] == "python serve_example.py" and commands[2].startswith("kill %1")
    (tmp_path / "serve_example.py").write_text(script)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with open(tmp_path / "launcher.log", "wb") as log:
        service = subprocess.Popen(_mpcbandit(commands[0]), cwd=tmp_path, env=env, stdout=log,
                                   stderr=subprocess.STDOUT)
    try:
        run = subprocess.run([sys.executable, "serve_example.py"], cwd=tmp_path, env=env,
                             capture_output=True, text=True, timeout=180)
        assert run.returncode == 0, run.stderr
        visits, clicks = run.stdout.strip().split(", ")   # the clicks vary with the draws
        assert visits == shown_run.split(", ")[0] and re.fullmatch(r"\d+ clicks", clicks)
    finally:
        service.send_signal(signal.SIGTERM)   # kill %1
        code = service.wait(60)
    assert code == 0, (tmp_path / "launcher.log").read_text()
    replay = subprocess.run(_mpcbandit(commands[3]), cwd=tmp_path, env=env,
                            capture_output=True, text=True, timeout=120)
    assert replay.returncode == 0 and replay.stdout.strip() == shown_replay, replay.stdout
