"""The compose files as the tests read them: each service with compose's `${VAR:-default}`
filled in from an environment, as `docker compose` does; and a deployment's summary compared
with the plaintext run of the same config and steps."""

import json
import os
import re
import subprocess
import sys

import pytest

from conftest import REPO, load_script
from deadlines import deadline
from hannun_inproc import SECRET_AGREEMENT, assert_matches_replay

yaml = pytest.importorskip("yaml")
make_compose = load_script("make_compose")
FILES = [name for name, _ in make_compose.EXPERIMENTS]
ENV = dict(os.environ, PYTHONPATH=str(REPO))
_VARIABLE = re.compile(r"\$\{(\w+)(?::-([^}]*))?\}")


def interpolate(value, env: dict):
    """value (a string, or a list of them) with `${VAR}` and `${VAR:-default}` filled in from
    env: the default where VAR is unset or empty."""
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    return _VARIABLE.sub(lambda m: env.get(m[1]) or m[2] or "", value)


def services(name: str, env: dict | None = None) -> dict:
    """The compose file's services, their user, command and volumes interpolated from env."""
    loaded = yaml.safe_load((REPO / name).read_text())["services"]
    for svc in loaded.values():
        for key in ("user", "command", "volumes"):
            svc[key] = interpolate(svc[key], env or {})
    return loaded


def plaintext_summary(config: str, steps: int, out, sets=(), data=None, replay=None) -> dict:
    """`run --plaintext` of config at steps (reading every party's folder of data, replaying
    the secure run in replay where given)."""
    extra = [*(("--data", str(data)) if data else ()), *(("--replay", str(replay)) if replay else ())]
    proc = subprocess.run([sys.executable, "-m", "mpcbandit", "run", config, "--plaintext",
                           "--steps", str(steps), *sets, *extra, "--out", str(out)], cwd=REPO,
                          env=ENV, capture_output=True, text=True, timeout=deadline(300))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads((out / "summary.json").read_text())


def assert_equals_plaintext(summary: dict, config: str, steps: int, tmp_path, sets=(),
                            data=None, run_dir=None) -> None:
    """The deployment's summary (of a run on the parties' folders in data, where given; its
    collect output in run_dir) against `--plaintext` on the same data. demo: the digest and
    sums; samba: its cumulative reward; hannun: the float64 replay of the exploration key its
    dealer revealed (`--replay run_dir`; docs/hannun.md, Fidelity): the same arms but for
    fixed-point near-ties."""
    assert not summary["plaintext"] and summary["steps"] == steps
    if summary["protocol"] == "hannun" and data is None:
        assert_matches_replay(summary)
        return
    replay = run_dir if summary["protocol"] == "hannun" else None
    plain = plaintext_summary(config, steps, tmp_path / "plain", sets, data, replay)
    if summary["protocol"] == "hannun":
        arms, theirs = summary["series"]["arms"], plain["series"]["arms"]
        agreement = sum(a == b for a, b in zip(arms, theirs)) / len(arms)
        assert len(arms) == len(theirs) == steps and agreement >= SECRET_AGREEMENT, agreement
    elif summary["protocol"] == "demo":
        assert (summary["digest"], summary["sum"]) == (plain["digest"], plain["sum"])
    else:
        assert summary["protocol"] == "samba"
        assert summary["cumulative_reward"] == plain["cumulative_reward"]
