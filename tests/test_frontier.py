"""`mpcbandit frontier`: the common task, every mechanism's row, and the references."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from mpcbandit.cli import main
from mpcbandit.data.linear_task import USERS, LinearStream, LinearTask
from mpcbandit.data.tasks import make_task
from mpcbandit.errors import ConfigError
from mpcbandit.experiments.common import shipped_config
from mpcbandit.experiments.frontier import read_frontier_config
from mpcbandit.experiments.frontier_mechanisms import MECHANISMS, samba_contextual_regret
from mpcbandit.launch import run_local

TINY = """
[task]
dims = 4
arms = 3
steps = 30
seeds = [3]
holders = 2
agents = 2
timing_steps = 3
[mechanisms]
epsilons = [1.0, 4.0]
"""


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """One tiny frontier run (every mechanism, seed 3, timed at net none and lan)."""
    folder = tmp_path_factory.mktemp("frontier")
    (folder / "tiny.toml").write_text(TINY)
    res = CliRunner().invoke(main, ["frontier", str(folder / "tiny.toml"), "--net", "none,lan",
                                    "--out", str(folder / "out")])
    assert res.exit_code == 0, res.output
    with (folder / "out" / "frontier.csv").open() as f:
        rows = list(csv.DictReader(f))
    return folder / "out", {(r["mechanism"], r["epsilon"]): r for r in rows}


def test_the_task_has_bounded_features_and_means_linear_in_them():
    task = LinearTask(7, 6, 4)
    x, means, rewards = task.steps(USERS, 600)
    assert x.shape == (600, 4, 6) and np.linalg.norm(x, axis=-1).max() <= 1 + 1e-12
    assert np.allclose(x[..., 0], 1 / np.sqrt(2))  # the constant feature
    assert np.allclose(means, x @ task.theta) and abs(np.linalg.norm(task.theta) - 1) < 1e-12
    assert means.min() >= 0 and means.max() <= 1
    assert set(np.unique(rewards)) <= {0.0, 1.0}
    # the arms' means over users are what SAMBA plays; the users' average approaches them
    assert np.abs(means.mean(0) - task.arm_means()).max() < 0.02
    assert task.best_means(USERS, 600).mean() > task.arm_means().max()  # context is worth something


def test_every_mechanism_reads_the_same_users_at_the_same_step():
    task = LinearTask(2, 4, 3)
    x, means, rewards = task.steps(USERS, 300)
    stream = LinearStream(2, 4, 3, USERS)
    for t in range(300):
        xt, mt = stream.action_set()
        assert np.array_equal(xt, x[t]) and np.array_equal(mt, means[t])
        a = t % 3
        assert stream.reward(mt[a]) == rewards[t, a]
    hannun = make_task("linear", iterations=300, dims=12, arms=3, seed=2)
    assert np.allclose(hannun.contexts, x.reshape(300, 12) / np.sqrt(3))
    assert np.array_equal(hannun.rewards, rewards) and np.array_equal(hannun.expected, means)


def test_a_linear_hannun_context_must_hold_every_arm():
    with pytest.raises(ConfigError, match="hannun.dims"):
        shipped_config("hannun-synthetic.toml", ["hannun.data='linear'", "hannun.arms=3",
                                                 "hannun.dims=10"])


def test_frontier_writes_every_mechanism_with_finite_measured_values(tiny):
    out, rows = tiny
    expected = {(m.name, eps) for m in MECHANISMS.values()
                for eps in (["1.0", "4.0"] if m.dp else [""])}
    assert set(rows) == expected
    for (name, _), r in rows.items():
        private = not MECHANISMS[name].plaintext
        assert r["private"] == str(private), name
        for key in ("regret", "seconds_per_step", "rounds_per_step", "bytes_per_step"):
            assert math.isfinite(float(r[key])), (name, key)
        assert float(r["regret"]) >= 0 and float(r["seconds_per_step"]) > 0
        if private:
            assert float(r["rounds_per_step"]) > 0 and float(r["bytes_per_step"]) > 0, name
            assert float(r["lan_seconds_per_step"]) > 0, name
        assert r["wan_seconds_per_step"] == ""  # not asked for: not measured, not estimated
        assert r["guarantee"] and r["learns"]
    assert (out / "frontier.png").stat().st_size > 0 and (out / "frontier.md").exists()


def test_references_equal_the_plaintext_runs_and_the_lossless_rows(tiny, tmp_path):
    out, rows = tiny
    task, _, _ = read_frontier_config(out.parent / "tiny.toml", paper=False)
    for name in ("linucb", "egreedy"):
        m = MECHANISMS[name]
        cfg = shipped_config(m.config, m.overrides(task, 3, task.steps, None) + ["seed=3"])
        plain = run_local(cfg, tmp_path / name, plaintext=True, echo=lambda *_: None)
        assert float(rows[(name, "")]["regret"]) == pytest.approx(plain["cumulative_regret"])
    # O3M is lossless: its secure run is the central LinUCB reference, step for step
    assert rows[("o3m-linucb", "")]["regret"] == rows[("linucb", "")]["regret"]
    # Hannun is exact: its secure run pulled the float64 replay's arms at every step
    hannun = json.loads((out / "runs" / "hannun-seed3" / "summary.json").read_text())
    assert hannun["agreement_with_plaintext"] == 1.0


def test_samba_is_charged_the_contextual_oracle(tiny):
    out, rows = tiny
    task, _, _ = read_frontier_config(out.parent / "tiny.toml", paper=False)
    s = json.loads((out / "runs" / "samba-ucb-seed3" / "summary.json").read_text())
    regret = samba_contextual_regret(s, task, 3)
    assert float(rows[("samba-ucb", "")]["regret"]) == pytest.approx(regret)
    # by hand: SAMBA's arm i is the i-th best arm on average; each step is charged its users' best
    lt = LinearTask(3, task.dims, task.arms)
    ranked = np.sort(lt.arm_means())[::-1]
    best = lt.steps(USERS, task.steps)[1].max(axis=1)
    assert regret == pytest.approx(float(np.sum(best - ranked[s["series"]["arms"]])))
    assert regret > 0


def test_a_bad_frontier_config_names_the_key_and_the_file(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text(TINY.replace('epsilons = [1.0, 4.0]', 'run = ["hannun", "oracle"]'))
    with pytest.raises(ConfigError, match=r"bad.toml: mechanisms.run.*unknown mechanism 'oracle'"):
        read_frontier_config(bad, paper=False)
    bad.write_text(TINY.replace("arms = 3\n", ""))
    with pytest.raises(ConfigError, match=r"bad.toml: task.arms.*missing"):
        read_frontier_config(bad, paper=False)
    bad.write_text(TINY.replace("steps = 30", "steps = 'many'"))
    with pytest.raises(ConfigError, match=r"task.steps.*'many' is not an integer"):
        read_frontier_config(bad, paper=False)
