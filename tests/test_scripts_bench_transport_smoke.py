"""The transport benchmark runs end to end at a tiny size and prints ours beside raw pyzmq,
measured in the same run, for 2 and 3 processes, over tcp and ipc, and with CurveZMQ."""

import json
import subprocess
import sys

from conftest import REPO


def test_bench_transport_prints_ours_beside_the_raw_floor(tmp_path):
    out = tmp_path / "t.json"
    done = subprocess.run([sys.executable, "scripts/bench_transport.py", "--quick", "--repeats", "1",
                           "--sizes", "8,1024", "--pin", "--json", str(out)], cwd=REPO, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    records = json.loads(out.read_text())
    cases = {(r["procs"], r["transport"], r["security"], r["size"]) for r in records}
    assert cases == {(n, link, sec, size) for n in (2, 3) for link in ("tcp", "ipc")
                     for sec in ("none", "curve") if n == 2 or sec == "none" for size in (8, 1024)}
    for r in records:
        assert r["ours_us"] > 0 and r["raw_us"] > 0 and r["ours_cpu_us"] > 0
        assert abs(r["ratio"] - r["ours_us"] / r["raw_us"]) < 1e-9 and r["pinned"] is True
    assert "raw us" in done.stdout and "ours cpu" in done.stdout and "pinned" in done.stdout
