"""The party's /metrics: Prometheus text through prometheus_client, one registry per service
(so several services in one process, as in tests, never mix their counts)."""

from __future__ import annotations

import time
from typing import Callable

from prometheus_client import (CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Gauge, Histogram,
                               generate_latest)

__all__ = ["ServeMetrics", "CONTENT_TYPE_LATEST", "DECISION_STAGES", "BACKEND_STAGES"]

#: decision latency buckets (seconds): from a loopback batch to the decision deadline
LATENCY_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
                   30.0)
#: where an answered decision's time goes at the party that answers it, in order: the shell's
#: queue (accepted to its batch's start: the window, and a wait for room), the backend's
#: stages (Hannun's p': the holders' word on their slices, then the decide op's rounds; O3M's
#: leader: its op's rounds), the decision's log record made durable and the answer back at the
#: HTTP side. What the request spends in HTTP comes outside mpcbandit_decision_latency_seconds.
DECISION_STAGES = ("queued", "words", "rounds", "log")
BACKEND_STAGES = ("words", "rounds")
BATCH_BUCKETS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 4096, 16384, 65536)


class ServeMetrics:
    """Every series the service exports; the shell and the backend's reports feed them."""

    def __init__(self) -> None:
        self.registry = CollectorRegistry(auto_describe=True)
        r = self.registry
        self.requests = Counter("mpcbandit_requests", "HTTP requests by route and status",
                                ["route", "status"], registry=r)
        self.decisions = Counter("mpcbandit_decisions", "decisions answered with an arm",
                                 registry=r)
        self.decisions_late = Counter("mpcbandit_decisions_late",
                                      "decisions made after their request had timed out (503)",
                                      registry=r)
        self.decision_timeouts = Counter("mpcbandit_decision_timeouts",
                                         "decision requests answered 503 after "
                                         "serve.decision_timeout_s", registry=r)
        self.decisions_by_arm = Counter("mpcbandit_decisions_by_arm", "decisions answered, by "
                                        "the arm served (the arm mix, at the arm-puller)",
                                        ["arm"], registry=r)
        self.contexts = Counter("mpcbandit_contexts", "contexts accepted", registry=r)
        self.rewards = Counter("mpcbandit_rewards", "rewards accepted", registry=r)
        # a Gauge: O3M's rewards may be negative, which a Counter cannot add
        self.reward_sum = Gauge("mpcbandit_reward_sum", "the sum of the rewards accepted: over "
                                "any window, its change over mpcbandit_rewards_total's is the "
                                "mean reward (at the party that takes rewards)", registry=r)
        self.rewards_expired = Counter("mpcbandit_rewards_expired",
                                       "decisions closed without a reward after "
                                       "serve.reward_timeout_s", registry=r)
        self.rewards_pending = Gauge("mpcbandit_rewards_pending",
                                     "decisions awaiting their reward", registry=r)
        self.batch_size = Histogram("mpcbandit_batch_size", "requests per batch handed to the "
                                    "backend", ["kind"], buckets=BATCH_BUCKETS, registry=r)
        self.decision_latency = Histogram("mpcbandit_decision_latency_seconds",
                                          "time from a decision request to its answer",
                                          buckets=LATENCY_BUCKETS, registry=r)
        self.decision_stage = Histogram("mpcbandit_decision_stage_seconds",
                                        "a decision's time in each stage at the party "
                                        "that answers it: " + ", ".join(DECISION_STAGES), ["stage"],
                                        buckets=LATENCY_BUCKETS, registry=r)
        self.op_rounds = Counter("mpcbandit_op_rounds", "communication rounds, by op (reported "
                                 "by the backend)", ["op"], registry=r)
        self.op_bytes = Counter("mpcbandit_op_bytes_sent", "bytes sent, by op (reported by the "
                                "backend)", ["op"], registry=r)
        self.op_runs = Counter("mpcbandit_op_runs", "times each op ran (reported by the "
                               "backend)", ["op"], registry=r)
        self.queue_depth = Gauge("mpcbandit_queue_depth", "requests waiting for a batch, by "
                                 "kind", ["kind"], registry=r)
        self.connections_open = Gauge("mpcbandit_connections_open", "HTTP connections open to "
                                      "this party's API", registry=r)
        self.connections_closed = Counter("mpcbandit_connections_closed", "HTTP connections the "
                                          "party closed: beyond serve.max_connections (limit), "
                                          "a request's head not within serve.read_timeout_s "
                                          "(read_timeout), silent for serve.idle_timeout_s (idle)",
                                          ["reason"], registry=r)
        self.wal_fsyncs = Gauge("mpcbandit_wal_fsyncs", "fsyncs of the write-ahead log (each "
                                "covers a group of records)", registry=r)
        self.wal_records = Gauge("mpcbandit_wal_records", "records appended to the write-ahead "
                                 "log since start", registry=r)

    def watch(self, gauge: Gauge, read: Callable[[], float]) -> None:
        """gauge reads its value from read() at every scrape."""
        gauge.set_function(read)

    def report_op(self, op: str, rounds: int, bytes_sent: int) -> None:
        """Count one run of op and its cost."""
        self.op_runs.labels(op).inc()
        self.op_rounds.labels(op).inc(rounds)
        self.op_bytes.labels(op).inc(bytes_sent)

    def observe_batch(self, kind: str, items: list) -> None:
        """A batch handed to the backend: its size and, of decisions (tickets), each one's
        wait in the queue."""
        self.batch_size.labels(kind).observe(len(items))
        if kind == "decisions":
            now = time.monotonic()
            for ticket in items:
                self.report_stage("queued", now - ticket.accepted)

    def answered(self, ticket, arm: int) -> None:
        """A decision answered with its arm: counted (and by arm), its latency and its log
        stage."""
        now = time.monotonic()
        self.decisions.inc()
        self.decisions_by_arm.labels(str(arm)).inc()
        self.report_stage("log", now - ticket.decided_at)
        self.decision_latency.observe(now - ticket.accepted)

    def report_stage(self, stage: str, seconds: float, count: int = 1, *,
                     stages: tuple[str, ...] = DECISION_STAGES) -> None:
        """count decisions spent seconds in stage (one of stages)."""
        if stage not in stages:
            raise ValueError(f"no such stage {stage!r} (stages: {', '.join(stages)})")
        series = self.decision_stage.labels(stage)
        for _ in range(count):
            series.observe(seconds)

    def text(self) -> bytes:
        """The Prometheus text exposition of every series."""
        return generate_latest(self.registry)
