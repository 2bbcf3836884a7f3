"""The demo secure sum through the CLI: real processes, correct result, counted rounds,
and only the output party learns the result."""

import json

import numpy as np

from mpcbandit.protocols.demo import input_vector


def test_demo_run_matches_plaintext_with_real_processes(cli, tmp_path):
    out = tmp_path / "secure"
    cli("run", "configs/demo-sum.toml", "--out", out, "--set", "demo.iterations=3",
               "--set", "demo.length=5000", "--seed", 5)
    s = json.loads((out / "summary.json").read_text())
    cli("run", "configs/demo-sum.toml", "--out", tmp_path / "plain", "--plaintext",
        "--set", "demo.iterations=3", "--set", "demo.length=5000", "--seed", 5)
    p = json.loads((tmp_path / "plain" / "summary.json").read_text())

    # correct result, equal to the plaintext reference and to the inputs' sum
    assert s["digest"] == p["digest"] and s["sum"] == p["sum"]
    want = sum(input_vector(5, i, 5000, 2) for i in range(3))
    assert s["sum"] == [int(v) for v in want]

    # real processes: one pid per party, none of them the launcher's
    pids = [q["pid"] for q in s["parties"]]
    assert len(s["parties"]) == 6 and len(set(pids)) == 6
    assert {(q["role"], q["index"]) for q in s["parties"]} == {
        ("input", 0), ("input", 1), ("input", 2), ("compute", 0), ("compute", 1), ("output", 0)}

    # rounds: inputs 1 and output 1 per iteration, computing parties 2 (share in, open out)
    rounds = {(q["role"], q["index"]): q["rounds"] for q in s["parties"]}
    assert rounds[("compute", 0)] == rounds[("compute", 1)] == 6
    assert rounds[("input", 0)] == rounds[("output", 0)] == 3
    assert s["rounds_total"] == 6 and s["rounds_per_step"] == 2.0
    by_op = {(q["role"], q["index"]): q["by_op"] for q in s["parties"]}
    assert by_op[("compute", 0)]["share"]["rounds"] == 3
    assert by_op[("compute", 0)]["open_to"]["messages"] == 3
    # each input sends one 5000-element uint64 share to each computing party per iteration
    assert by_op[("input", 0)]["share"]["bytes_sent"] >= 3 * 2 * 5000 * 8
    assert s["bytes_per_step"] >= 3 * 5000 * 8  # a computing party receives 3 shares
    assert s["steps"] == 3 and s["series"] == {}  # every key and type: test_summary_schema.py
    assert s["estimate_s"]["wan"] > s["estimate_s"]["lan"]


def test_only_the_output_party_learns_the_sum(cli, tmp_path):
    out = tmp_path / "run"
    cli("run", "configs/demo-sum.toml", "--out", out, "--set", "demo.length=64")
    results = {f.stem: json.loads(f.read_text()) for f in (out / "parties").glob("*.json")}
    assert results["output.0"]["output"]["sum"]
    for name, r in results.items():
        if name != "output.0":
            assert r["output"] == {}, name
    # the output party received from computing parties only (nothing from input holders)
    assert set(results["output.0"]["by_op"]) == {"open_to"}
    total = np.array(results["output.0"]["output"]["sum"], dtype=np.uint64)
    assert total.shape == (64,)


def test_check_prints_the_party_table(cli):
    proc = cli("check", "configs/demo-sum.toml", "--set", "network.base_port=45000")
    assert "compute              1  tcp://127.0.0.1:45004" in proc.stdout


def test_config_error_stops_before_any_process(cli, tmp_path):
    proc = cli("run", "configs/demo-sum.toml", "--out", tmp_path / "x",
               "--set", "demo.computing=1", check=False)
    assert proc.returncode != 0
    assert "demo.computing" in proc.stderr
    assert not (tmp_path / "x").exists()


def test_every_command_has_help(cli):
    for cmd in ([], ["run"], ["party"], ["check"]):
        assert "Usage" in cli(*cmd, "--help").stdout
