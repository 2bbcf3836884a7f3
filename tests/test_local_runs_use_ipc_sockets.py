"""`mpcbandit run` with every party on this host talks over Unix sockets in a private folder it
removes afterwards; tcp when asked, when addresses are given, and for `party` by default; ipc
settings that cannot work are refused naming the key."""

import json
import stat

import pytest

import mpcbandit.launch as launch
from conftest import REPO
from mpcbandit.config import load_config
from mpcbandit.errors import ConfigError

DEMO = REPO / "configs/demo-sum.toml"
SMALL = ["demo.iterations=2", "demo.length=16"]


def _addresses(out):
    return {f.stem: json.loads(f.read_text())["address"] for f in (out / "parties").glob("*.json")}


def test_a_local_run_talks_over_ipc_in_a_private_folder_it_removes(tmp_path, monkeypatch):
    made = []
    real_mkdtemp = launch.tempfile.mkdtemp

    def recording_mkdtemp(*args, **kwargs):
        path = real_mkdtemp(*args, **kwargs)
        made.append((path, stat.S_IMODE(launch.os.stat(path).st_mode)))
        return path

    monkeypatch.setattr(launch.tempfile, "mkdtemp", recording_mkdtemp)
    plain = launch.run_local(DEMO, SMALL + ["network.transport=tcp"], tmp_path / "tcp", echo=lambda *_: None)
    assert made == []
    ipc = launch.run_local(DEMO, SMALL, tmp_path / "ipc", echo=lambda *_: None)
    (folder, mode), = made
    assert mode == 0o700  # no other local user can connect to a party
    addresses = _addresses(tmp_path / "ipc")
    assert len(addresses) == 6
    assert addresses == {name: f"ipc://{folder}/{name}" for name in addresses}
    assert all(a.startswith("tcp://127.0.0.1:") for a in _addresses(tmp_path / "tcp").values())
    assert not launch.Path(folder).exists()
    # the transport changes nothing a party computes or counts
    assert ipc["sum"] == plain["sum"]
    assert ipc["rounds_total"] == plain["rounds_total"]
    assert [p["bytes_sent"] for p in ipc["parties"]] == [p["bytes_sent"] for p in plain["parties"]]


def test_addresses_or_remote_hosts_keep_tcp():
    cfg = load_config(DEMO, ['network.addresses={"compute.1" = "tcp://127.0.0.1:7001"}'])
    assert not launch._all_on_this_host(cfg)
    assert launch._all_on_this_host(load_config(DEMO, []))
    assert not launch._all_on_this_host(load_config(DEMO, ['network.host="10.0.0.5"']))
    # `party` reads the config as given: auto means tcp there
    assert all(p.address.startswith("tcp://") for p in load_config(DEMO, ["network.base_port=7000"]).parties())


@pytest.mark.parametrize("overrides,key", [
    (["network.transport=ipc"], "network.ipc_dir"),
    (["network.transport=ipc", 'network.ipc_dir="/tmp/x"',
      'network.addresses={"compute.1" = "tcp://127.0.0.1:7001"}'], "network.addresses"),
    (["network.transport=ipc", f'network.ipc_dir="/tmp/{"d" * 90}"'], "network.ipc_dir"),
    (["network.transport=udp"], "network.transport"),
])
def test_ipc_settings_that_cannot_work_are_refused_by_key(overrides, key):
    with pytest.raises(ConfigError) as err:
        load_config(DEMO, overrides)
    assert err.value.key == key
