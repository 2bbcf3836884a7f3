"""After `--resume`, a DP party re-runs the rounds between its checkpoint and the interruption,
and its peers have seen what it released in them already. Each node's noise is a function of
the party's noise key and the statistic it covers (the key kept in the checkpoint): the same
statistic is released again identically (nothing new learnt; before, unseeded noise was drawn
afresh, a second noisy copy of the same sums), and a different statistic gets other noise (a
run whose data changed after the resume; before, seeded noise was replayed and the difference
of the two releases was the difference of the data, noise-free)."""

import numpy as np
import pytest

from mpcbandit.config import load_config
from mpcbandit.dp.privatizer import augmented_gram
from mpcbandit.protocols import get_protocol
from mpcbandit.protocols.inproc_runner import run_protocol_inproc

HORIZON, EVERY, RESUMED_AT = 60, 10, 30


def with_checkpoints(protocol: str, folder, resume_from=None):
    """The protocol's roles, checkpointing every EVERY rounds into folder (or resuming)."""
    def run_role(ctx):
        ctx.checkpoint_dir, ctx.checkpoint_every, ctx.resume_from = folder, EVERY, resume_from
        ctx.run_id = "one-run"
        return get_protocol(protocol).run_role(ctx)
    return run_role


def recording(receiver: str, label: str, senders: tuple, log: list, tamper=None):
    """An observe hook: log what receiver gets from senders under label; tamper = (party,
    label, fn) replaces each body that party sends under that label by fn(body)."""
    def observe(name, chan):
        honest = chan.exchange

        def exchange(lab, send=None, recv=(), **kw):
            if tamper is not None and name == tamper[0] and lab == tamper[1] and send:
                send = {p: tamper[2](b) for p, b in send.items()}
            got = honest(lab, send=send, recv=recv, **kw)
            if name == receiver and lab == label:
                log.extend(got[p] for p in senders if p in got)
            return got
        chan.exchange = exchange
        return chan
    return observe


def same(a, b) -> bool:
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    return np.array_equal(a, b)


CASES = {  # protocol, config, overrides, who receives the releases, their label, from whom
    "jdp": ("configs/jdp-synthetic.toml", [f"jdp.horizon={HORIZON}"], "learner.0", "offer",
            ("privatizer.0",)),
    "feducb": ("configs/feducb-synthetic.toml",
               [f"feducb.horizon={HORIZON}", 'feducb.schedule="mt"'], "controller.0", "upload",
               tuple(f"agent.{i}" for i in range(4))),
}


@pytest.mark.parametrize("seeded", [False, True], ids=["fresh-noise", "seeded-noise"])
@pytest.mark.parametrize("case", sorted(CASES))
def test_a_resumed_run_releases_the_same_statistics_identically(tmp_path, case, seeded):
    config, sets, receiver, label, senders = CASES[case]
    cfg = load_config(config, [*sets, f"{case}.seeded_noise={'true' if seeded else 'false'}"])
    first, again = [], []
    run_protocol_inproc(cfg, recording(receiver, label, senders, first),
                        run_role=with_checkpoints(case, tmp_path))
    run_protocol_inproc(cfg, recording(receiver, label, senders, again),
                        run_role=with_checkpoints(case, tmp_path, resume_from=RESUMED_AT))
    assert 0 < len(again) < len(first)
    redone = first[-len(again):]  # what the interrupted run released after the checkpoint
    assert all(same(a, b) for a, b in zip(again, redone, strict=True))


@pytest.mark.parametrize("seeded", [False, True], ids=["fresh-noise", "seeded-noise"])
def test_a_different_statistic_after_a_resume_gets_other_noise(tmp_path, seeded):
    """The user of round RESUMED_AT + 1 gives another reward after the resume: the privatizer's
    next release must not differ from the interrupted run's by exactly the data's difference."""
    cfg = load_config("configs/jdp-synthetic.toml", [f"jdp.horizon={HORIZON}",
                                                      f"jdp.seeded_noise={'true' if seeded else 'false'}"])
    first, again, observed = [], [], []

    def other_reward(body):
        if not observed:  # the first observation after the resume
            observed.append((body["x"], body["y"]))
            return dict(body, y=0.123456 if body["y"] != 0.123456 else -0.5)
        return body

    run_protocol_inproc(cfg, recording("learner.0", "offer", ("privatizer.0",), first),
                        run_role=with_checkpoints("jdp", tmp_path))
    run_protocol_inproc(cfg, recording("learner.0", "offer", ("privatizer.0",), again,
                                       tamper=("env.0", "observe", other_reward)),
                        run_role=with_checkpoints("jdp", tmp_path, resume_from=RESUMED_AT))
    x, y = observed[0]
    moved = augmented_gram(x, 0.123456 if y != 0.123456 else -0.5) - augmented_gram(x, y)
    before, after = first[RESUMED_AT + 1], again[1]  # the releases that include that round
    assert same(first[RESUMED_AT], again[0])  # restored from the checkpoint: the same
    assert not np.allclose(after["vec"] - before["vec"], moved[:-1, -1], atol=1e-6), \
        "the two releases differ by exactly the data's difference: the noise was reused"
