"""What every experiment command shares: its options, its output folder and its figures."""

from __future__ import annotations

import csv
import functools
import inspect
import os
import re
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import click
import numpy as np

from mpcbandit.config import Config, load_config
from mpcbandit.files import default_run_dir
from mpcbandit.shipped_configs import SHIPPED

__all__ = ["COMPUTED_BY", "Curve", "Output", "Panel", "choice_list", "experiment_command",
           "float_list", "int_list", "str_list", "curve_labels", "machine_load", "mean_std",
           "or_dash", "plot_panels", "shipped_config", "sized_option", "spans_decades", "thinned"]


def experiment_command(name: str, paper_sizes: str, *, short_help: str, computed_by: str = ""):
    """Make fn(out: Output, paper: bool, **options) the click command NAME, with `--paper`
    (the paper's sizes, described by `paper_sizes`) and `--out`, and defaults shown in --help.
    `short_help` says what it measures in the group's list (click would cut the docstring at
    its first full stop: "Hannun et al."); `computed_by` where its numbers come from (the
    secure protocol or a float64 simulation), said in --help and under every markdown table."""

    def wrap(fn):
        @functools.wraps(fn)
        def run(out: Path | None, paper: bool, **options):
            for key, quick, full in getattr(fn, "__sized__", ()):
                if options[key] is None:
                    options[key] = full if paper else quick
            folder = out or default_run_dir(name)
            output = Output(folder, computed_by=computed_by)
            t0 = time.perf_counter()
            fn(output, paper=paper, **options)
            click.echo(f"wrote {', '.join(output.written) or 'nothing'} in {folder} "
                       f"({time.perf_counter() - t0:.1f} s)")

        run = click.option("--out", type=click.Path(file_okay=False, path_type=Path), default=None,
                           help="Output folder  [default: runs/" + name + "-TIME]")(run)
        run = click.option("--paper", is_flag=True,
                           help=f"The paper's sizes: {paper_sizes}. Options given explicitly "
                                "override them.")(run)
        doc = inspect.cleandoc(fn.__doc__ or "")
        return click.command(name, short_help=short_help,
                             help=f"{doc}\n\n{COMPUTED_BY}{computed_by}." if computed_by else doc,
                             context_settings={"show_default": True,
                                               "help_option_names": ["-h", "--help"]})(run)

    return wrap


def sized_option(flag: str, kind, quick, paper, help: str):
    """An option whose default is `quick`, or `paper` under --paper (both shown in --help)."""

    def shown(v):
        return ",".join(map(str, v)) if isinstance(v, (list, tuple)) else str(v)

    def wrap(fn):
        opt = click.option(flag, type=kind, default=None, show_default=False,
                           help=f"{help}  [default: {shown(quick)}; --paper: {shown(paper)}]")
        fn = opt(fn)
        key = flag.lstrip("-").replace("-", "_")
        fn.__sized__ = (*getattr(fn, "__sized__", ()), (key, quick, paper))
        return fn

    return wrap


def _list_of(kind: type, metavar: str, choices: Sequence[str] = ()):
    """A click type for a comma-separated list, e.g. 0.1,1,10 (of `choices` only, if given)."""

    class ListType(click.ParamType):
        name = metavar

        def convert(self, value, param, ctx):
            if isinstance(value, list):
                return value
            try:
                values = [kind(v.strip()) for v in str(value).split(",") if v.strip()]
            except ValueError:
                self.fail(f"{value!r} is not a comma-separated list of {kind.__name__}s",
                          param, ctx)
            unknown = [v for v in values if choices and v not in choices]
            if unknown:
                self.fail(f"unknown {', '.join(unknown)} (allowed: {', '.join(choices)})",
                          param, ctx)
            return values

    return ListType()


#: option types for lists given as 1,2,4 (one option, one value, as in a shell history)
int_list = _list_of(int, "INT,...")
float_list = _list_of(float, "FLOAT,...")
str_list = _list_of(str, "NAME,...")


def choice_list(*choices: str):
    """An option type for a comma-separated list of some of `choices`, e.g. local,exact."""
    return _list_of(str, ",".join(choices), choices)


#: how a command's --help and its markdown introduce where its numbers come from
COMPUTED_BY = "Computed by: "


class Output:
    """An experiment's folder: each table as CSV and markdown side by side, each figure as PNG;
    `computed_by` (the secure protocol or a float64 simulation) is said under every table."""

    def __init__(self, folder: Path, computed_by: str = ""):
        self.folder = Path(folder)
        self.computed_by = computed_by
        self.folder.mkdir(parents=True, exist_ok=True)
        self.written: list[str] = []
        #: cores and load when the command started, for its titles (its own runs raise it later)
        self.machine = f"{machine_load()} at the start"

    def table(self, stem: str, columns: Sequence[str], rows: Sequence[Sequence], title: str = "",
              note: str = "") -> Path:
        """Write rows as STEM.csv and STEM.md (a markdown table under `title`, `note` below it)."""
        path = self.folder / f"{stem}.csv"
        with path.open("w", newline="") as f:
            csv.writer(f).writerows([list(columns), *map(list, rows)])
        lines = [f"# {title}", ""] if title else []
        lines += ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
        lines += ["| " + " | ".join(_cell(v) for v in r) + " |" for r in rows]
        lines += ["", note] if note else []
        lines += ["", f"{COMPUTED_BY}{self.computed_by}."] if self.computed_by else []
        (self.folder / f"{stem}.md").write_text("\n".join(lines) + "\n")
        self.written += [path.name, f"{stem}.md"]
        return path

    def figure(self, stem: str, panels: Sequence["Panel"], title: str) -> Path | None:
        """Draw the panels as STEM.png (None without matplotlib, which plot_panels says)."""
        path = self.folder / f"{stem}.png"
        if plot_panels(path, panels, title):
            self.written.append(path.name)
            return path
        return None


def _cell(v) -> str:
    if v is None:  # not measured at this row (the CSV leaves it empty too)
        return ""
    if isinstance(v, float):
        return "" if np.isnan(v) else f"{v:.4g}"
    return str(v).replace("|", "\\|")


def or_dash(v: float | None, spec: str) -> str:
    """v formatted by spec ("9.3f", "6g"), or a dash as wide where it was not measured."""
    if v is not None:
        return format(v, spec)
    return format("-", ">" + re.match(r"\d*", spec).group())


def shipped_config(name: str, sets: Sequence[str] = ()) -> Config:
    """The shipped config NAME (mpcbandit/configs), with KEY=VALUE overrides."""
    return load_config(SHIPPED / name, list(sets))


def thinned(steps: int, points: int = 200) -> np.ndarray:
    """About `points` step indices of 0 .. steps - 1, the first and the last among them."""
    return np.unique(np.linspace(0, steps - 1, points).astype(int))


def mean_std(runs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Mean and std (ddof 1) over runs (axis 0); std 0 for a single run."""
    return runs.mean(0), (runs.std(0, ddof=1) if len(runs) > 1 else np.zeros(runs.shape[1:]))


def machine_load() -> str:
    """The machine a timing ran on, for a figure's title: cores and 1-minute load average."""
    return f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}"


@dataclass
class Curve:
    """One line of a panel: y against x, with its spread (std over runs) where runs averaged."""

    label: str
    x: Sequence[float]
    y: Sequence[float]
    err: Sequence[float] | None = None
    dashed: bool = False
    color: str | None = None


@dataclass
class Panel:
    """One axes: its curves, labels, and log axes (None: log where positive values span > 100x)."""

    title: str
    xlabel: str
    ylabel: str
    curves: list[Curve]
    logx: bool | None = None
    logy: bool | None = None
    note: str = ""


MARKERS = ("o", "s", "^", "v", "D", "P", "X", "*", "<", ">")


def plot_panels(path: Path, panels: Sequence[Panel], title: str) -> bool:
    """Panels side by side: every curve with its own marker, error bands or bars where given,
    curves equal to an earlier one labelled so, log axes where values span decades."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        import matplotlib.ticker
    except ImportError:
        click.echo(f"(matplotlib not installed: no {Path(path).name}; "
                   "pip install mpcbandit[plots])")
        return False
    fig, axes = plt.subplots(1, len(panels), figsize=(5.2 * len(panels), 4.2), squeeze=False)
    for ax, panel in zip(axes[0], panels):
        for i, (c, label) in enumerate(zip(panel.curves, curve_labels(panel.curves))):
            x, y = np.asarray(c.x, float), np.asarray(c.y, float)
            every = max(1, len(x) // 10)
            line, = ax.plot(x, y, "--" if c.dashed else "-", color=c.color, label=label,
                            marker=MARKERS[i % len(MARKERS)], ms=4,
                            markevery=(i * every // max(1, len(panel.curves)) % every, every))
            if c.err is not None:
                err = np.asarray(c.err, float)
                if len(x) > 12:
                    ax.fill_between(x, y - err, y + err, color=line.get_color(), alpha=0.15, lw=0)
                else:
                    ax.errorbar(x, y, yerr=err, fmt="none", ecolor=line.get_color(), capsize=3)
        xs = np.concatenate([np.asarray(c.x, float) for c in panel.curves])
        ys = np.concatenate([np.asarray(c.y, float) for c in panel.curves])
        for axis, log, values in (("x", panel.logx, xs), ("y", panel.logy, ys)):
            if log if log is not None else spans_decades(values):
                getattr(ax, f"set_{axis}scale")("log")
                # a span under a decade labels its minor ticks too, and they run into each other
                getattr(ax, f"{axis}axis").set_minor_formatter(matplotlib.ticker.NullFormatter())
            else:  # 10^4 and above as a power of ten: long tick labels run into each other
                ax.ticklabel_format(axis=axis, style="sci", scilimits=(-3, 4))
        ax.set_title(panel.title, fontsize=9)
        ax.set(xlabel=panel.xlabel, ylabel=panel.ylabel)
        if panel.note:  # under the axes, where no curve can hide it
            ax.annotate(panel.note, (0, 0), xycoords="axes fraction", xytext=(0, -32),
                        textcoords="offset points", fontsize=7, va="top")
        ax.legend(fontsize=7)
    fig.suptitle(textwrap.fill(title, 75 * len(panels)), fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return True


def curve_labels(curves: Sequence[Curve]) -> list[str]:
    """Each curve's legend label, "(identical to L)" added where an earlier curve L has the same
    points (it would otherwise hide under that one)."""
    labels = []
    for i, c in enumerate(curves):
        x, y = np.asarray(c.x, float), np.asarray(c.y, float)
        twin = next((d for d in curves[:i] if len(d.x) == len(x) and np.allclose(d.x, x)
                     and np.allclose(d.y, y, equal_nan=True)), None)
        labels.append(c.label + (f" (identical to {twin.label})" if twin else ""))
    return labels


def spans_decades(values: np.ndarray) -> bool:
    """Whether positive values span more than a factor 100 (a log axis shows them better)."""
    v = values[np.isfinite(values) & (values > 0)]
    return len(v) == len(values[np.isfinite(values)]) and len(v) > 1 and v.max() > 100 * v.min()
