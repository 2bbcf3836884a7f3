"""A service's dealer has no budget of material: a batch run's (dealer.service's
DEFAULT_MAX_ELEMENTS, 2^34 elements) would end a service of ~23,000 elements a decision and
its reward (measured) after some 750,000 decisions. Here the batch budget is made tiny: the
batch dealer refuses past it, the service's serves on."""

import numpy as np
import pytest

import dealer.service
from conftest import REPO
from mpcbandit.config import load_config
from mpcbandit.mpc.engine import Engine
from mpcbandit.mpc.provider import MaterialError
from mpcbandit.net.inproc import run_inproc
from mpcbandit.protocols.hannun import serve as hannun_serve
from mpcbandit.serve.loop import ServeContext, ServeState

HOLDERS = ["feature_holder.0", "feature_holder.1"]


class _Port:
    records: list = []

    def report(self, **_):
        pass


class _Backend:
    class stopping:
        @staticmethod
        def is_set():
            return False


def _holder(name, served):
    def run(chan):
        eng = Engine(chan, HOLDERS, dealer="dealer.0")
        if served:   # a service's holders tell its dealer where the stream starts and ends
            chan.send("dealer", "dealer.0", {"explore_from": 0})
        x = eng.input(np.ones(500) if name == HOLDERS[0] else None, HOLDERS[0])
        for _ in range(4):   # 4 x 1,500 elements of Beaver triples
            x = eng.mul(x, x, rescale=False)
        if served:
            chan.send("dealer", "dealer.0", {"explore_stop": 0, "by": None})
        eng.close()
    return run


def test_a_services_dealer_serves_past_the_batch_runs_budget(tmp_path, monkeypatch):
    monkeypatch.setattr(dealer.service, "DEFAULT_MAX_ELEMENTS", 2000)
    cfg = load_config(REPO / "configs/hannun-synthetic.toml")

    def batch_dealer(chan):
        return dealer.service.serve(chan, HOLDERS)

    def service_dealer(chan):
        state = ServeState(tmp_path / "dealer", "dealer.0", {}, "run")
        ctx = ServeContext(cfg, "dealer", 0, chan, _Port(), state, None, _Backend())
        return hannun_serve.run_role(ctx)

    peers = {"dealer.0": HOLDERS, HOLDERS[0]: ["dealer.0", HOLDERS[1]],
             HOLDERS[1]: ["dealer.0", HOLDERS[0]]}
    with pytest.raises(MaterialError, match="exhausted"):
        run_inproc({"dealer.0": batch_dealer, **{h: _holder(h, False) for h in HOLDERS}},
                   peers=peers)
    run_inproc({"dealer.0": service_dealer, **{h: _holder(h, True) for h in HOLDERS}},
               peers=peers)
    assert (tmp_path / "dealer" / "result.json").exists()
