"""`serve-replay` (hannun.serve_replay.serve_log) puts each decision batch before the update it
did not see (the model version its op record names), in work linear in the log: a log of 10^5
ops, most batches out of op order, comes out in the order of the model each read, and ten
times the log costs ten times the work (Python steps counted, not timed). Before, each late
batch was inserted into the list built so far, shifting every entry after it and the places of
the updates after the version it read: the log's length per batch."""

import sys

import numpy as np
from conftest import REPO

from mpcbandit.config import load_config
from mpcbandit.files import make_private_dir, write_private
from mpcbandit.protocols.hannun import serve_replay as hannun_serve_replay
from mpcbandit.protocols.hannun.serve_replay import serve_log
from mpcbandit.serve.wal import encode_record

SETS = ["hannun.arms=4", "hannun.dims=6"]   # two feature holders of 3 features each


def _ops(rng, count: int, lag: int | None) -> list[dict]:
    """p''s op log of count ops: updates, drops, refused (empty) batches, and batches of which
    most read a model up to `lag` updates old (None: any version since the start), some no
    version (a log from before versions were named: the latest)."""
    ops, updates = [], 0
    for n in range(1, count + 1):
        u = rng.random()
        if u < 0.35:
            ops.append({"n": n, "kind": "update", "ids": [f"r{n}"]})
            updates += 1
        elif u < 0.4:
            ops.append({"n": n, "kind": "drop", "ids": [f"x{n}"]})
        elif u < 0.45:
            ops.append({"n": n, "kind": "decide", "ids": [], "model": updates})
        elif u < 0.5:
            ops.append({"n": n, "kind": "decide", "ids": [f"d{n}"]})
        else:
            back = int(rng.integers(0, (updates if lag is None else min(lag, updates)) + 1))
            ops.append({"n": n, "kind": "decide", "ids": [f"d{n}"], "model": updates - back})
    return ops


def _model_order(ops: list[dict]) -> list[tuple[str, list]]:
    """The order the replay must give, by a sort: a batch after the batches and updates before
    it in op order that made the model it read, before the next update (sorted() is stable)."""
    keyed, updates = [], 0
    for op in ops:
        if op["kind"] == "update":
            keyed.append(((updates, 1), ("reward", op["ids"])))
            updates += 1
        elif op["kind"] == "decide" and op["ids"]:
            keyed.append(((op.get("model", updates), 0), ("decide", op["ids"])))
    return [entry for _, entry in sorted(keyed, key=lambda k: k[0])]


def _service_folder(root, ops):
    """The logs serve_log reads: p''s op log, each holder's slices, p'''s rewards."""
    logs = {"feature_holder.0": [], "feature_holder.1": [], "reward_holder.0": []}
    for op in ops:
        for rid in op["ids"]:
            if op["kind"] == "decide":
                for h in ("feature_holder.0", "feature_holder.1"):
                    logs[h].append({"kind": "context", "id": rid, "features": [0.1, 0.2, 0.3]})
            elif op["kind"] == "update":
                logs["reward_holder.0"].append({"kind": "reward", "id": rid, "reward": 1.0})
    for party, records in logs.items():
        write_private(make_private_dir(root / party) / "requests.wal",
                      b"".join(map(encode_record, records)))
    write_private(make_private_dir(root / "arm_puller.0") / "ops.wal",
                  b"".join(map(encode_record, ops)))
    return root


def _python_lines(fn) -> int:
    """How many lines of Python fn runs (its work, counted the same on any machine)."""
    count = 0

    def trace(frame, event, arg):
        nonlocal count
        count += event == "line"
        return trace

    sys.settrace(trace)
    try:
        fn()
    finally:
        sys.settrace(None)
    return count


def test_a_service_log_replays_in_the_order_of_the_model_each_batch_read(tmp_path):
    cfg = load_config(REPO / "configs/hannun-synthetic.toml", SETS)
    ops = _ops(np.random.default_rng(5), 400, lag=3)
    log = serve_log(cfg, _service_folder(tmp_path, ops))
    assert [(kind, ids) for kind, ids, _ in log] == _model_order(ops)
    kinds = [kind for kind, _, _ in log]
    assert kinds.count("decide") > 100 and kinds.count("reward") > 100
    assert _late(ops)[0] > 50
    assert all(values.shape == (1, 6) for k, _, values in log if k == "decide")


def test_ten_times_the_log_is_ten_times_the_replays_work(tmp_path):
    """Batches reading any older version: each late batch used to shift every entry after the
    update it goes before (and the places of the updates after it)."""
    cfg = load_config(REPO / "configs/hannun-synthetic.toml", SETS)
    rng = np.random.default_rng(7)
    work = {}
    for count in (300, 3000):
        ops = _ops(rng, count, lag=None)
        folder = _service_folder(tmp_path / str(count), ops)
        log = serve_log(cfg, folder)   # untraced first: caches and imports are not the log's
        assert [(kind, ids) for kind, ids, _ in log] == _model_order(ops)
        work[count] = _python_lines(lambda f=folder: serve_log(cfg, f))
    assert work[3000] <= 12.5 * work[300], work


def _late(ops: list[dict]) -> tuple[int, int]:
    """(batches that read a model older than the latest, batches with ids)."""
    late = batches = updates = 0
    for op in ops:
        updates += op["kind"] == "update"
        if op["kind"] == "decide" and op["ids"]:
            batches += 1
            late += op.get("model", updates) < updates
    return late, batches


def test_a_log_of_100000_ops_most_out_of_op_order_comes_out_in_model_order():
    ops = _ops(np.random.default_rng(11), 100_000, lag=3)
    late, batches = _late(ops)
    assert late > batches / 2
    entries = ((op, ("reward" if op["kind"] == "update" else "decide", op["ids"])) for op in ops
               if op["kind"] == "update" or (op["kind"] == "decide" and op["ids"]))
    assert hannun_serve_replay.model_order(entries) == _model_order(ops)
