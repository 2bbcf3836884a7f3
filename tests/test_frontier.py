"""`mpcbandit frontier`: the common task, every mechanism's row, and the references."""

from __future__ import annotations

import csv
import json
import math

import numpy as np
import pytest
from click.testing import CliRunner

from mpcbandit.cli import main
from mpcbandit.data.common_task import TaskStream, best_means
from mpcbandit.data.linear_task import USERS, LinearTask
from mpcbandit.data.mnist import mnist_present
from mpcbandit.data.mnist_task import MnistTask
from mpcbandit.data.tasks import make_task, mnist_dir
from mpcbandit.dp.privatizer import augmented_gram, bounded_rows
from mpcbandit.errors import ConfigError
from mpcbandit.experiments.common import shipped_config
from mpcbandit.experiments.frontier import frontier_panels, read_frontier_config
from mpcbandit.experiments.frontier_mechanisms import MECHANISMS, samba_contextual_regret
from mpcbandit.launch import run_local
from mpcbandit.shipped_configs import SHIPPED

# the quick tier (-m "not slow") leaves it out; one worker runs the module, so its module
# fixture runs once, not once per worker
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("frontier")]

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


#: the module fixture's one epsilon: each DP row at another is two more runs of its parties
#: (~2 CPU-s), and test_gaussian_rewards_run_every_mechanism_but_hannuns shows that each of
#: TINY's epsilons gets its own row
TINY_ONE_EPSILON = TINY.replace("epsilons = [1.0, 4.0]", "epsilons = [4.0]")


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    """One tiny frontier run (every mechanism, seed 3, timed at net none and lan)."""
    folder = tmp_path_factory.mktemp("frontier")
    (folder / "tiny.toml").write_text(TINY_ONE_EPSILON)
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
    assert best_means(task, USERS, 600).mean() > task.arm_means().max()  # context is worth a lot


def test_every_mechanism_reads_the_same_users_at_the_same_step():
    task = LinearTask(2, 4, 3)
    x, means, rewards = task.steps(USERS, 300)
    stream = TaskStream(task, USERS)
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
                for eps in (["4.0"] if m.dp else [""])}
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
        assert r["guarantee"] and r["each_party_sees"]
    assert "learns" not in rows[("hannun", "")]  # read as "does it learn": it is who sees what
    assert (out / "frontier.png").stat().st_size > 0 and (out / "frontier.md").exists()


def test_the_figure_draws_a_random_arms_regret_in_every_panel():
    task, _, _ = read_frontier_config(SHIPPED / "frontier.toml", paper=False)
    rows = [{"mechanism": name, "epsilon": eps, "regret": regret, "regret_std": 1.0,
             "seconds_per_step": 0.002, "lan_seconds_per_step": 0.01, "wan_seconds_per_step": None}
            for name, eps, regret in (("hannun", None, 80.0), ("jdp-gaussian", 1.0, 210.0),
                                      ("jdp-gaussian", 4.0, 205.0), ("linucb", None, 12.0))]
    panels = frontier_panels(rows, ["none", "lan"], task, random=207.8)
    assert len(panels) == 2
    for panel in panels:
        level = [c for c in panel.curves if c.label.startswith("uniformly random arm")]
        assert len(level) == 1 and list(level[0].y) == [207.8, 207.8], panel.title
        timed = [x for c in panel.curves if c is not level[0] for x in c.x]
        assert min(level[0].x) <= min(timed) and max(level[0].x) >= max(timed)  # spans the panel


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
    assert hannun["agreement_with_replay"] == 1.0


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


@pytest.mark.parametrize("old, new, error", [
    ("epsilons = [1.0, 4.0]", 'run = ["hannun", "oracle"]',
     r"bad.toml: mechanisms.run.*unknown mechanism 'oracle'"),
    ("arms = 3\n", "", r"bad.toml: task.arms.*missing"),
    ("steps = 30", "steps = 'many'", r"task.steps.*'many' is not an integer"),
    ("[task]", "[task]\nkind = 'criteo'", r"bad.toml: task.kind.*'criteo'"),
    ("[task]", "[task]\nkind = 'mnist'", r"bad.toml: task.arms.*10 arms"),
    ("[task]", "[task]\nrewards = 'poisson'", r"bad.toml: task.rewards.*'poisson'"),
])
def test_a_bad_frontier_config_names_the_key_and_the_file(tmp_path, old, new, error):
    bad = tmp_path / "bad.toml"
    bad.write_text(TINY.replace(old, new))
    with pytest.raises(ConfigError, match=error):
        read_frontier_config(bad, paper=False)


# ---------------------------------------------------------------- Gaussian rewards


def test_gaussian_rewards_are_the_linear_mean_plus_one_normal_a_step():
    bern, gauss = LinearTask(5, 4, 3), LinearTask(5, 4, 3, "gaussian", 0.25)
    xb, mb, rb = bern.steps(USERS, 2000)
    xg, mg, rg = gauss.steps(USERS, 2000)
    assert np.array_equal(xb, xg) and np.array_equal(mb, mg)  # the same users, the same means
    noise = rg - mg
    assert abs(noise.mean()) < 0.02 and abs(noise.std() - 0.25) < 0.02
    assert np.allclose(noise, noise[:, :1])  # one draw a step: every arm's reward moves with it
    stream = TaskStream(gauss, "agent1")
    x, means, rewards = gauss.steps("agent1", 50)
    for t in range(50):
        xt, mt = stream.action_set()
        assert stream.reward(mt[t % 3]) == rewards[t, t % 3]
    assert not np.array_equal(rewards, rg[:50])  # another stream, other users


def test_the_dp_privatizers_release_only_bounded_contributions():
    x = np.array([[3.0, 4.0], [0.3, 0.4]])
    rows = bounded_rows(x, np.array([2.5, -0.5]))
    assert np.allclose(rows, [[0.6, 0.8, 1.0], [0.3, 0.4, -0.5]])  # scaled onto the ball, clipped
    assert np.allclose(augmented_gram(x, np.array([2.5, -0.5])), rows.T @ rows)
    # a Gaussian reward outside [-1, 1] changes what FedUCB's agent hands its privatizer too
    from mpcbandit.bandits.feducb import FedEstimators  # noqa: PLC0415
    from mpcbandit.dp.accounting import privacy_params  # noqa: PLC0415
    params = privacy_params("none", epsilon=1.0, delta=0.1, dims=2, releases=10)
    est = FedEstimators(1, 2, params, 1)
    est.observe(np.array([0]), x[:1], np.array([2.5]))
    assert np.allclose(est.take_local(np.array([0]))[0], np.outer(rows[0], rows[0]))


def test_gaussian_rewards_run_every_mechanism_but_hannuns(tmp_path):
    cfg = tmp_path / "gauss.toml"
    cfg.write_text(TINY.replace("[task]", "[task]\nrewards = 'gaussian'\nreward_std = 0.5")
                   .replace("[mechanisms]", '[mechanisms]\nrun = ["hannun", "o3m-linucb", '
                            '"jdp-gaussian", "linucb", "egreedy"]'))
    res = CliRunner().invoke(main, ["frontier", str(cfg), "--net", "none", "--out",
                                    str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    with (tmp_path / "out" / "frontier.csv").open() as f:
        rows = {(r["mechanism"], r["epsilon"]): r for r in csv.DictReader(f)}
    assert set(rows) == {("o3m-linucb", ""), ("jdp-gaussian", "1.0"), ("jdp-gaussian", "4.0"),
                         ("linucb", "")}
    assert rows[("o3m-linucb", "")]["regret"] == rows[("linucb", "")]["regret"]  # still lossless
    table = (tmp_path / "out" / "frontier.md").read_text()
    assert "Gaussian (std 0.5) rewards" in table and "clip rewards to [-1, 1]" in table
    assert "Not run on this task: hannun (Hannun's protocol takes 0/1 rewards" in table
    summary = json.loads((tmp_path / "out" / "runs" / "linucb-seed3" / "summary.json").read_text())
    assert len(set(summary["series"]["rewards"]) - {0.0, 1.0}) > 20  # the rewards were Gaussian


# ---------------------------------------------------------------- MNIST as a bandit

needs_mnist = pytest.mark.skipif(not mnist_present(mnist_dir()),
                                 reason="MNIST not found (set MPCBANDIT_DATA)")


@needs_mnist
def test_mnist_actions_are_the_image_in_its_digits_block_and_hannun_sees_the_same_users():
    task = MnistTask(4, 6, str(mnist_dir()))
    hannun = make_task("mnist", iterations=40, dims=6, arms=10, seed=4)
    means = task.means(USERS, 40)
    assert np.array_equal(means, hannun.expected)  # the same images in the same order
    for t in range(40):
        x, m, draw = task.step(USERS, t)
        assert x.shape == (10, 60) and np.allclose(np.linalg.norm(x, axis=1), 1)
        for a in range(10):  # arm a: z in the columns j 10 + a, zero elsewhere
            assert np.allclose(x[a, a::10], hannun.contexts[t]) and np.count_nonzero(x[a]) <= 6
        assert task.reward_of(m, draw).tolist() == m.tolist() and m.sum() == 1
    assert not np.array_equal(task.means("agent0", 40), means)  # FedUCB's agents: other orders
    assert task.arm_means().sum() == pytest.approx(1) and task.arm_means().min() > 0.08


@needs_mnist
def test_the_mnist_frontier_runs_each_shape_and_o3m_stays_lossless(tmp_path):
    cfg = tmp_path / "mnist.toml"
    cfg.write_text(TINY.replace("[task]", "[task]\nkind = 'mnist'").replace("arms = 3", "arms = 10")
                   .replace("dims = 4", "dims = 6")
                   .replace("[mechanisms]", '[mechanisms]\nrun = ["hannun", "o3m-linucb", '
                            '"feducb-gaussian-beta1", "linucb"]')
                   .replace("epsilons = [1.0, 4.0]", "epsilons = [4.0]"))
    res = CliRunner().invoke(main, ["frontier", str(cfg), "--net", "none", "--out",
                                    str(tmp_path / "out")])
    assert res.exit_code == 0, res.output
    with (tmp_path / "out" / "frontier.csv").open() as f:
        rows = {r["mechanism"]: r for r in csv.DictReader(f)}
    assert set(rows) == {"hannun", "o3m-linucb", "feducb-gaussian-beta1", "linucb"}
    for name, r in rows.items():
        assert 0 <= float(r["regret"]) <= 30 and float(r["seconds_per_step"]) > 0, name
    assert rows["o3m-linucb"]["regret"] == rows["linucb"]["regret"]
    hannun = json.loads((tmp_path / "out" / "runs" / "hannun-seed3" / "summary.json").read_text())
    assert hannun["agreement_with_replay"] == 1.0
    assert "MNIST as a bandit, D = 6" in (tmp_path / "out" / "frontier.md").read_text()


@needs_mnist
def test_an_mnist_action_set_must_be_ten_blocks(tmp_path):
    with pytest.raises(ConfigError, match=r"jdp.actions.*10 arms"):
        shipped_config("jdp-synthetic.toml", ["jdp.data='mnist'", "jdp.dims=60", "jdp.actions=5"])
    with pytest.raises(ConfigError, match=r"o3m.partition.*10 x D"):
        shipped_config("o3m-synthetic.toml", ["o3m.data='mnist'", "o3m.participants=2",
                                              "o3m.partition=[25, 30]", "o3m.arms=10"])
    with pytest.raises(ConfigError, match=r"feducb.rewards.*linear task"):
        shipped_config("feducb-synthetic.toml", ["feducb.data='mnist'", "feducb.dims=60",
                                                 "feducb.actions=10", "feducb.rewards='gaussian'"])
