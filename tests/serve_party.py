"""A party process of the serve shell with the fake backend (tests/serve_support.py): what the
kill -9 and SIGTERM tests start, stop and kill.

    python tests/serve_party.py --url-file F --wal W [--hold-until FILE] [--set batch_ms=5 ...]
"""

import argparse
import logging
import os
import sys
import threading
import time
import tomllib
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from deadlines import deadline  # noqa: E402
from serve_support import FakeBackend, serve_section  # noqa: E402

from mpcbandit.serve.server import run_service  # noqa: E402
from mpcbandit.serve.service import ServiceRole  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--url-file", required=True)
    ap.add_argument("--wal", required=True)
    ap.add_argument("--features", type=int, default=2)
    ap.add_argument("--hold-until", help="decide nothing until this file exists")
    ap.add_argument("--set", action="append", default=[], help="a [serve] KEY=VALUE")
    args = ap.parse_args()
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(name)s %(message)s")
    values = {k: tomllib.loads(f"v = {v}")["v"] for k, v in (s.split("=", 1) for s in args.set)}
    backend = FakeBackend(hold=bool(args.hold_until))
    if args.hold_until:
        def release_when_told():
            end = time.monotonic() + deadline(120)
            while not os.path.exists(args.hold_until) and time.monotonic() < end:
                time.sleep(0.02)
            backend.release()
        threading.Thread(target=release_when_told, daemon=True).start()

    def announce(url: str) -> None:
        tmp = Path(args.url_file + ".tmp")
        tmp.write_text(url)
        tmp.replace(args.url_file)

    role = ServiceRole("party.0", features=args.features, decides=True, rewards=True)
    return run_service(serve_section(**values), role, backend, Path(args.wal), announce)


if __name__ == "__main__":
    sys.exit(main())
