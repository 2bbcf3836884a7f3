"""Hannun's bandit served online, in float64: the replay of a serve log that the secure batches
(``ops``) must equal arm for arm, and the public Newton–Schulz schedule both run.

A log is a sequence of batches, applied in order: a decision batch takes the next B items of
the dealer's exploration stream (the stream of ``reference.replay``, drawn from the same
key) and picks B arms against the model as it stands; a reward batch of R rewards adds
Σ o x xᵀ to W_a and Σ o r x to b_a (sums: their order within the batch does not matter) and then
refreshes W_a⁻¹ by the scaled Newton–Schulz iteration of ``newton_schulz_schedule(R)``, started
from the running inverse. docs/serve.md "How the batched update works".
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from mpcbandit.bandits.egreedy import ExplorationSamples, draw_exploration, tie_break_argmax
from mpcbandit.errors import DataError
from mpcbandit.mpc.prg import Prg

__all__ = ["SCALE_BITS", "START_MARGIN", "MAX_REWARDS", "chunks", "newton_schulz_schedule",
           "inverse_error_bound", "newton_schulz",
           "ServeReference", "replay_log"]

#: fractional bits of the schedule's constants: c X times a constant stays within 2L + SCALE_BITS
#: bits, where the exact truncation takes it back (|value| < 2^(62 - 2L - SCALE_BITS) = 16)
SCALE_BITS = 18
#: how far below 1 the spectrum of W X may start: the running inverse's own error
START_MARGIN = 2.0 ** -6
#: the most rewards one refresh takes: the first step's c2 ~ (2 / (2 + R))^2 keeps >= 15 units
#: of 2^-SCALE_BITS; a larger batch is applied as consecutive refreshes of at most this many
MAX_REWARDS = 256


def chunks(count: int) -> list[slice]:
    """The consecutive parts, of at most MAX_REWARDS rewards, a batch of count is applied in."""
    return [slice(i, min(i + MAX_REWARDS, count)) for i in range(0, count, MAX_REWARDS)]


def _image(c1: float, c2: float, lo: float, hi: float) -> tuple[float, float]:
    """The range of f(l) = c1 l - c2 l^2 over [lo, hi] (a parabola with its top at c1/2c2)."""
    ends = [c1 * lo - c2 * lo * lo, c1 * hi - c2 * hi * hi]
    top = c1 / (2 * c2)
    return min(ends), (c1 * c1 / (4 * c2) if lo <= top <= hi else max(ends))


def _dyadic(value: float, bits: int) -> float:
    return round(value * 2 ** bits) / 2 ** bits


def newton_schulz_schedule(rewards: int, bits: int) -> list[tuple[float, float]]:
    """The constants (c1, c2) of each iteration X <- c1 X - c2 X W X that refresh W^-1 after a
    batch of `rewards` rewards, multiples of 2^-SCALE_BITS: X (2 - a W X) a scaled to the
    spectrum's bound, plain Newton–Schulz (2, 1) at the end. Public: it depends on the batch's
    size only.

    From the running inverse X of W_old, the spectrum of W X for W = W_old + Σ x xᵀ (R contexts
    of norm <= 1) lies in [1 - m, (1 + R)(1 + m)]: x^T W_old^-1 x <= 1, so each context adds at
    most 1. Unscaled Newton–Schulz needs it inside (0, 2): a fresh arm and one unit context
    already put an eigenvalue at 2, where it never moves. Each step maps [lo, hi] to the range
    of c1 l - c2 l^2; the steps run until that lies within 2^-(bits + 2) of 1 (below the fixed
    point's unit)."""
    if not 1 <= rewards <= MAX_REWARDS:
        raise ValueError(f"a refresh after {rewards} rewards: it takes 1..{MAX_REWARDS} "
                         "(a larger batch is applied in chunks())")
    lo, hi = 1 - START_MARGIN, (1 + rewards) * (1 + START_MARGIN)
    target = 2.0 ** -(bits + 2)
    steps: list[tuple[float, float]] = []
    while 1 - lo > target or hi - 1 > target:
        a = 2 / (lo + hi)
        c = (2.0, 1.0) if abs(a - 1) < 2.0 ** -8 else (_dyadic(2 * a, SCALE_BITS),
                                                        _dyadic(a * a, SCALE_BITS))
        if _image(*c, lo, hi)[0] < _image(2 * a, a * a, lo, hi)[0] / 2:
            # c2's rounding, times hi^2, may sink the image's low end (about 4 lo / hi) to 0
            # or below once the spectrum is wide (R from 104 on), and the iteration then
            # diverges: c2 rounded down lifts that end instead
            c = (c[0], math.floor(a * a * 2 ** SCALE_BITS) / 2 ** SCALE_BITS)
        lo, hi = _image(*c, lo, hi)
        steps.append(c)
        if len(steps) > 64:  # pragma: no cover - the steps converge quadratically
            raise AssertionError(f"no schedule for {rewards} rewards at {bits} bits")
    return steps


def inverse_error_bound(dims: int, bits: int, w_norm: float) -> float:
    """The most any entry of the secure W^-1 may differ from the true inverse after a refresh
    (2 feature holders, exact truncation; W of spectral norm w_norm): the schedule's residual
    2^-(L+2), the last step's rounding e = (D + sqrt(D) + 1) 2^-L (floor(W) X truncated, times
    X, the triangle truncated; entries of X <= 1), its product with the residual the step
    before left, and the square the step leaves of the rounding before it, ||W|| (D e)^2.
    It does not grow with the log: W is exact and every refresh starts the iteration anew."""
    unit = 2.0 ** -bits
    e = (dims + math.sqrt(dims) + 1) * unit
    return 2.0 ** -(bits + 2) + e * (1 + dims * 2.0 ** -10) + w_norm * (dims * e) ** 2


def newton_schulz(w: np.ndarray, x: np.ndarray, steps: list[tuple[float, float]]) -> np.ndarray:
    """X <- c1 X - c2 X W X for each step (W, X of shape (..., D, D)), in float64."""
    for c1, c2 in steps:
        x = c1 * x - c2 * (x @ (w @ x))
    return x


@dataclass
class ServeReference:
    """The served bandit in float64, batch by batch: decisions against the current model,
    rewards applied as exact sums and W^-1 refreshed by the same schedule."""

    arms: int
    dims: int
    epsilon: float
    bits: int
    key: bytes
    regularizer: float = 0.0
    decided: int = 0
    gaps: list = field(default_factory=list)

    def __post_init__(self):
        eye = np.repeat(np.eye(self.dims)[None], self.arms, axis=0)
        self.w = eye * (1.0 + self.regularizer)
        self.w_inv = eye / (1.0 + self.regularizer)
        self.b = np.zeros((self.arms, self.dims))
        self.prg = Prg(self.key)
        self.scores = np.zeros((0, self.arms))   # the last decision batch's scores

    def draw(self, count: int) -> ExplorationSamples:
        """The next count items of the exploration stream."""
        return draw_exploration(self.prg, count, self.arms, self.epsilon, self.bits)

    def decide(self, contexts: np.ndarray) -> np.ndarray:
        """The arms of a batch of contexts (B, D), the next B items of the exploration stream."""
        smp = self.draw(len(contexts))
        self.decided += len(contexts)
        u = np.einsum("aij,bj->bai", self.w_inv, contexts)         # W_a^-1 x, every arm
        scores = np.einsum("ad,bad->ba", self.b, u)
        self.scores = np.where(smp.explore[:, None] == 1, smp.v(), scores)
        chosen = tie_break_argmax(self.scores, smp.perm)
        for row, greedy in zip(scores[smp.explore == 0], chosen[smp.explore == 0]):
            self.gaps.append(_gap(row, greedy))
        return chosen

    def update(self, contexts: np.ndarray, arms: np.ndarray, rewards: np.ndarray) -> None:
        """Apply a batch of R rewards of decisions (their contexts and arms), in chunks()."""
        for part in chunks(len(arms)):
            hot = np.eye(self.arms)[arms[part]]                       # (R, A)
            x = contexts[part]
            self.w += np.einsum("ra,ri,rj->aij", hot, x, x)
            self.b += np.einsum("ra,r,rd->ad", hot, rewards[part], x)
            self.w_inv = newton_schulz(self.w, self.w_inv,
                                       newton_schulz_schedule(len(x), self.bits))


def _gap(scores: np.ndarray, chosen: int) -> float:
    """How far the chosen score stands from the nearest different one (inf: all equal)."""
    others = scores[scores != scores[chosen]]
    return float(np.min(np.abs(others - scores[chosen]))) if others.size else math.inf


def replay_log(log: list[tuple[str, list, object]], ref: ServeReference,
               served: dict[str, int] | None = None, on_decide=None) -> dict[str, int]:
    """Replay a serve log on ref: ("decide", ids, contexts (B, D)) and ("reward", ids, rewards)
    in order; returns the arm of every decided id. A reward for an id never decided, or
    rewarded before, is refused by name. With served (the arms a service chose, by id) each
    reward is applied to the arm that was served, as the service applied it: a near tie the
    fixed point broke the other way stays one differing decision, not a different model.
    on_decide(ids, arms) is called after each decision batch (ref.scores holds its scores)."""
    arms: dict[str, int] = {}
    applied = arms if served is None else served
    contexts: dict[str, np.ndarray] = {}
    rewarded: set[str] = set()
    for n, (kind, ids, values) in enumerate(log):
        if kind == "decide":
            batch = np.asarray(values, dtype=np.float64)
            chosen = ref.decide(batch)
            for i, a, x in zip(ids, chosen, batch):
                arms[i], contexts[i] = int(a), x
            if on_decide is not None:
                on_decide(ids, chosen)
            continue
        if kind != "reward":
            raise ValueError(f"serve log batch {n}: {kind!r} is neither 'decide' nor 'reward'")
        for i in ids:
            if i not in arms or i in rewarded:
                raise DataError(f"serve log batch {n}: a reward for id {i!r}, "
                                + ("rewarded before" if i in rewarded else "never decided"))
            rewarded.add(i)
        ref.update(np.array([contexts[i] for i in ids]),
                   np.array([applied.get(i, arms[i]) for i in ids]),
                   np.asarray(values, dtype=np.float64))
    return arms
