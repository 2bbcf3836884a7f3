"""p' (hannun.serve_puller.Puller, its serve_order.OpOrder) logs its ops in op order: a
decision batch's record once the holders said which ids they have, the ops numbered after it
once it is logged. Ids that come for an op not awaiting them (logged already, an update's,
never numbered) break that order's bookkeeping: they are refused naming the op, nothing
changed."""

import pytest

from mpcbandit.errors import ProtocolError
from mpcbandit.protocols.hannun.serve_order import OpOrder
from mpcbandit.protocols.hannun.serve_puller import Puller
from mpcbandit.serve.loop import OpLog, durable
from mpcbandit.serve.wal import read_records


@pytest.fixture
def puller(tmp_path):
    """A p' with its op log alone: how it numbers and logs ops, no party around it."""
    p = Puller.__new__(Puller)
    p.oplog = OpLog(tmp_path / "ops.wal")
    p.order = OpOrder(p.oplog, "arm_puller.0")
    yield p
    if p.oplog is not None:
        p.oplog.close()


def _logged(p) -> list[tuple]:
    """The op log's records, once every append is on disk (the log closed)."""
    path, p.oplog = p.oplog.path, p.oplog.close()
    return [(r["n"], r["kind"], r["ids"]) for r in read_records(path)[0]]


def test_ops_are_logged_in_op_order_once_each_batchs_ids_are_known(puller):
    first, second = puller.op_number("decide", model=0), puller.op_number("decide", model=0)
    puller.op_number("update", ["a"])
    assert puller.order.log_ready(second, ["c", "d"]) is None    # op 1 still awaits its ids
    durable(puller.order.log_ready(first, ["b"]))
    assert not puller.order.unlogged
    assert _logged(puller) == [(1, "decide", ["b"]), (2, "decide", ["c", "d"]),
                               (3, "update", ["a"])]


@pytest.mark.parametrize("n", [1, 3, 4], ids=["logged already", "an update", "not numbered"])
def test_ids_for_an_op_not_awaiting_them_are_refused_naming_it(puller, n):
    puller.op_number("decide", model=0)
    durable(puller.order.log_ready(1, ["a"]))
    puller.op_number("decide", model=0)     # op 2 awaits its ids
    puller.op_number("update", ["a"])       # op 3 waits for op 2
    with pytest.raises(ProtocolError, match=rf"op {n}'s ids came, but it is no op awaiting "
                                            r"them \(awaiting: \[2\]\)"):
        puller.order.log_ready(n, ["x"])
    assert [(e[0], e[2]) for e in puller.order.unlogged] == [(2, None), (3, ["a"])]
    assert _logged(puller) == [(1, "decide", ["a"])]
