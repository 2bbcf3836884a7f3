"""(epsilon, delta) -> noise scale and regularizer bounds, from the papers' propositions.

Both papers privatize the prefix sums of M_t = sum [x y]^T [x y] with a tree of depth
m = 1 + ceil(log2 n), every node (eps / sqrt(8 m ln(2/delta)), delta / 2m)-DP, so the n
releases are (eps, delta)-DP. L~^2 = L^2 + B^2 bounds ||[x y]||^2 (here L = B = 1).

Gaussian (Shariff & Sheffet §4.2, Prop. 11; Dubey & Pentland §4.3, Prop. 4):
  sigma_noise^2 = 16 m L~^4 ln(c/delta)^2 / eps^2 (c = 4 in S&S, 2 in D&P, as printed),
  Upsilon = sigma_noise sqrt(2m) (4 sqrt(d) + 2 ln(2N/alpha)) bounds ||H_t|| w.p. 1 - alpha/2N,
  shift 2 Upsilon I, rho_min = Upsilon, rho_max = 3 Upsilon,
  gamma (kappa in D&P) = sigma_noise sqrt(m / Upsilon) (sqrt(d) + sqrt(2 ln(2N/alpha))).
Wishart W_{d+1}(L~^2 I, k) (Shariff & Sheffet §4.1, Prop. 9; always PSD, no shift):
  k = d + 1 + ceil(224 m eps^-2 ln(8m/delta) ln(2/delta)) (Shariff & Sheffet §4.1; the
      text giving k is garbled in our copy, an audit against the published paper confirmed it),
  rho_min = L~^2 (sqrt(mk) - sqrt(d) - sqrt(2 ln(8N/alpha)))^2,
  rho_max = L~^2 (sqrt(mk) + sqrt(d) + sqrt(2 ln(8N/alpha)))^2,
  gamma = L~ (sqrt(d) + sqrt(2 ln(2N/alpha))).
  Every release sums exactly m draws (a prefix of fewer tree nodes is padded with fresh ones):
  the bounds are stated for W(L~^2 I, mk), and a prefix of one node would fall below rho_min.
Shifted Wishart (Shariff & Sheffet §4.1, Eq. 4 and Cor. 10: the variant of their regret
corollary): the same draws, then H_t - c I with, for a = sqrt(d) + sqrt(2 ln(8N/alpha)),
  c = L~^2 (sqrt(mk) - a)^2 - 4 L~^2 sqrt(mk) a   (rho_min minus the new rho_min), so
  rho_min = 4 L~^2 sqrt(mk) a, rho_max = 8 L~^2 sqrt(mk) a,
  gamma = L~ sqrt(sqrt(mk) (sqrt(d) + sqrt(2 ln(2N/alpha)))).
  rho_max / rho_min = 2 at any epsilon, where the plain Wishart's ((sqrt(mk) + a) / (sqrt(mk) -
  a))^2 grows without bound as epsilon grows and k falls to its floor d + 2.
N is the number of releases covered by the union bound: n for JDP, n M for FedUCB.
Upsilon is computed from the sigma_noise actually used (D&P print ln(4/delta) in their Lambda
but ln(2/delta) in sigma_N; deriving it from sigma keeps the shift matched to the noise).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Callable

import numpy as np

from mpcbandit.dp.noise import NormalSource, symmetric_gaussian, wishart
from mpcbandit.dp.tree import tree_depth

__all__ = ["NOISES", "WISHARTS", "PrivacyParams", "privacy_params"]

NOISES = ("gaussian", "wishart", "shifted-wishart", "none")
WISHARTS = ("wishart", "shifted-wishart")


@dataclass(frozen=True)
class PrivacyParams:
    """Everything the privatizer and the learner need to know about the noise."""

    noise: str
    epsilon: float
    delta: float
    alpha: float
    dims: int
    releases: int          # n: inserts the tree is budgeted for
    depth: int             # m = 1 + ceil(log2 n)
    union: int             # N: releases covered by the union bound (n, or n M)
    l_tilde2: float        # L^2 + B^2
    sigma_noise: float     # per-entry std of a Gaussian node (0 otherwise)
    wishart_k: int         # Wishart degrees of freedom (0 otherwise)
    upsilon: float         # bound on ||H_t|| before the shift (Gaussian)
    shift: float           # added as shift I: 2 Upsilon (Gaussian), 0 (Wishart), -c (shifted
                           # Wishart), lambda (none)
    rho_min: float
    rho_max: float
    gamma: float           # bound on ||h_t||_{H_t^-1} (kappa in Dubey & Pentland)
    node_eps: float        # per-node privacy: eps / sqrt(8 m ln(2/delta))
    node_delta: float      # delta / 2m

    def node_noise(self, source: Callable[[bytes], NormalSource]) -> Callable[[bytes], np.ndarray]:
        """A sampler of one tree node's (d+1) x (d+1) noise; source(label) gives the draw's
        source (keyed by what it covers, or one stream for every label)."""
        dim = self.dims + 1
        if self.noise == "gaussian":
            return lambda label: symmetric_gaussian(source(label), dim, self.sigma_noise)
        if self.noise in WISHARTS:
            return lambda label: wishart(source(label), dim, self.l_tilde2, self.wishart_k)
        return lambda label: np.zeros((dim, dim))

    def pad_noise(self, source: Callable[[bytes], NormalSource]) -> Callable[[int, bytes], np.ndarray] | None:
        """(n, label) -> n nodes' noise in one draw (W(L~^2 I, n k)), for the Wishart variants,
        whose bounds need every release to sum m nodes' noise; None for the others."""
        if self.noise not in WISHARTS:
            return None
        return lambda n, label: wishart(source(label), self.dims + 1, self.l_tilde2,
                                        n * self.wishart_k)

    def entry_variance(self, nodes: int) -> np.ndarray:
        """Per-entry variance of a release built from `nodes` tree nodes, (d+1) x (d+1)."""
        dim = self.dims + 1
        if self.noise == "gaussian":
            base = self.sigma_noise**2 * (np.ones((dim, dim)) + np.eye(dim))
        elif self.noise in WISHARTS:
            base = self.wishart_k * self.l_tilde2**2 * (np.ones((dim, dim)) + np.eye(dim))
        else:
            base = np.zeros((dim, dim))
        return nodes * base

    def to_dict(self) -> dict:
        return asdict(self)


def privacy_params(noise: str, *, epsilon: float, delta: float, dims: int, releases: int,
                   alpha: float = 0.1, lam: float = 1.0, union_factor: int = 1,
                   delta_log_c: float = 4.0, l2: float = 1.0, b2: float = 1.0) -> PrivacyParams:
    """The papers' noise scale and (alpha/2N)-accurate bounds for n = releases inserts.

    union_factor multiplies n in the union bound (M for FedUCB); delta_log_c is the c in
    ln(c/delta) of sigma_noise (4: Shariff & Sheffet, 2: Dubey & Pentland).
    """
    if noise not in NOISES:
        raise ValueError(f"noise must be one of {', '.join(NOISES)}, got {noise!r}")
    m = tree_depth(releases)
    big_n = releases * union_factor
    lt2 = l2 + b2
    d = dims
    common = dict(noise=noise, epsilon=epsilon, delta=delta, alpha=alpha, dims=dims,
                  releases=releases, depth=m, union=big_n, l_tilde2=lt2,
                  node_eps=epsilon / math.sqrt(8 * m * math.log(2 / delta)),
                  node_delta=delta / (2 * m))
    if noise == "none":
        return PrivacyParams(**common, sigma_noise=0.0, wishart_k=0, upsilon=0.0, shift=lam,
                             rho_min=lam, rho_max=lam, gamma=0.0)
    if noise == "gaussian":
        sigma = 4 * math.sqrt(m) * lt2 * math.log(delta_log_c / delta) / epsilon
        ups = sigma * math.sqrt(2 * m) * (4 * math.sqrt(d) + 2 * math.log(2 * big_n / alpha))
        gamma = sigma * math.sqrt(m / ups) * (math.sqrt(d) + math.sqrt(2 * math.log(2 * big_n / alpha)))
        return PrivacyParams(**common, sigma_noise=sigma, wishart_k=0, upsilon=ups, shift=2 * ups,
                             rho_min=ups, rho_max=3 * ups, gamma=gamma)
    k = d + 1 + math.ceil(224 * m * math.log(8 * m / delta) * math.log(2 / delta) / epsilon**2)
    a = math.sqrt(d) + math.sqrt(2 * math.log(8 * big_n / alpha))
    root = math.sqrt(m * k)
    rho_min = lt2 * max(root - a, 0.0) ** 2
    if rho_min <= 0:
        raise ValueError(f"Wishart bound rho_min is 0 (sqrt(mk) = {root:.1f} <= {a:.1f}); "
                         "use larger k (smaller epsilon) or Gaussian noise")
    b = math.sqrt(d) + math.sqrt(2 * math.log(2 * big_n / alpha))
    if noise == "wishart":
        return PrivacyParams(**common, sigma_noise=0.0, wishart_k=k, upsilon=0.0, shift=0.0,
                             rho_min=rho_min, rho_max=lt2 * (root + a) ** 2, gamma=math.sqrt(lt2) * b)
    new_min = 4 * lt2 * root * a  # Eq. 4: shift the lower bound down to rho_min'
    return PrivacyParams(**common, sigma_noise=0.0, wishart_k=k, upsilon=0.0,
                         shift=-(rho_min - new_min), rho_min=new_min, rho_max=2 * new_min,
                         gamma=math.sqrt(lt2) * math.sqrt(root * b))
