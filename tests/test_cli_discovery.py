"""A new user can find out what exists from the command line: the version, the protocols with
their papers, roles and configs, and every config key with its default and meaning."""

import dataclasses

import pytest

from mpcbandit import __version__
from mpcbandit.config import NetworkSection, RunSection, ServeSection
from mpcbandit.explain import section_keys
from mpcbandit.protocols import get_protocol
from mpcbandit.registry import PROTOCOL_MODULES


def test_version_is_printed(cli):
    assert cli("--version").stdout.strip() == f"mpcbandit {__version__}"


def test_protocols_lists_each_with_paper_roles_and_configs(cli):
    out = cli("protocols").stdout
    for name in PROTOCOL_MODULES:
        assert f"\n{name} " in "\n" + out, name
    assert "Hannun et al. 2019" in out and "roles: feature_holder, arm_puller, reward_holder, dealer" in out
    assert "configs: hannun-mnist.toml, hannun-synthetic.toml" in out


@pytest.mark.parametrize("name", sorted(PROTOCOL_MODULES))
def test_every_key_is_explained_with_a_meaning(name, cli):
    keys = [*section_keys(get_protocol(name).section, name), *section_keys(RunSection, "run"),
            *section_keys(NetworkSection, "network"), *section_keys(ServeSection, "serve")]
    assert [k.key for k in keys if not k.doc] == []
    out = cli("explain", name).stdout
    for k in keys:
        assert f"  {k.key} ({k.type}, default " in out, k.key
    fields = [f for f in dataclasses.fields(get_protocol(name).section) if f.init]
    assert len([k for k in keys if k.key.startswith(name + ".")]) >= len(fields)


def test_explain_names_what_exists_when_the_protocol_is_unknown(cli):
    proc = cli("explain", "linucb", check=False)
    assert proc.returncode != 0 and "'demo'" in proc.stderr and "'samba'" in proc.stderr
