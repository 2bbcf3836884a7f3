"""`mpcbandit run` reads and parses its config file once and hands the object on: the launcher
never goes back to the path (the party processes read it, one each)."""

import tomllib

from click.testing import CliRunner

from mpcbandit import config
from mpcbandit.cli import main


def test_a_run_reads_its_config_file_once(monkeypatch, tmp_path):
    reads = []
    real = tomllib.loads
    monkeypatch.setattr(config.tomllib, "loads",
                        lambda text, **kw: reads.append(text[:40]) or real(text, **kw))
    out = CliRunner().invoke(main, ["run", "configs/demo-sum.toml", "--out", str(tmp_path / "r"),
                                    "--set", "demo.iterations=2", "--set", "demo.length=8"])
    assert out.exit_code == 0, out.output
    file_reads = [r for r in reads if not r.startswith("v = ")]  # "v = ..." parses a --set value
    assert len(file_reads) == 1, reads
    assert (tmp_path / "r" / "summary.json").exists()
