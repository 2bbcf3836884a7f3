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
    "hannun-3": "mpcbandit.experiments.hannun_secure:figure_3",
    "hannun-4": "mpcbandit.experiments.hannun_secure:figure_4",
    "hannun-5": "mpcbandit.experiments.hannun:figure_5",
    "hannun-6": "mpcbandit.experiments.hannun_membership:figure_6",
    "hannun-7": "mpcbandit.experiments.hannun_secure:figure_7",
    "hannun-8": "mpcbandit.experiments.hannun_secure:figure_8",
    "jdp": "mpcbandit.experiments.jdp:figure",
    "o3m-4": "mpcbandit.experiments.o3m:figure_4",
    "o3m-5": "mpcbandit.experiments.o3m_cost:figure_5",
    "o3m-6": "mpcbandit.experiments.o3m:figure_6",
    "samba-8": "mpcbandit.experiments.samba:figure_8",
}

#: `mpcbandit bench NAME` -> "module:command"
BENCHES = {
    "dp-processes": "mpcbandit.experiments.dp_processes:bench",
    "hannun": "mpcbandit.experiments.hannun_secure:bench",
    "hannun-wraps": "mpcbandit.experiments.hannun_wraps:bench",
    "mpc-ops": "mpcbandit.experiments.mpc_ops:bench",
    "o3m-leakage": "mpcbandit.experiments.o3m_leakage:bench",
    "o3m-round-time": "mpcbandit.experiments.o3m_cost:round_time",
    "o3m-table-c3": "mpcbandit.experiments.o3m_table_c3:table_c3",
    "samba-comp-tracking": "mpcbandit.experiments.samba_comp_tracking:bench",
    "samba-relay": "mpcbandit.experiments.samba_relay:bench",
    "serve": "mpcbandit.experiments.serve_bench:bench",
    "transport": "mpcbandit.experiments.transport:bench",
}
