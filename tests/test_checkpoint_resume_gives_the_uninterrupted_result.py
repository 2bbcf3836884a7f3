"""A run killed half-way and resumed from its checkpoints ends with the result of an
uninterrupted run at the same seed."""

import json
import signal

from deadlines import deadline
from partyprocs import kill_party, party_pids, start_run, wait_for_progress
import pytest

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

ITERATIONS = 1500
# An emulated 0.2 Mbit/s link passes one of the demo's ~115-byte messages in >= 4.6 ms, so an
# iteration takes >= 4.6 ms and the run is still going (>= 5 s left) when the test has seen 300
# iterations and kills a party. (A one-way delay would not: the input holders send ahead, and
# their messages wait out their delays together.)
SLOW_NET = "one_way_ms=2,mbit_s=0.2"


def test_killed_run_resumes_to_the_same_final_result(cli, tmp_path):
    out = tmp_path / "run"
    launcher = start_run("configs/demo-sum.toml", "--seed", "9", "--set", f"demo.iterations={ITERATIONS}",
                         "--set", "demo.length=8", "--set", f"run.deadline_s={deadline(15):g}",
                         "--net", SLOW_NET, "--no-estimate", "--checkpoint-every", "25", out=out)
    # output.0's checkpoints are checked below: on a loaded machine it may report late
    wait_for_progress(out / "progress", minimum=300, parties=("output.0",))
    err, _ = kill_party(launcher, party_pids(launcher.pid)["compute.0"], signal.SIGKILL,
                        timeout=deadline(30))
    assert launcher.returncode != 0 and "compute.0" in err
    assert not (out / "summary.json").exists()
    ckpt = out / "checkpoints" / "output.0"
    assert len(list(ckpt.glob("*.ckpt"))) >= 1
    assert all((f.stat().st_mode & 0o777) == 0o600 for f in ckpt.glob("*.ckpt"))

    proc = cli("run", "--resume", out)
    assert "resuming" in proc.stdout
    resumed = json.loads((out / "summary.json").read_text())
    assert 300 <= resumed["resumed_from"] < ITERATIONS
    assert resumed["resumed_from"] % 25 == 0

    cli("run", "configs/demo-sum.toml", "--out", tmp_path / "plain", "--plaintext", "--seed", "9",
        "--set", f"demo.iterations={ITERATIONS}", "--set", "demo.length=8")
    plain = json.loads((tmp_path / "plain" / "summary.json").read_text())
    assert resumed["digest"] == plain["digest"] and resumed["sum"] == plain["sum"]


def test_resume_without_checkpoints_says_so(cli, tmp_path):
    out = tmp_path / "run"
    cli("run", "configs/demo-sum.toml", "--out", out, "--set", "demo.iterations=3")
    proc = cli("run", "--resume", out, check=False)
    assert proc.returncode != 0 and "nothing to resume" in proc.stderr


def test_run_needs_config_or_resume(cli):
    proc = cli("run", check=False)
    assert proc.returncode != 0 and "--resume" in proc.stderr
