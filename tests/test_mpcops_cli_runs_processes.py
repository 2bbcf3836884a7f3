"""The mpcops protocol through the CLI: computing parties and the dealer as real processes."""

import json
import subprocess
import sys
from pathlib import Path

from deadlines import deadline

ROOT = Path(__file__).resolve().parents[1]


def test_cli_runs_ops_with_three_parties_and_a_dealer(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "mpcbandit", "run", "configs/mpc-ops.toml", "--out", str(tmp_path),
         "--set", "mpcops.parties=3", "--set", "mpcops.size=12", "--set", "mpcops.arms=[5]",
         "--set", "mpcops.repeats=1"],
        capture_output=True, text=True, timeout=deadline(120), cwd=ROOT)
    assert proc.returncode == 0, proc.stderr + proc.stdout
    s = json.loads((tmp_path / "summary.json").read_text())
    assert len(s["parties"]) == 4                                  # 3 computing + dealer
    ops = {r["op"]: r for r in s["ops"]}
    assert ops["mul"]["rounds"] == 2 and ops["lt"]["rounds"] == 7
    assert ops["argmax"]["rounds"] <= 2 * (7 + 2) + 1
    for op in ("add", "mul", "lt", "argmax"):
        assert ops[op]["max_err"] <= 1e-4, op                      # opened results match numpy
    assert ops["reciprocal"]["max_err"] <= 1e-2
    dealer = next(p for p in s["parties"] if p["role"] == "dealer")
    assert dealer["by_op"]["dealer"]["bytes_sent"] > 0


def test_cli_rejects_local_truncation_for_three_parties(tmp_path):
    proc = subprocess.run(
        [sys.executable, "-m", "mpcbandit", "run", "configs/mpc-ops.toml", "--out", str(tmp_path),
         "--set", "mpcops.parties=3", "--set", "mpcops.trunc=local"],
        capture_output=True, text=True, timeout=deadline(60), cwd=ROOT)
    assert proc.returncode != 0
    assert "mpcops.trunc" in proc.stderr
