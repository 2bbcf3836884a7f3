"""What every protocol computes and sends at fixed seeds: its outputs (timings left out) and, per
party, the rounds, messages and bytes it sent, in process. A refactor that must change none of
them is checked against tests/data/protocol_fingerprints.json;
`python tests/fingerprints.py --write [NAME ...]` records the file anew, or only the named cases
(only when a change is meant)."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
STORE = REPO / "tests" / "data" / "protocol_fingerprints.json"

_NONE = 'run.security="none"'
_SMALL_KEYS = ["samba.paillier_bits=512", "samba.insecure_small_keys=true", "samba.budget=120",
               "samba.arms=4", "samba.fresh_seeds=false"]
_THRESHOLD = 'feducb.schedule="threshold"'  # the rule these fingerprints were recorded with

#: name -> (config, overrides); every source of randomness that reaches a result is seeded
CASES: dict[str, tuple[str, list[str]]] = {
    "demo": ("configs/demo-sum.toml", ["demo.iterations=4", "demo.length=50"]),
    "hannun": ("configs/hannun-synthetic.toml",
               ["hannun.iterations=40", 'hannun.exploration="seeded"']),
    "mpcops": ("configs/mpc-ops.toml", ["mpcops.size=20", "mpcops.arms=[5]", "mpcops.repeats=1"]),
    **{f"samba-{alg}": ("configs/samba-synthetic.toml", [*_SMALL_KEYS, f'samba.algorithm="{alg}"'])
       for alg in ("epsilon-greedy", "epsilon-decreasing", "ucb", "thompson", "softmax",
                   "pursuit")},
    "o3m-linucb": ("configs/o3m-synthetic.toml", ["o3m.iterations=60"]),
    "o3m-lints": ("configs/o3m-synthetic.toml", ["o3m.iterations=60", 'o3m.algorithm="lints"']),
    **{f"jdp-{noise}": ("configs/jdp-synthetic.toml",
                        ["jdp.horizon=40", "jdp.seeded_noise=true", f'jdp.noise="{noise}"'])
       for noise in ("gaussian", "wishart", "shifted-wishart", "none")},
    "feducb": ("configs/feducb-synthetic.toml",
               ["feducb.horizon=30", "feducb.seeded_noise=true", _THRESHOLD]),
    "feducb-p2p": ("configs/feducb-p2p.toml",
                   ["feducb.horizon=30", "feducb.seeded_noise=true", _THRESHOLD]),
}

#: output keys that measure time or a machine, or count bytes (held by the records' bytes_sent,
#: which may only fall), not what was computed
_TIMING = re.compile(r"(_s|_ms|_us)$|seconds|wall|time|^bytes")
#: mpcops reports medians of timings and the errors of probabilistic truncation
_SKIP_OUTPUT = {"mpcops"}


def _timing(key: str) -> bool:
    return _TIMING.search(key) is not None


def _computed(value):
    """value without its timing keys, floats rounded to 12 significant digits."""
    if isinstance(value, dict):
        return {k: _computed(v) for k, v in sorted(value.items()) if not _timing(k)}
    if isinstance(value, (list, tuple)):
        return [_computed(v) for v in value]
    if isinstance(value, float):
        return float(f"{value:.12g}")
    return value


def fingerprint(name: str) -> dict:
    """{party: {rounds, messages, bytes_sent, output}} of one case, run in process."""
    from mpcbandit.config import load_config
    from mpcbandit.protocols.inproc_runner import run_protocol_inproc

    path, overrides = CASES[name]
    cfg = load_config(REPO / path, [_NONE, *overrides])
    records, _ = run_protocol_inproc(cfg)
    out = {}
    for rec in records:
        out[rec["name"]] = {"rounds": rec["rounds"], "messages": rec["messages"],
                            "bytes_sent": rec["bytes_sent"],
                            "output": None if name in _SKIP_OUTPUT else _computed(rec["output"])}
    return json.loads(json.dumps(out))


def stored() -> dict:
    """The recorded fingerprints."""
    return json.loads(STORE.read_text())


if __name__ == "__main__":
    names = sys.argv[2:] or sorted(CASES)
    if sys.argv[1:2] != ["--write"] or not set(names) <= set(CASES):
        sys.exit(f"usage: python tests/fingerprints.py --write [NAME ...] (names: {', '.join(sorted(CASES))})")
    sys.path.insert(0, str(REPO))
    STORE.parent.mkdir(exist_ok=True)
    records = stored() if STORE.exists() else {}
    records.update({n: fingerprint(n) for n in names})
    STORE.write_text(json.dumps(records, indent=1, sort_keys=True) + "\n")
    print(f"wrote {', '.join(names)} to {STORE}")
