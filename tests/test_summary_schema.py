"""Every protocol's summary.json, secure and plaintext, has only the keys docs/summary.md lists,
each with the type listed there, and every key the page says every protocol has."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from mpcbandit.config import load_config
from mpcbandit.data.criteo import default_path as criteo_sample
from mpcbandit.launch import run_local
from mpcbandit.results import SCHEMA_VERSION

pytestmark = pytest.mark.slow  # the quick tier (-m "not slow") leaves it out

ROOT = Path(__file__).resolve().parent.parent

#: every shipped config at a few steps (data-backed ones skip without the data)
RUNS = {
    "demo-sum": ["demo.iterations=2"],
    "mpc-ops": ["mpcops.repeats=1", "mpcops.size=4"],
    "hannun-synthetic": ["hannun.iterations=12"],
    "samba-synthetic": ["samba.budget=20", "samba.arms=4", "samba.insecure_small_keys=true",
                        "samba.paillier_bits=512"],
    "jdp-synthetic": ["jdp.horizon=12"],
    "feducb-synthetic": ["feducb.horizon=10"],
    "feducb-p2p": ["feducb.horizon=10"],
    "o3m-synthetic": ["o3m.iterations=10"],
    "o3m-criteo": ["o3m.iterations=30"],
}
NEEDS_DATA = {"o3m-criteo": criteo_sample}

PRIMITIVES = {"int": int, "float": (int, float), "str": str, "bool": bool}


def read_schema(text: str) -> dict[str, dict[str, str]]:
    """The page's tables: section ('every', 'optional' or a protocol name) -> path -> type."""
    out: dict[str, dict[str, str]] = {}
    names: list[str] = []
    for line in text.splitlines():
        if line.startswith("## "):
            heading = line[3:]
            names = (["every"] if heading == "Every protocol" else
                     ["optional"] if heading == "Where the protocol has them" else
                     re.findall(r"`([a-z0-9]+)`", heading))
            continue
        m = re.match(r"\| `([^`]+)` \| ([^|]+?) \|", line)
        if m and names:
            for n in names:
                out.setdefault(n, {})[m.group(1)] = m.group(2)
    return out


def split_type(tp: str) -> tuple[str, bool]:
    """('list[int]', False) from 'list[int]'; ('float', True) from 'float or null'."""
    return (tp[: -len(" or null")], True) if tp.endswith(" or null") else (tp, False)


def check_summary(summary: dict, documented: dict[str, str], required: set[str]) -> list[str]:
    """Every way summary departs from the documented paths and types (empty when it does not)."""
    problems: list[str] = []

    def join(parent: str, key: str) -> str:
        return f"{parent}.{key}" if parent else key

    def check(value, path: str, tp: str) -> None:
        base, nullable = split_type(tp)
        if value is None:
            if not nullable:
                problems.append(f"{path}: null, documented as {tp}")
            return
        if base == "toml":
            if not isinstance(value, dict):
                problems.append(f"{path}: {type(value).__name__}, documented as {tp}")
        elif base in PRIMITIVES:
            ok = isinstance(value, PRIMITIVES[base]) and (base == "bool") == isinstance(value, bool)
            if not ok:
                problems.append(f"{path}: {type(value).__name__} {value!r:.40}, documented as {tp}")
        elif base.startswith("list[") and base.endswith("]"):
            if not isinstance(value, list):
                problems.append(f"{path}: {type(value).__name__}, documented as {tp}")
            else:
                for item in value:
                    check(item, path + "[]", base[5:-1])
        elif base.startswith("map[") and base.endswith("]"):
            if not isinstance(value, dict):
                problems.append(f"{path}: {type(value).__name__}, documented as {tp}")
            else:
                for item in value.values():
                    check(item, path + ".*", base[4:-1])
        elif base == "table":
            table(value, path)
        else:
            problems.append(f"{path}: the page's type {tp!r} is not one this check knows")

    def table(value, path: str) -> None:
        if not isinstance(value, dict):
            problems.append(f"{path or 'summary'}: {type(value).__name__}, documented as table")
            return
        for key, item in value.items():
            child = join(path, key)
            if child not in documented:
                problems.append(f"{child}: not documented in docs/summary.md")
            else:
                check(item, child, documented[child])
        prefix = f"{path}." if path else ""
        for req in required:
            rest = req[len(prefix):] if req.startswith(prefix) else None
            if rest and not re.search(r"[.\[*]", rest) and rest not in value:
                problems.append(f"{req}: missing (every summary has it)")

    table(summary, "")
    return problems


SCHEMA = read_schema((ROOT / "docs" / "summary.md").read_text(encoding="utf-8"))


def schema_for(protocol: str) -> tuple[dict[str, str], set[str]]:
    documented = SCHEMA["every"] | SCHEMA["optional"] | SCHEMA.get(protocol, {})
    return documented, set(SCHEMA["every"])


@pytest.mark.parametrize("plaintext", [False, True], ids=["secure", "plaintext"])
@pytest.mark.parametrize("name", sorted(RUNS))
def test_every_summary_key_is_documented_with_its_type(name, plaintext, tmp_path):
    if name in NEEDS_DATA and not NEEDS_DATA[name]().is_file():
        pytest.skip(f"needs {NEEDS_DATA[name]()}")
    cfg = load_config(ROOT / "configs" / f"{name}.toml", RUNS[name])
    summary = run_local(cfg, tmp_path / "run", plaintext=plaintext, echo=lambda *a: None)
    assert cfg.protocol in SCHEMA, f"docs/summary.md has no section for {cfg.protocol}"
    documented, required = schema_for(cfg.protocol)
    assert check_summary(summary, documented, required) == []
    assert summary["schema_version"] == SCHEMA_VERSION
    assert summary["config_resolved"][cfg.protocol].keys() >= set(cfg.raw.get(cfg.protocol, {}))
    if summary["series"]:
        assert {len(v) for v in summary["series"].values()} == {summary["steps"]}


def test_the_check_names_an_undocumented_key_a_wrong_type_and_a_missing_key():
    documented, required = schema_for("hannun")
    summary = {k: None for k in required if "." not in k and "[" not in k}
    summary |= {"steps": "12", "series": {"arms": [1, 2.5]}, "made_up": 1}
    problems = "\n".join(check_summary(summary, documented, required))
    assert "made_up: not documented" in problems
    assert "steps: str '12', documented as int" in problems
    assert "series.arms[]: float 2.5, documented as int" in problems
    assert "plaintext: null, documented as bool" in problems
    del summary["protocol"]
    assert "protocol: missing" in "\n".join(check_summary(summary, documented, required))
