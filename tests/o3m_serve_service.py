"""A real O3M service for tests (`mpcbandit serve o3m-synthetic --out DIR`: the PMG, the AP and
two passive participants, each its own process) and its organisations' applications as HTTP
clients: every participant's posts its K x d_p columns of a request, the AP's asks for the
decision and posts the reward."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from deadlines import deadline
from serve_service import Apps, Service, running

AP, PMG = "ap.0", "pmg.0"
PASSIVE = ["pp.1", "pp.2"]
PARTICIPANTS = [AP, *PASSIVE]
PARTIES = [PMG, *PARTICIPANTS]
#: a small O3M service: K = 3 arms, d = 6 features, 2 per participant
ARMS, WIDTH = 3, 2
DIMS = WIDTH * len(PARTICIPANTS)
SETTINGS = ["o3m.participants=3", "o3m.partition=[2,2,2]", f"o3m.arms={ARMS}",
            "serve.batch_ms=10", f"run.deadline_s={deadline(20):g}"]


def o3m_service(out: Path, *sets: str, resume: bool = False, ready: bool = True) -> Service:
    """A new O3M service in out (or the one there, resumed); ready: wait until every party
    says so."""
    return Service(out, *sets, resume=resume, ready=ready, config="o3m-synthetic",
                   settings=SETTINGS, parties=PARTIES)


class O3mApps(Apps):
    """The organisations' applications: every participant's posts its columns, the AP's asks
    for decisions and posts rewards (x_a . theta plus noise: any real number)."""

    decider = rewarder = AP

    def __init__(self, svc: Service, seed: int = 0):
        super().__init__(svc, seed)
        self.theta = self.rng.normal(size=DIMS)
        self.contexts_of: dict[str, np.ndarray] = {}

    def contexts(self, rid: str, parties=PARTICIPANTS) -> None:
        """Each participant's application posts its columns of every arm's context."""
        with self.lock:
            x = self.rng.normal(size=(ARMS, DIMS))
            x /= np.linalg.norm(x, axis=1, keepdims=True)
            self.contexts_of[rid] = x
        for p, name in enumerate(PARTICIPANTS):
            if name not in parties:
                continue
            cols = x[:, WIDTH * p:WIDTH * (p + 1)].ravel().tolist()
            status = self.svc.post(name, "/v1/contexts", {"id": rid, "features": cols})[0]
            if status == 202:
                with self.lock:
                    self.acked["contexts"].add((name, rid))

    def reward(self, rid: str, value: float | None = None):
        if value is None:
            with self.lock:
                value = float(self.contexts_of[rid][self.arms[rid]] @ self.theta
                              + 0.05 * self.rng.normal())
        return super().reward(rid, value)


def o3m_serving(out: Path, *sets: str, seed: int = 0):
    """A new O3M service in out and its applications, stopped at the end (`running`)."""
    return running(O3mApps(o3m_service(out, *sets), seed))
