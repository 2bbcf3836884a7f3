"""`docker compose up` for real: every compose file run in containers by following its header
(keys per party, roster, the owner of keys and results, build, up, collect), its summary
compared with --plaintext. scripts/container_stage.py does the work: it installs Debian's
docker.io and mmdebstrap and Compose v2 (checksum-verified) where missing, builds the base
image without Docker Hub and the project's image, runs every container network in a network
namespace of its own, stops every daemon it started and checks that the root network namespace
is as it found it. It skips only where the machine cannot: not root, no apt-get, not x86_64.
By hand: `python -m pytest -q tests/test_compose_up_in_containers.py` (as root)."""

import json

import pytest

from compose_files import assert_equals_plaintext, yaml
from conftest import REPO, load_script

stage = load_script("container_stage")
# slow; and under pytest-xdist all on one worker, which starts the container engine once
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("containers")]
#: $MPCBANDIT_STEPS of the runs: seconds each, enough for the replay check of hannun
STEPS = 200
#: the demo's compute parties hold each message 1 s before reading it (run.net's emulated link;
#: the [run] table is no part of a run's identity), so they are still at work when the input
#: holders, having sent everything, leave
LINK = "one_way_ms=1000"
#: the demo's `up` over that link took 11-14 s with lookups answered, on 2 cores under a load of
#: 14-22 from other work; with a nameserver that never answers, 37 s and 41 s (2 s links: 37 s,
#: 40 s, 49 s and over 60 s)
DEMO_UP_S = 25


#: what each file's services add to their commands here: SAMBA's shipped configs draw fresh
#: seeds (private), so only its reproduction mode can equal --plaintext
REPRODUCIBLE = {"deploy/compose-samba.yml": ["--set", "samba.fresh_seeds=false"]}


def added_to_commands(compose_file: str, extra: list[str], services=lambda name: True) -> str:
    """A compose file to lay over compose_file: extra appended to the chosen services' commands."""
    found = yaml.safe_load((REPO / compose_file).read_text())["services"]
    return json.dumps({"services": {name: {"command": svc["command"] + extra}
                                    for name, svc in found.items() if services(name)}})


@pytest.fixture(scope="module")
def engine():
    reason = stage.why_not()
    if reason:
        pytest.skip(f"container stage: {reason}")
    with stage.prepared() as prepared:
        yield prepared


@pytest.mark.parametrize("compose_file, config", stage.EXPERIMENTS,
                         ids=[f for f, _ in stage.EXPERIMENTS])
def test_docker_compose_up_gives_the_plaintext_result(engine, compose_file, config, tmp_path):
    extra = REPRODUCIBLE.get(compose_file)
    summary = stage.run_compose_file(*engine, compose_file, config, STEPS, override=extra and
                                     added_to_commands(compose_file, extra))
    # each party in its own container, whose host name is its service's
    assert sorted(p["host"] for p in summary["parties"]) == sorted(
        f"{p['role']}-{p['index']}" for p in summary["parties"])
    repo = engine[1] / "repo"  # the stage's checkout: each party's data folder, collect's output
    assert_equals_plaintext(summary, config, STEPS, tmp_path, extra or (),
                            data=repo / stage.data_root(config),
                            run_dir=repo / stage.results_dir(config))


@pytest.mark.quiet  # seconds against a resolver's timeouts: a busy machine blurs the two
def test_demo_up_finishes_in_seconds_while_dns_answers_nothing(engine, tmp_path):
    daemon, work = engine
    over_the_link = added_to_commands("deploy/compose-demo.yml", ["--net", LINK],
                                      lambda name: name.startswith("compute-"))
    daemon.drop_dns()
    try:
        summary = stage.run_compose_file(daemon, work, "deploy/compose-demo.yml",
                                         "configs/demo-sum.toml", 1, up_s=DEMO_UP_S,
                                         override=over_the_link)
    finally:
        daemon.answer_dns()
    assert_equals_plaintext(summary, "configs/demo-sum.toml", 1, tmp_path)


def test_docker_compose_serve_profile_answers_resumes_and_agrees_with_its_replay(engine):
    """The default experiment's serve profile in containers, by its header: every party `serve`
    with its own keys, data and state; an application calls each party on its port published
    on the namespace's loopback with its token (the header's curl calls, then many more); `stop`
    (SIGTERM: each container exits 0), `up -d` again (each resumes its state), more calls,
    `stop`; serve-replay of the state folders agrees on every arm."""
    compose_file, config = stage.EXPERIMENTS[0]
    report = stage.run_serve_profile(*engine, compose_file, config, STEPS)
    assert report["decisions"] == report["agree"] == 2 * stage.SERVE_REQUESTS, report
    # a reward acknowledged just before a stop is applied after the next start: every one of
    # the first run's is by the end of the second
    assert stage.SERVE_REQUESTS <= report["rewards"] <= report["decisions"], report
    assert report["disagree"] == [] == report["near_ties"]
