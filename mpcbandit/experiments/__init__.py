"""The benchmarks and the papers' figures, as `mpcbandit bench NAME` and `mpcbandit figure NAME`.

One module per paper (or per cross-cutting benchmark); each command writes its tables as CSV and
markdown and its figures as PNG, side by side, into `--out` (default runs/NAME-TIME), takes
`--paper` for the paper's sizes, and shows every option's default in `--help`.
"""

from __future__ import annotations

__all__ = ["BENCHES", "FIGURES"]

#: `mpcbandit figure NAME` -> "module:command"
FIGURES = {
    "feducb": "mpcbandit.experiments.feducb:figure",
    "hannun-1": "mpcbandit.experiments.hannun:figure_1",
    "hannun-2": "mpcbandit.experiments.hannun:figure_2",
    "hannun-5": "mpcbandit.experiments.hannun:figure_5",
    "jdp": "mpcbandit.experiments.jdp:figure",
}

#: `mpcbandit bench NAME` -> "module:command"
BENCHES = {
    "dp-processes": "mpcbandit.experiments.dp_processes:bench",
}
