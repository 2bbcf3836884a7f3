"""Where each protocol lives: its name and the module that defines its ``PROTOCOL``.

A leaf: it names modules and imports one only when its protocol is first asked for, so config,
launch and the CLI find a protocol's section and roles without importing protocol code, and a
protocol module may import config freely. A new protocol adds one line here.
"""

from __future__ import annotations

import importlib
from typing import Any

__all__ = ["PROTOCOL_MODULES", "get_protocol"]

PROTOCOL_MODULES = {
    "demo": "mpcbandit.protocols.demo",
    "feducb": "mpcbandit.protocols.dp.feducb",
    "hannun": "mpcbandit.protocols.hannun.protocol",
    "jdp": "mpcbandit.protocols.dp.jdp",
    "mpcops": "mpcbandit.protocols.mpcops",
    "o3m": "mpcbandit.protocols.o3m.protocol",
    "samba": "mpcbandit.protocols.samba.protocol",
}


def get_protocol(name: str) -> Any:
    """The ``Protocol`` (see ``mpcbandit.protocols``) registered as name."""
    return importlib.import_module(PROTOCOL_MODULES[name]).PROTOCOL
