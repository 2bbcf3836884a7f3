"""The applications of the serve profile's organisations (docker-compose.yml, `serve`): each
calls only its own party's API with its own bearer token. It waits until every party is ready,
then, for each request id of the data split in turn, the arm-puller's application asks for the
decision (the feature holders look their slices up by id in their data folders) and the reward
holder's application posts the reward the world gives for that arm (the environment's table of
the split: `rewards.csv`, a column per arm).

    python scripts/serve_app.py --first 0 --count 50   # from the repository root, as the header

The container stage runs it inside its network namespace, where the ports are published;
tests/test_compose_flow_runs_without_a_container_engine.py calls `serve_requests` on loopback.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))

from make_compose import EXPERIMENTS, TOKEN, data_root, keys_dir, serve_ports  # noqa: E402

#: deadlines, in seconds: every party ready (they meet in the hello as they start), one call
READY_S, CALL_S = 120, 30


class AppFailed(Exception):
    """A party answered what an application cannot go on from; the message names it."""


def call(url: str, route: str, token: str, body: dict | None = None) -> tuple[int, dict]:
    """One request to one party's API with its bearer token: (HTTP status, JSON answer)."""
    data = None if body is None else json.dumps(body).encode()
    request = urllib.request.Request(url + route, data, {"Content-Type": "application/json",
                                                         "Authorization": f"Bearer {token}"})
    try:
        with urllib.request.urlopen(request, timeout=CALL_S) as answer:
            return answer.status, json.load(answer)
    except urllib.error.HTTPError as refused:
        return refused.code, json.load(refused)


def wait_ready(urls: dict[str, str], tokens: dict[str, str], deadline_s: float = READY_S,
               exited=lambda: None) -> None:
    """Until every party's /v1/health says ready; AppFailed naming those that are not, or
    saying what exited() says (a party that exited, where the caller can see it)."""
    end, waiting = time.monotonic() + deadline_s, dict(urls)
    while waiting:
        said = exited()
        if said:
            raise AppFailed(said)
        for party in list(waiting):
            try:
                if call(urls[party], "/v1/health", tokens[party])[1].get("ready"):
                    del waiting[party]
            except (OSError, ValueError):
                pass  # not listening yet
        if waiting and time.monotonic() > end:
            raise AppFailed(f"not ready within {deadline_s:g} s: {', '.join(waiting)}")
        time.sleep(0.2)


def world_rewards(table: Path) -> dict[str, list[float]]:
    """id -> the reward of each arm, from the environment's rewards.csv of a data split."""
    with open(table, newline="") as f:
        rows = list(csv.DictReader(f))
    arms = sorted((c for c in rows[0] if c.startswith("reward_")), key=lambda c: int(c[7:]))
    return {r["id"]: [float(r[c]) for c in arms] for r in rows}


def serve_requests(urls: dict[str, str], tokens: dict[str, str], world: dict[str, list[float]],
                   ids: list[str]) -> dict[str, int]:
    """Each id's decision at p' and its reward at p'', in turn; id -> the arm served."""
    puller = next(p for p in urls if p.startswith("arm_puller."))
    rewarder = next(p for p in urls if p.startswith("reward_holder."))
    arms = {}
    for rid in ids:
        status, answer = call(urls[puller], "/v1/decisions", tokens[puller], {"id": rid})
        if status != 200:
            raise AppFailed(f"decision {rid!r} at {puller}: {status} {answer}")
        arms[rid] = answer["arm"]
        reward = world[rid][answer["arm"]]
        status, answer = call(urls[rewarder], "/v1/rewards", tokens[rewarder],
                              {"id": rid, "reward": reward})
        if status != 202:
            raise AppFailed(f"reward of {rid!r} at {rewarder}: {status} {answer}")
    return arms


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--first", type=int, default=0, help="the first id's row in the split")
    ap.add_argument("--count", type=int, default=50, help="how many ids, in the split's order")
    args = ap.parse_args()
    _, config = EXPERIMENTS[0]
    ports = serve_ports(config)
    urls = {p: f"http://127.0.0.1:{port}" for p, port in ports.items()}
    tokens = {p: (ROOT / keys_dir(config, p) / Path(TOKEN).name).read_text().strip() for p in ports}
    world = world_rewards(ROOT / data_root(config) / "environment.0" / "rewards.csv")
    try:
        wait_ready(urls, tokens)
        arms = serve_requests(urls, tokens, world, list(world)[args.first:args.first + args.count])
    except AppFailed as e:
        sys.exit(f"serve_app: {e}")
    print(json.dumps(arms))


if __name__ == "__main__":
    main()
