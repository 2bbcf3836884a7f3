"""Helpers of the per-party data tests: a party's source built from its folder, and a CSV
table edited in place."""

import csv

from mpcbandit.protocols import get_protocol


def source(cfg, data, party):
    """The source party ('role.index') builds from its folder data/party (checks included)."""
    role, _, index = party.rpartition(".")
    return get_protocol(cfg.protocol).source(cfg, role, int(index), data / party)


def edit(path, change):
    """Rewrite a CSV table: change(rows) edits the list of rows (header first) in place."""
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    change(rows)
    with open(path, "w", newline="") as f:
        csv.writer(f, lineterminator="\n").writerows(rows)
