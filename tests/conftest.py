import compileall
import importlib.util
import os
import shutil
import subprocess
import sys
import tempfile
import types
import uuid
from pathlib import Path

import pytest

import children
import deadlines
from deadlines import deadline

REPO = Path(__file__).resolve().parents[1]

# tests run in parallel (pytest-xdist): each worker, and every run it starts, picks its free
# ports from a range of its own, so two workers never pick the same ports at the same moment
_WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")
if _WORKER.startswith("gw") and _WORKER[2:].isdigit():
    _low = 10000 + 2500 * (int(_WORKER[2:]) % 8)
    os.environ["MPCBANDIT_PORTS"] = f"{_low}-{_low + 2500}"


# every test and every party process it starts does numpy on small arrays: OpenBLAS's worker
# threads only spin there (~0.03-0.1 CPU-s a process at its start, most of a party's start-up
# beside the imports; the suite starts thousands), so one thread each unless asked otherwise
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
# pytest keeps each test module's assertion-rewritten bytecode in tests/__pycache__ and reads it
# back; where PYTHONDONTWRITEBYTECODE is set it rewrote every module in every worker of every run
# (~2.7 CPU-s a worker, before its first test). Written, as the package's own is (below)
sys.dont_write_bytecode = False


def pytest_configure(config):
    """Compile the package's bytecode once, before the workers start: the suite starts a
    `python -m mpcbandit` process for every party of every run, and where
    PYTHONDONTWRITEBYTECODE is set (as on our machines) each one would compile every module
    from source again (~0.1 s of CPU a process). Python reads cached files where it may not
    write them. The session's guard (Guard: its id in every process it starts, the machine's
    slowness measured, no process left running) is registered first."""
    config.pluginmanager.register(Guard(config), "mpcbandit-guard")
    if not hasattr(config, "workerinput"):
        for package in ("mpcbandit", "dealer", "parties"):
            compileall.compile_dir(REPO / package, quiet=1)
        # fitted arrays (MNIST's PCA) in a folder of the suite's own, shared by its workers
        if "MPCBANDIT_CACHE" not in os.environ:
            config._mpcbandit_cache = tempfile.mkdtemp(prefix="mpcbandit-cache-")
            os.environ["MPCBANDIT_CACHE"] = config._mpcbandit_cache


class Guard:
    """The session's processes and deadlines. In the controller: a new session id in
    MPCBANDIT_TEST_SESSION, inherited by the workers and every process they start; the
    machine's slowness measured (deadlines.py) and put in MPCBANDIT_TEST_SLOWNESS for them
    (unless set already); at the end, every process still carrying the id killed and named, and
    the session failed. In every process running tests: what a test started with
    children.popen stopped when it ends; `quiet` tests skipped on a busy machine; the per-test
    timeout lengthened by the slowness as every deadline is."""

    def __init__(self, config):
        self.config = config
        self.controller = not hasattr(config, "workerinput")
        self.workers: set[int] = set()
        self.saved = {k: os.environ.get(k) for k in (children.SESSION_ENV, deadlines.ENV)}
        if self.controller:
            self.session = uuid.uuid4().hex
            outer = os.environ.get(children.SESSION_ENV, "")  # a session a test started
            os.environ[children.SESSION_ENV] = f"{outer} {self.session}".strip()
            deadlines.forget()  # a session of its own: the environment's value, or a new measure
            try:
                deadlines.slowness()
            except ValueError as e:
                raise pytest.UsageError(str(e)) from None
        else:  # the controller leaves out each worker's pid from its leftovers
            config.workeroutput["pid"] = os.getpid()

    def pytest_report_header(self, config):
        return deadlines.header()

    def pytest_terminal_summary(self, terminalreporter):
        if self.controller and terminalreporter.verbosity < 0:  # -q: no header, so here
            terminalreporter.write_line(deadlines.header())

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        pid = getattr(node, "workeroutput", {}).get("pid")
        if pid:
            self.workers.add(pid)

    def pytest_collection_modifyitems(self, config, items):
        why = deadlines.needs_quiet()
        timeout = getattr(config, "_env_timeout", None)  # pytest-timeout's, from ini or option
        for item in items:
            if why and item.get_closest_marker("quiet"):
                item.add_marker(pytest.mark.skip(reason=why))
            if timeout and deadlines.slowness() > 1 and not item.get_closest_marker("timeout"):
                item.add_marker(pytest.mark.timeout(deadline(timeout)))

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        children.begin_test()
        try:
            return (yield)
        finally:
            children.end_test()

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session, exitstatus):
        if not self.controller:
            return
        left = children.leftovers(self.session, exclude=self.workers)
        if not left:
            return
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        lines = [f"pid {pid} (started during {test}): {cmd}"
                 for pid, (cmd, test) in sorted(left.items())]
        if reporter is not None:
            reporter.write_line("")  # end the progress line
            reporter.section(f"{len(left)} process(es) of this session left running, killed",
                             sep="=", red=True, bold=True)
            for line in lines:
                reporter.write_line(line)
            # "N left running" on the summary's last line (an object: plugins read its __dict__)
            reporter.stats.setdefault("left running", []).extend(
                types.SimpleNamespace(line=line) for line in lines)
        else:
            sys.stderr.write("".join(f"left running: {line}\n" for line in lines))
        if session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.NO_TESTS_COLLECTED):
            session.exitstatus = pytest.ExitCode.TESTS_FAILED

    def pytest_unconfigure(self, config):
        for key, value in self.saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        deadlines.forget()


def pytest_unconfigure(config):
    """Remove the suite's cache folder."""
    if getattr(config, "_mpcbandit_cache", None):
        shutil.rmtree(config._mpcbandit_cache, ignore_errors=True)


#: each test of the emulated compose flow that the container stage's test (tests/FILE::NAME)
#: runs for real: the same compose file's commands, each service a container, not a namespace
IN_CONTAINERS_TOO = {
    "test_compose_flow_runs_without_a_container_engine.py::"
    "test_compose_flow_in_network_namespaces[demo]":
        "test_compose_up_in_containers.py::"
        "test_docker_compose_up_gives_the_plaintext_result[deploy/compose-demo.yml]",
    "test_compose_flow_runs_without_a_container_engine.py::"
    "test_compose_flow_in_network_namespaces[default]":
        "test_compose_up_in_containers.py::"
        "test_docker_compose_up_gives_the_plaintext_result[docker-compose.yml]",
    "test_compose_flow_runs_without_a_container_engine.py::test_compose_flow_on_loopback[demo]":
        "test_compose_up_in_containers.py::"
        "test_docker_compose_up_gives_the_plaintext_result[deploy/compose-demo.yml]",
    "test_compose_flow_runs_without_a_container_engine.py::"
    "test_compose_serve_profile_answers_resumes_and_agrees_with_its_replay":
        "test_compose_up_in_containers.py::"
        "test_docker_compose_serve_profile_answers_resumes_and_agrees_with_its_replay",
}


@pytest.hookimpl(trylast=True)  # after -k and -m have deselected: what this session runs
def pytest_collection_modifyitems(config, items):
    """Skip each emulated compose flow whose container test runs in this session on a machine
    that can run it (IN_CONTAINERS_TOO): the same commands for real, and each costs five to
    fifteen CPU-seconds twice. The default file's loopback variant always runs: each service's
    own folders for keys and data at different local paths, which containers do not vary."""
    names = {f"{item.path.name}::{item.name}": item for item in items}
    doubled = [names[emulated] for emulated, real in IN_CONTAINERS_TOO.items()
               if emulated in names and real in names]
    if not doubled:
        return
    if (sys.modules.get("container_stage") or load_script("container_stage")).why_not():
        return  # the container stage skips here: the emulated flows are the only ones
    for item in doubled:
        real = IN_CONTAINERS_TOO[f"{item.path.name}::{item.name}"]
        item.add_marker(pytest.mark.skip(reason=f"tests/{real} runs this flow in containers"))


def load_script(name: str):
    """The module scripts/NAME.py, loaded (and registered) so a test can call into it."""
    spec = importlib.util.spec_from_file_location(name, REPO / "scripts" / f"{name}.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules[name] = mod
    spec.loader.exec_module(mod)
    return mod


def run_cli(*args, timeout=None, check=True) -> subprocess.CompletedProcess:
    """Run `python -m mpcbandit ARGS` from the repo (killed past timeout, a deadline(...):
    deadline(120) if None); returns the CompletedProcess."""
    env = dict(os.environ, PYTHONPATH=str(REPO))
    timeout = deadline(120) if timeout is None else timeout
    proc = subprocess.run([sys.executable, "-m", "mpcbandit", *map(str, args)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=timeout)
    if check and proc.returncode != 0:
        raise AssertionError(f"mpcbandit {' '.join(map(str, args))} failed "
                             f"({proc.returncode}):\n{proc.stdout}\n{proc.stderr}")
    return proc


@pytest.fixture
def cli(tmp_path):
    """run_cli, as a fixture."""
    return run_cli
