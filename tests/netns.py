"""Throw-away test hosts: Linux network namespaces joined by veth links to a bridge.

Every namespace, link and address is created by the test itself and removed afterwards;
traffic never leaves them.
"""

import secrets
import subprocess


class NamespaceUnavailable(Exception):
    """The system refuses network namespaces (not root, no CAP_NET_ADMIN, no bridge)."""


def _ip(*args: str, ns: str | None = None) -> None:
    cmd = (["ip", "netns", "exec", ns, "ip"] if ns else ["ip"]) + list(args)
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise NamespaceUnavailable(f"`{' '.join(cmd)}` failed: {proc.stderr.strip()}")


class Hosts:
    """n hosts 10.77.<net>.1..n, each a namespace, all on one bridge in a hub namespace."""

    def __init__(self, n: int):
        self.tag = secrets.token_hex(3)
        self.net = int(self.tag[:2], 16) % 250 + 1
        self.hub = f"mpcb-{self.tag}-hub"
        self.names = [f"mpcb-{self.tag}-{i}" for i in range(n)]
        self.addresses = [f"10.77.{self.net}.{i + 1}" for i in range(n)]
        self._made: list[str] = []

    def __enter__(self) -> "Hosts":
        try:
            for ns in [self.hub, *self.names]:
                _ip("netns", "add", ns)
                self._made.append(ns)
                _ip("link", "set", "lo", "up", ns=ns)
            _ip("link", "add", "br0", "type", "bridge", ns=self.hub)
            _ip("link", "set", "br0", "up", ns=self.hub)
            for i, (ns, addr) in enumerate(zip(self.names, self.addresses)):
                outer, inner = f"v{self.tag}h{i}", f"v{self.tag}p{i}"
                # made inside the hub, its peer sent straight into the host: nothing is ever
                # added to the root namespace, not even for a moment
                _ip("link", "add", outer, "type", "veth", "peer", "name", inner, "netns", ns,
                    ns=self.hub)
                _ip("link", "set", outer, "master", "br0", ns=self.hub)
                _ip("link", "set", outer, "up", ns=self.hub)
                _ip("addr", "add", f"{addr}/24", "dev", inner, ns=ns)
                _ip("link", "set", inner, "up", ns=ns)
        except BaseException:
            self.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc) -> None:
        for ns in reversed(self._made):  # deleting a namespace deletes its links
            subprocess.run(["ip", "netns", "del", ns], capture_output=True)
        self._made.clear()

    def exec_prefix(self, i: int) -> list[str]:
        return ["ip", "netns", "exec", self.names[i]]
