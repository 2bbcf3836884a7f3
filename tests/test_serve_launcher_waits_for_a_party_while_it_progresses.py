"""`serve --out` waits for every party's API: on a busy machine a party is scheduled late and
imports slowly, so run.startup_s counts from its last progress (CPU used), up to STARTUP_CAP
times it in all; a late party is named with the CPU it used, and the machine's load."""

import sys

import pytest

from children import popen
from deadlines import deadline
from mpcbandit.errors import MpcBanditError
from mpcbandit.serve import local

BUSY = "import time\nend = time.monotonic() + 60\nwhile time.monotonic() < end: pass"
IDLE = "import time; time.sleep(60)"


def _party(code: str):
    return popen([sys.executable, "-c", code])


@pytest.fixture
def parties():
    procs = {}
    yield procs
    for proc in procs.values():
        proc.kill()
        proc.wait()


def test_a_party_that_keeps_progressing_is_waited_for_beyond_startup_s(tmp_path, parties,
                                                                      monkeypatch):
    monkeypatch.setattr(local, "STARTUP_CAP", 3.0)
    parties["feature_holder.0"] = _party(BUSY)
    with pytest.raises(MpcBanditError) as e:
        local._wait_listening(parties, {"feature_holder.0": tmp_path / "url"}, deadline(0.5))
    # refused at the cap, not after the 0.5 s of startup_s: it kept using CPU
    assert "feature_holder.0 (" in str(e.value) and "none for the last 0 s" in str(e.value)
    used = float(str(e.value).split("feature_holder.0 (")[1].split(" CPU-s")[0])
    assert used > 0 and "load average" in str(e.value)


def test_a_party_that_makes_no_progress_is_named_after_startup_s(tmp_path, parties):
    parties["dealer.0"] = _party(IDLE)
    parties["arm_puller.0"] = _party(IDLE)
    (tmp_path / "p.url").write_text("http://127.0.0.1:1")  # p' listens: only the dealer is late
    with pytest.raises(MpcBanditError) as e:
        local._wait_listening(parties, {"dealer.0": tmp_path / "d.url",
                                        "arm_puller.0": tmp_path / "p.url"}, 0.5)
    assert "party dealer.0 (" in str(e.value) and "arm_puller.0" not in str(e.value)
    assert "none for the last" in str(e.value)


def test_every_party_listening_gives_the_endpoints(tmp_path, parties):
    parties["dealer.0"] = _party(IDLE)
    (tmp_path / "d.url").write_text("http://127.0.0.1:8705")
    assert local._wait_listening(parties, {"dealer.0": tmp_path / "d.url"}, 0.5) == {
        "dealer.0": "http://127.0.0.1:8705"}
