"""Every DP script runs at a tiny size and writes its CSV."""

import csv
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _script(name: str, *args: str) -> str:
    done = subprocess.run([sys.executable, str(ROOT / "scripts" / name), *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def _rows(path: Path) -> list[list[str]]:
    with path.open() as f:
        return list(csv.reader(f))


def test_fig_feducb_smoke(tmp_path):
    out = _script("fig_feducb.py", "--out", str(tmp_path), "--horizon", "12", "--agents", "2", "3",
                  "--dims", "2")
    assert "per-agent regret" in out
    assert len(_rows(tmp_path / "fig1a_regret_vs_eps.csv")) == 1 + 2 * 6
    assert len(_rows(tmp_path / "fig1b_communication.csv")) == 1 + 6 * 12
    assert _rows(tmp_path / "fig1c_dimension.csv")[1][0] == "2"


def test_fig_jdp_smoke(tmp_path):
    _script("fig_jdp.py", "--out", str(tmp_path), "--horizon", "15", "--runs", "2", "--eps", "1", "100",
            "--jobs", "1")
    rows = _rows(tmp_path / "jdp_regret_vs_eps.csv")
    assert rows[0][:6] == ["epsilon", "gaussian", "wishart", "shifted_wishart", "non_private", "random"]
    assert len(rows) == 3
    curves = _rows(tmp_path / "jdp_experiment.csv")
    # two gaps x (random + four learners) x 15 steps, every value finite
    assert len(curves) == 1 + 2 * 5 * 15
    assert {r[1] for r in curves[1:]} == {"random", "none", "gaussian", "wishart", "shifted-wishart"}
    assert all(float(r[3]) >= 0 for r in curves[1:])


def test_bench_dp_processes_smoke(tmp_path):
    out = _script("bench_dp_processes.py", "--agents", "2", "--horizon", "5", "--out", str(tmp_path))
    rows = _rows(tmp_path / "bench_dp_processes.csv")
    assert [r[0] for r in rows[1:]] == ["jdp", "feducb-central", "feducb-p2p-ring"]
    assert [r[2] for r in rows[1:]] == ["3", "3", "2"]  # processes
    assert "load average" in out
