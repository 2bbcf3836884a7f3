"""No module of the package grows past 450 lines: one job per module."""

from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 450


def test_no_module_is_longer_than_450_lines():
    sizes = {str(p.relative_to(ROOT)): len(p.read_text().splitlines())
             for d in ("mpcbandit", "dealer") for p in (ROOT / d).rglob("*.py")}
    assert len(sizes) > 40
    assert {m: n for m, n in sizes.items() if n > MAX_LINES} == {}
