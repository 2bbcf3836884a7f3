"""`mpcbandit data check CONFIG --role R --index I DIR` checks one party's own folder alone, by
the role's own source (the checks the party makes before its hello), for every protocol whose
roles read data: exit 0 with what the hello compares (the id list's digest and row count, the
same at every organisation of a vertical protocol), exit 1 with the DataError naming file, row
and column; a role that reads none says so; --service checks a party of the config's service."""

import re

import pytest
from click.testing import CliRunner

from conftest import REPO
from datafolders import edit, source
from mpcbandit.cli import main
from mpcbandit.config import load_config
from mpcbandit.data.folder import NoData
from mpcbandit.data.split import write_split

#: name -> (config, overrides): small runs of every protocol whose roles read data
CASES = {
    "hannun": ("configs/hannun-synthetic.toml", ["hannun.iterations=12"]),
    "o3m": ("configs/o3m-synthetic.toml", ["o3m.iterations=12", "o3m.participants=2",
                                           "o3m.partition=[5,5]"]),
    "samba": ("configs/samba-synthetic.toml", ["samba.budget=20", "samba.arms=3"]),
    "feducb": ("configs/feducb-synthetic.toml", ["feducb.horizon=10"]),
    "jdp": ("configs/jdp-synthetic.toml", ["jdp.horizon=10"]),
    "demo": ("configs/demo-sum.toml", ["demo.iterations=2", "demo.length=4"]),
}


def check(path, sets, party, folder, *extra):
    """`mpcbandit data check` of party ('role.index') on folder: the click result."""
    role, _, index = party.rpartition(".")
    args = ["data", "check", str(path), "--role", role, "--index", index, str(folder), *extra]
    return CliRunner().invoke(main, args + [a for s in sets for a in ("--set", s)])


def split(tmp_path, name):
    path, sets = CASES[name]
    cfg = load_config(REPO / path, sets)
    write_split(cfg, tmp_path / "data")
    return cfg, REPO / path, sets, tmp_path / "data"


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_partys_split_folder_passes_and_shows_what_its_hello_compares(tmp_path, name):
    cfg, path, sets, data = split(tmp_path, name)
    digests = set()
    for party in (p.name for p in cfg.parties()):
        result = check(path, sets, party, data / party)
        assert result.exit_code == 0, result.output
        own = source(cfg, data, party)
        reads_none = isinstance(own, NoData)
        assert (f"{party} reads no data of its own" in result.output) == reads_none, result.output
        assert ("passes every check its party makes before the hello" in result.output) != reads_none
        for key, value in (own.agreement if own is not None else {}).items():
            assert re.search(rf"^  {re.escape(key)} +{re.escape(str(value))}$", result.output,
                             re.M), result.output
        digests |= set(re.findall(r"data\.ids +(\S+)", result.output))
        if not own.agreement:
            assert "hello compares nothing of its data" in result.output
    # a vertical protocol's parties all show one id list; a horizontal one's none
    assert len(digests) == (1 if name in ("hannun", "o3m") else 0), digests


def test_a_bad_cell_is_named_by_file_row_and_column_with_exit_1(tmp_path):
    cfg, path, sets, data = split(tmp_path, "hannun")
    table = data / "feature_holder.1" / "features.csv"
    edit(table, lambda rows: rows[3].__setitem__(rows[0].index("x14"), "nan"))
    result = check(path, sets, "feature_holder.1", table.parent)
    assert result.exit_code == 1
    assert f"Error: {table}: row 3, column 'x14': nan" in result.output, result.output
    assert check(path, sets, "feature_holder.0", data / "feature_holder.0").exit_code == 0


def test_another_id_list_shows_another_digest_to_compare(tmp_path):
    cfg, path, sets, data = split(tmp_path, "o3m")
    for name in ("ids.csv", "rewards.csv"):   # env.0's own data is consistent, its list is not
        table = data / "env.0" / name
        table.write_text(table.read_text().replace("\nu7", "\nv7"))
    ours, theirs = (check(path, sets, p, data / p) for p in ("ap.0", "env.0"))
    assert ours.exit_code == theirs.exit_code == 0, theirs.output
    digest = lambda out: re.search(r"data\.ids +(\S+)", out)[1]  # noqa: E731
    assert digest(ours.output) != digest(theirs.output)


def test_a_services_party_is_checked_as_the_service_reads_its_folder(tmp_path):
    cfg, path, sets, data = split(tmp_path, "hannun")
    longer = [*sets, "hannun.iterations=50"]   # a service uses no step count
    refused = check(path, longer, "feature_holder.0", data / "feature_holder.0")
    assert refused.exit_code == 1 and "12 ids, the run takes 50 steps" in refused.output
    served = check(path, longer, "feature_holder.0", data / "feature_holder.0", "--service")
    assert served.exit_code == 0, served.output
    assert "data.rows  12" in served.output
    absent = check(path, sets, "environment.0", data / "environment.0", "--service")
    assert absent.exit_code == 1
    assert ("no party environment.0 in this config's service (parties: feature_holder.0, "
            "feature_holder.1, arm_puller.0, reward_holder.0, dealer.0)") in absent.output


def test_a_protocol_that_reads_no_data_says_so(tmp_path):
    result = check(REPO / "configs/mpc-ops.toml", [], "compute.0", tmp_path)
    assert result.exit_code == 1
    assert "protocol mpcops reads no data: no party of it takes a data folder" in result.output
