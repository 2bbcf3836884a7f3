"""No module of the package grows past 450 lines and no class past 200: one job per module, a
class small enough to read at once; protocols live in a package each."""

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 450
MAX_CLASS_LINES = 200


def _modules() -> dict[str, Path]:
    return {str(p.relative_to(ROOT)): p for d in ("mpcbandit", "dealer", "parties")
            for p in (ROOT / d).rglob("*.py")}


def test_no_module_is_longer_than_450_lines():
    sizes = {m: len(p.read_text().splitlines()) for m, p in _modules().items()}
    assert len(sizes) > 40
    assert {m: n for m, n in sizes.items() if n > MAX_LINES} == {}


def test_no_class_is_longer_than_200_lines():
    classes = {}
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ClassDef):
                classes[f"{module}:{node.name}"] = node.end_lineno - node.lineno + 1
    assert len(classes) > 40
    assert {c: n for c, n in classes.items() if n > MAX_CLASS_LINES} == {}


def test_each_protocol_is_a_package_and_none_is_a_loose_module():
    protocols = ROOT / "mpcbandit" / "protocols"
    loose = sorted(p.name for p in protocols.glob("*.py")
                   if p.name.startswith(("hannun", "o3m", "samba", "feducb", "jdp", "dp_")))
    assert loose == []
    for package in ("hannun", "o3m", "samba", "dp"):
        init = protocols / package / "__init__.py"
        assert init.exists() and ast.get_docstring(ast.parse(init.read_text()))
