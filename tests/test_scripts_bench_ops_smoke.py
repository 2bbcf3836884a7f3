"""scripts/bench_ops.py at tiny size: real processes, table printed, JSON records written."""

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_bench_ops_tiny(tmp_path):
    out = tmp_path / "ops.json"
    proc = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench_ops.py"), "--quick", "--size", "16",
         "--arms", "4", "--repeats", "1", "--parties", "2", "--rounds-parties", "2,3",
         "--json", str(out)],
        capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "reciprocal" in proc.stdout and "paper" in proc.stdout
    recs = json.loads(out.read_text())
    keys = {"op", "parties", "size", "rounds", "bytes_per_party", "median_s", "plaintext_s"}
    assert all(set(r) == keys for r in recs)
    timed = {r["op"]: r for r in recs if r["parties"] == 2}
    assert set(timed) == {"add", "mul", "lt", "argmax", "reciprocal", "exp"}
    assert timed["add"]["rounds"] == 0 and timed["mul"]["rounds"] == 1
    assert timed["lt"]["rounds"] == 7 and timed["argmax"]["size"] == 4
    assert timed["mul"]["bytes_per_party"] > 2 * 16 * 8 * 2      # two masked 16-element openings
    counted = {r["op"]: r["rounds"] for r in recs if r["parties"] == 3}
    assert counted["mul"] == 2 and counted["lt"] == 7
