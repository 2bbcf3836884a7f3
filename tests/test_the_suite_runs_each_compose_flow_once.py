"""Where the container stage runs a compose file for real in a session, the emulated flow that
stands in for it (tests/conftest.py's IN_CONTAINERS_TOO) is skipped; every name in that table
is a test that exists, so a renamed one cannot silently run both again."""

import subprocess
import sys
import types
from pathlib import Path

import conftest
from conftest import IN_CONTAINERS_TOO, REPO
from deadlines import deadline


class Item:
    """What the hook reads of a collected test: its file, its name, the marks added."""

    def __init__(self, nodeid: str):
        file, _, self.name = nodeid.partition("::")
        self.path, self.marks = Path(REPO / "tests" / file), []

    def add_marker(self, mark):
        self.marks.append(mark)


def skipped(nodeids, why_not, monkeypatch) -> list[str]:
    stage = types.SimpleNamespace(why_not=lambda: why_not)
    monkeypatch.setitem(sys.modules, "container_stage", stage)
    items = [Item(n) for n in nodeids]
    conftest.pytest_collection_modifyitems(None, items)
    return [f"{i.path.name}::{i.name}" for i in items if any(m.name == "skip" for m in i.marks)]


def test_an_emulated_flow_is_skipped_only_beside_its_container_test_on_a_machine_that_runs_it(
        monkeypatch):
    (emulated, real), (other, _), *_, (serve, serve_real) = IN_CONTAINERS_TOO.items()
    loopback = ("test_compose_flow_runs_without_a_container_engine.py::"
                "test_compose_flow_on_loopback[default]")
    assert loopback not in IN_CONTAINERS_TOO   # it runs wherever the file runs
    session = [emulated, real, other, serve, loopback]
    assert skipped(session, None, monkeypatch) == [emulated]
    assert skipped([*session, serve_real], None, monkeypatch) == [emulated, serve]
    assert skipped([*session, serve_real], "needs root", monkeypatch) == []  # the stage skips
    assert skipped([emulated, other, serve, loopback], None, monkeypatch) == []


def test_every_test_named_in_the_table_is_collected():
    files = sorted({name.split("::")[0] for pair in IN_CONTAINERS_TOO.items() for name in pair})
    done = subprocess.run([sys.executable, "-m", "pytest", "--collect-only", "-q", "-n0",
                           "-p", "no:cacheprovider", *(f"tests/{f}" for f in files)], cwd=REPO,
                          capture_output=True, text=True, timeout=deadline(120))
    collected = {line.removeprefix("tests/") for line in done.stdout.splitlines()}
    missing = [n for pair in IN_CONTAINERS_TOO.items() for n in pair if n not in collected]
    assert not missing, (missing, done.stdout[-2000:], done.stderr[-2000:])
