"""Communication graphs for decentralized bandits: line, ring, grid, complete, random.

A graph is an adjacency list over agents 0..n-1 (sets, undirected, connected). "grid" lays the
agents out as rows x cols with rows the largest divisor of n not above sqrt(n) (a prime n gives
a line); "random" is a random spanning tree plus every other edge with probability edge_prob,
drawn from the config seed (the graph is public).
"""

from __future__ import annotations

import math
from collections import deque

from mpcbandit.protocols import seeded_rng

__all__ = ["GRAPHS", "build_graph", "within_hops", "diameter"]

GRAPHS = ("line", "ring", "grid", "complete", "random")


def build_graph(kind: str, n: int, *, seed: int = 0, edge_prob: float = 0.5) -> list[set[int]]:
    """Adjacency sets of the named graph on n agents."""
    adj: list[set[int]] = [set() for _ in range(n)]

    def edge(a: int, b: int) -> None:
        if a != b:
            adj[a].add(b)
            adj[b].add(a)

    if kind in ("line", "ring"):
        for i in range(n - 1):
            edge(i, i + 1)
        if kind == "ring" and n > 2:
            edge(n - 1, 0)
    elif kind == "grid":
        rows = max(r for r in range(1, math.isqrt(n) + 1) if n % r == 0)
        cols = n // rows
        for r in range(rows):
            for c in range(cols):
                i = r * cols + c
                if c + 1 < cols:
                    edge(i, i + 1)
                if r + 1 < rows:
                    edge(i, i + cols)
    elif kind == "complete":
        for i in range(n):
            for j in range(i + 1, n):
                edge(i, j)
    elif kind == "random":
        rng = seeded_rng(seed, "graph/random")
        for j in range(1, n):
            edge(j, int(rng.integers(j)))
        extra = rng.uniform(size=(n, n)) < edge_prob
        for i in range(n):
            for j in range(i + 1, n):
                if extra[i, j]:
                    edge(i, j)
    else:
        raise ValueError(f"graph must be one of {', '.join(GRAPHS)}, got {kind!r}")
    return adj


def _distances(adj: list[set[int]], src: int) -> dict[int, int]:
    dist = {src: 0}
    queue = deque([src])
    while queue:
        v = queue.popleft()
        for w in adj[v]:
            if w not in dist:
                dist[w] = dist[v] + 1
                queue.append(w)
    return dist


def within_hops(adj: list[set[int]], i: int, hops: int) -> list[int]:
    """N_gamma(i): the agents at distance <= hops from i, i included, sorted."""
    return sorted(v for v, d in _distances(adj, i).items() if d <= hops)


def diameter(adj: list[set[int]]) -> int:
    """The longest shortest path (graphs here are connected)."""
    return max(max(_distances(adj, i).values()) for i in range(len(adj)))
