"""`mpcbandit run` of every DP config: one OS process per party, summary fields present."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from deadlines import deadline

ROOT = Path(__file__).resolve().parents[1]


def _run(tmp_path: Path, config: str, *sets: str, plaintext: bool = False) -> dict:
    out = tmp_path / "out"
    cmd = [sys.executable, "-m", "mpcbandit", "run", str(ROOT / "configs" / config), "--out", str(out)]
    for s in sets:
        cmd += ["--set", s]
    if plaintext:
        cmd.append("--plaintext")
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=deadline(120))
    assert done.returncode == 0, done.stdout + done.stderr
    return json.loads((out / "summary.json").read_text())


def test_jdp_runs_learner_privatizer_env_as_processes(tmp_path):
    s = _run(tmp_path, "jdp-synthetic.toml", "jdp.horizon=40", "seed=5")
    assert sorted(p["role"] for p in s["parties"]) == ["env", "learner", "privatizer"]
    assert len({p["pid"] for p in s["parties"]}) == 3
    assert s["steps"] == 40 and len(s["series"]["arms"]) == 40 and len(s["series"]["cumulative_regret"]) == 40
    assert s["rounds_total"] == 3 * 40  # offer, choose, observe per round
    assert s["privacy"]["noise"] == "gaussian" and s["privacy"]["rho_max"] == 3 * s["privacy"]["rho_min"]
    assert s["max_nodes_per_release"] <= s["tree_depth"]
    # beta_t of Prop. 4 is at least S sqrt(rho_max) + gamma (the noise here is unseeded)
    floor = s["privacy"]["rho_max"] ** 0.5 + s["privacy"]["gamma"]
    assert len(s["series"]["beta"]) == 40 and min(s["series"]["beta"]) >= floor


def test_feducb_centralized_runs_controller_and_agents_as_processes(tmp_path):
    s = _run(tmp_path, "feducb-synthetic.toml", "feducb.horizon=30", "feducb.agents=3",
             'feducb.schedule="threshold"')
    roles = sorted(f"{p['role']}.{p['index']}" for p in s["parties"])
    assert roles == ["agent.0", "agent.1", "agent.2", "controller.0"]
    assert len({p["pid"] for p in s["parties"]}) == 4
    assert [len(a["arms"]) for a in s["agents"]] == [30, 30, 30]
    ctrl = next(p for p in s["parties"] if p["role"] == "controller")
    assert ctrl["rounds"] == 2 * 30 + 2 * s["sync_rounds"]  # flag + decision, upload + broadcast
    assert s["regret_per_agent"] == pytest.approx(s["cumulative_regret"] / 3)


def test_feducb_p2p_runs_agents_on_a_graph_as_processes(tmp_path):
    s = _run(tmp_path, "feducb-p2p.toml", "feducb.horizon=30")
    assert sorted(p["role"] for p in s["parties"]) == ["agent"] * 4
    assert all(p["rounds"] == 30 for p in s["parties"])  # one gossip exchange per round
    assert s["mode"] == "p2p" and s["graph"] == "ring" and [a["ball_size"] for a in s["agents"]] == [4, 4, 4, 4]  # gamma = 2 reaches the whole ring


def test_plaintext_flag_switches_the_noise_off(tmp_path):
    s = _run(tmp_path, "feducb-synthetic.toml", "feducb.horizon=20", plaintext=True)
    assert s["plaintext"] and s["privacy"]["noise"] == "none" and s["privacy"]["sigma_noise"] == 0


def test_bad_config_value_fails_before_any_process_naming_the_key(tmp_path):
    cmd = [sys.executable, "-m", "mpcbandit", "run", str(ROOT / "configs" / "jdp-synthetic.toml"),
           "--out", str(tmp_path / "x"), "--set", "jdp.delta=2"]
    done = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=deadline(60))
    assert done.returncode != 0 and "jdp.delta" in done.stderr
