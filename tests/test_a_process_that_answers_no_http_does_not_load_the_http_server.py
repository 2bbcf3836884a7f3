"""The launcher of `mpcbandit serve --out` and `serve-replay` answer no HTTP: they start without
importing aiohttp (~0.2 CPU-s a process, paid at every start, resume and replay of a service),
which a serving party does import."""

import json
import os
import subprocess
import sys

from conftest import REPO
from deadlines import deadline

#: what the launcher and serve-replay import, then what a serving party imports
PROBE = """
import json, sys
import mpcbandit.serve.local, mpcbandit.serve.command
import mpcbandit.protocols.hannun.serve_replay, mpcbandit.protocols.o3m.serve_replay
light = "aiohttp" in sys.modules
import parties.serving
print(json.dumps([light, "aiohttp" in sys.modules]))
"""


def test_the_service_launcher_and_serve_replay_start_without_aiohttp():
    done = subprocess.run([sys.executable, "-c", PROBE], cwd=REPO, capture_output=True,
                          text=True, timeout=deadline(120),
                          env=dict(os.environ, PYTHONPATH=str(REPO)))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == [False, True]
