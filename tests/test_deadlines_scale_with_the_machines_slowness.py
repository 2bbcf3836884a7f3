"""Every deadline of the suite is one of tests/deadlines.py: lengthened by the machine's slowness
measured once a session (a fixed workload's time over its time on a quiet machine), or by
MPCBANDIT_TEST_SLOWNESS when set; never shortened. A test that asserts a ratio of measured
times is marked `quiet` and skips, saying why, on a machine slower than deadlines.QUIET_ABOVE."""

import os
import subprocess
import sys
import time

import pytest

import deadlines
from conftest import REPO
from deadlines import ENV, QUIET_ABOVE, REFERENCE_S, deadline


@pytest.fixture
def fresh(monkeypatch):
    """deadlines with no factor yet (the session's comes back afterwards)."""
    kept = deadlines._slowness, deadlines.source
    deadlines.forget()
    yield monkeypatch
    deadlines._slowness, deadlines.source = kept


def test_a_deadline_is_lengthened_by_the_measured_slowness(fresh):
    fresh.delenv(ENV, raising=False)
    fresh.setattr(deadlines, "_workload", lambda: time.sleep(3 * REFERENCE_S))  # 3x as slow
    factor = deadlines.slowness()
    assert 3.0 <= factor < 4.5
    assert deadline(60) == pytest.approx(60 * factor)
    assert os.environ[ENV] == f"{factor:.2f}"  # what the workers and children read
    assert "measured" in deadlines.header() and f"x{factor:.2f}" in deadlines.header()


def test_a_machine_faster_than_the_reference_never_shortens_a_deadline(fresh):
    fresh.delenv(ENV, raising=False)
    fresh.setattr(deadlines, "_workload", lambda: None)
    assert deadlines.slowness() == 1.0 and deadline(60) == 60


def test_the_environment_variable_overrides_the_measure(fresh):
    fresh.setenv(ENV, "4")
    fresh.setattr(deadlines, "measure", lambda: pytest.fail("measured despite the variable"))
    assert deadline(60) == 240
    assert f"{ENV}=4" in deadlines.header()


@pytest.mark.parametrize("value", ["fast", "0.5", "nan", "inf"])
def test_a_slowness_below_1_or_not_a_number_is_refused_naming_the_variable(fresh, value):
    fresh.setenv(ENV, value)
    with pytest.raises(ValueError, match=ENV):
        deadlines.slowness()


def test_a_quiet_test_runs_on_a_quiet_machine_and_skips_on_a_busy_one_saying_why():
    assert deadlines.needs_quiet(1.0) is None and deadlines.needs_quiet(QUIET_ABOVE) is None
    why = deadlines.needs_quiet(QUIET_ABOVE + 1)
    assert "quiet machine" in why and f"{QUIET_ABOVE + 1:.1f}" in why and f"{ENV}=1" in why


def _session(tmp_path, test_file: str, *args, slowness: str):
    """A pytest session under the suite's conftest (its Guard) over test_file, in tmp_path."""
    (tmp_path / "test_it.py").write_text(test_file)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO / "tests"), str(REPO)]))
    env[ENV] = slowness
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "conftest", "-p",
                           "no:cacheprovider", "-rs", *args, "test_it.py"], cwd=tmp_path,
                          env=env, capture_output=True, text=True, timeout=deadline(120))


QUIET_TEST = """
import pytest
from deadlines import deadline

@pytest.mark.quiet
def test_a_ratio():
    pass

def test_a_bound():
    assert deadline(10) == 50
"""


def test_a_session_on_a_busy_machine_skips_its_quiet_tests_and_says_its_slowness(tmp_path):
    done = _session(tmp_path, QUIET_TEST, slowness="5")
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"slowness 5.00 ({ENV}=5): every deadline x5.00" in done.stdout  # the header
    assert "1 passed, 1 skipped" in done.stdout
    assert "SKIPPED" in done.stdout and "needs a quiet machine" in done.stdout


def test_the_per_test_timeout_is_lengthened_as_every_deadline(tmp_path):
    done = _session(tmp_path, """
def test_its_timeout(request):
    assert request.node.get_closest_marker("timeout").args == (30.0,)
""", "-o", "timeout=10", slowness="3")
    assert done.returncode == 0, done.stdout + done.stderr


def test_a_wait_past_its_deadline_fails_naming_what_it_waited_for(fresh):
    fresh.setenv(ENV, "2")
    with pytest.raises(AssertionError, match=r"not within 0\.1 s \(deadlines x2\.00 on this "
                                             r"machine\): the service's endpoints\.json"):
        deadlines.wait_for(lambda: False, "the service's endpoints.json", deadline(0.05))
    assert deadlines.wait_for(lambda: 7, "a value") == 7
