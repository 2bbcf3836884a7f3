"""Every `mpcbandit bench NAME` / `figure NAME` takes --paper and --out, shows each option's
default, and writes each table as CSV and markdown side by side."""

import csv
import re

import click
import numpy as np
import pytest
from click.testing import CliRunner

from mpcbandit.cli import main
from mpcbandit.experiments import BENCHES, FIGURES
from mpcbandit.experiments.common import Curve, Output, curve_labels, spans_decades

COMMANDS = [("bench", n) for n in BENCHES] + [("figure", n) for n in FIGURES]


@pytest.mark.parametrize("group,name", COMMANDS)
def test_command_has_paper_out_and_shows_every_default(group, name):
    ctx = click.Context(main)
    cmd = main.get_command(ctx, group).get_command(ctx, name)
    assert cmd is not None, f"{group} {name} is registered but cannot be loaded"
    options = {p.name: p for p in cmd.params if isinstance(p, click.Option)}
    assert options["paper"].is_flag and "out" in options
    for p in options.values():
        record = p.get_help_record(cmd.make_context(name, [], resilient_parsing=True))
        assert record and record[1], f"{group} {name} --{p.name} has no help"
        if not p.is_flag and p.name != "help":
            assert "default:" in record[1], f"{group} {name} --{p.name} hides its default"
    text = CliRunner().invoke(main, [group, name, "--help"]).output
    # the whole docstring, not its first line only
    assert " ".join(cmd.help.split()) in " ".join(text.split())
    assert "--paper" in text and "--out" in text


@pytest.mark.parametrize("group,names", [("bench", BENCHES), ("figure", FIGURES)])
def test_every_command_says_what_it_measures_in_its_group_help(group, names):
    text = CliRunner().invoke(main, [group, "--help"]).output
    listed = [line.split(None, 1) for line in text.split("Commands:")[1].splitlines()
              if line.startswith("  ") and not line.startswith("   ")]
    shorts = {name: short for name, short in listed}
    assert set(shorts) == set(names)
    for name, short in shorts.items():
        # click cuts a docstring at its first full stop: "Hannun et al." says nothing
        assert not re.search(r"et al\.?$", short), f"{group} {name}: {short!r} is a citation"
        assert len(short.split()) >= 5 and not short.endswith("..."), f"{group} {name}: {short!r}"


COMPUTED_BY = "Computed by: "


@pytest.mark.parametrize("name", sorted(FIGURES))
def test_every_figure_says_whether_the_secure_protocol_or_a_float64_simulation_drew_it(name):
    text = " ".join(CliRunner().invoke(main, ["figure", name, "--help"]).output.split())
    assert COMPUTED_BY in text, f"figure {name} does not say where its numbers come from"
    said = text.split(COMPUTED_BY, 1)[1]
    assert "secure protocol" in said or "float64" in said, f"figure {name}: {said!r}"


def test_a_figure_says_under_its_tables_where_its_numbers_come_from(tmp_path):
    result = CliRunner().invoke(main, ["figure", "hannun-1", "--steps", "40", "--runs", "1",
                                       "--data", "synthetic", "--out", str(tmp_path)])
    assert result.exit_code == 0, result.output
    table = (tmp_path / "hannun_fig1.md").read_text()
    assert f"{COMPUTED_BY}a float64 simulation" in table and "not the secure protocol" in table


def test_unknown_command_is_named_with_the_ones_that_exist():
    result = CliRunner().invoke(main, ["figure", "nope"])
    assert result.exit_code != 0 and "No such command 'nope'" in result.output


def test_a_table_is_written_as_csv_and_markdown_with_the_same_rows(tmp_path):
    out = Output(tmp_path / "o")
    out.table("t", ["a", "b"], [[1, 0.5], [2, float("nan")]], "a title")
    with (tmp_path / "o" / "t.csv").open() as f:
        assert list(csv.reader(f)) == [["a", "b"], ["1", "0.5"], ["2", "nan"]]
    assert (tmp_path / "o" / "t.md").read_text().splitlines() == [
        "# a title", "", "| a | b |", "|---|---|", "| 1 | 0.5 |", "| 2 |  |"]
    assert out.written == ["t.csv", "t.md"]


def test_a_curve_equal_to_an_earlier_one_says_so_in_its_label():
    x = [1, 2, 3]
    labels = curve_labels([Curve("a", x, [1, 2, 3]), Curve("b", x, [1, 2, 4]),
                           Curve("c", x, [1.0, 2.0, 3.0])])
    assert labels == ["a", "b", "c (identical to a)"]


def test_log_axes_only_where_positive_values_span_decades():
    assert spans_decades(np.array([0.1, 1, 10, 100]))
    assert not spans_decades(np.array([20.0, 30, 1000]) / 10)
    assert not spans_decades(np.array([-1.0, 1, 1000]))  # a log axis cannot show -1
