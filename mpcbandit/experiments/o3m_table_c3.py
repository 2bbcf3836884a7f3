"""Cao et al. (2023), Table C.3 as `mpcbandit bench o3m-table-c3`: seconds to compute the
bandit statistic with O3M, Paillier HE, MPC and DP, small (d = 100, K = 20, M = 5) and large
(d = 500, K = 10, M = 500) settings.

The statistic: the K LinUCB values x^T theta + beta ||x||_{V^-1} of one round, from the M
participants' local context slices and the AP's state (V^-1, theta after 50 observations).
Times are the sum of every party's computation on this one process (no network).
- O3M: every participant computes Q^j x^j (K x d), the AP sums and scores. Lossless.
- HE (Paillier, phe + gmpy2, 2048-bit n): participants encrypt their slices; the AP computes
  Enc(x^T theta) and Enc(V^-1 x) with plaintext-ciphertext products; each participant j
  returns Enc(x^j . (V^-1 x)^j); a key holder (not the AP) decrypts 2K numbers. HE is slow:
  we run a fraction (small: 1 of K arms in full; large: 1 arm and `--he-rows` of the d rows
  of V^-1 x) and extrapolate each phase linearly in its operation count; said in the output.
  Correctness of the full HE pipeline is checked at a tiny size.
- MPC: the project's MPC engine (docs/mpc-api.md): each participant secret-shares its slice
  with 2 computing parties (dealer for Beaver material); they compute the UCB values on
  shares (V^-1 and theta kept shared; sqrt by a Newton inverse square root) and open them to
  the AP alone. Threads in one process, no network emulated; rounds and bytes printed.
- DP: the Gaussian mechanism on each participant's slice ((eps, delta) = (1, 1e-5), L2
  sensitivity 2 for unit contexts, noise from the AES PRG), the AP scores the noisy contexts.
  Not lossless: the output shows its error.

Two shapes of the same statistic are timed for O3M and DP. Ours ("vectorised"): participant j
masks (or perturbs) its K x d_j slice, K d d_j work, K d^2 in all. The paper's ("per
participant"): each participant encrypts its local context as a zero-padded d-vector, a d x d
product per arm (O3M: Q x~^j; DP: its noisy x~^j times V^-1, which the AP sums), K M d^2 in all.
The paper does not say how it computed the statistic; its O3M and DP times grow 1,213x and
1,296x from small to large, as K M d^2 does (1,250x), where K d^2 grows 12.5x: the per
participant shape is our reading of what it timed. Both columns, and each one's growth.
"""

from __future__ import annotations

import math
import time

import click
import numpy as np

from mpcbandit.bandits.linear import LinearBandit, ucb_scores
from mpcbandit.crypto.orthogonal_mask import (
    block_offsets,
    column_blocks,
    haar_orthogonal,
    prg_normal,
)
from mpcbandit.experiments.common import (
    Output,
    experiment_command,
    or_dash,
)
from mpcbandit.mpc.prg import Prg
from mpcbandit.results import estimate_seconds

__all__ = ["table_c3", "setting_data", "o3m_statistic", "dp_statistic", "dp_per_participant",
           "he_statistic", "he_check_tiny", "mpc_statistic"]

SETTINGS = {"small": (100, 20, 5), "large": (500, 10, 500)}
PAPER = {"small": {"O3M": 0.006, "HE": 1190.0, "MPC": 2.282, "DP": 0.005},
         "large": {"O3M": 7.28, "HE": None, "MPC": 103.0, "DP": 6.48}}
BETA, WARMUP = 0.5, 50
EPS, DELTA, SENSITIVITY = 1.0, 1e-5, 2.0
SIGMA = SENSITIVITY * math.sqrt(2 * math.log(1.25 / DELTA)) / EPS  # the Gaussian mechanism's


def setting_data(d: int, k: int, m: int, seed: int = 0):
    """Unit contexts (K x d) split over M participants, and an AP state after WARMUP updates."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((k, d))
    x /= np.linalg.norm(x, axis=1, keepdims=True)
    partition = [d // m + (1 if j < d % m else 0) for j in range(m)]
    bandit = LinearBandit(d)
    theta_star = rng.standard_normal(d) / np.sqrt(d)
    for _ in range(WARMUP):
        z = rng.standard_normal(d)
        z /= np.linalg.norm(z)
        bandit.update(z, float(z @ theta_star))
    return x, partition, bandit


def timed(fn, repeats: int):
    """(median seconds, last result) of fn() over repeats."""
    times, out = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return float(np.median(times)), out


# ---------------------------------------------------------------- O3M and DP


def padded_slices(x, partition) -> list[np.ndarray]:
    """Participant j's slice as K zero-padded d-vectors (its own columns, zeros elsewhere)."""
    out = []
    for a, b in block_offsets(partition):
        z = np.zeros_like(x)
        z[:, a:b] = x[:, a:b]
        out.append(z)
    return out


def o3m_statistic(x, partition, bandit, repeats: int,
                  per_participant: bool = False) -> tuple[float, float]:
    """(seconds, max |error| vs plaintext UCB) for masking by all participants + AP scoring:
    each participant's slice times its block Q^j (ours), or its zero-padded context times the
    whole d x d Q (the paper's shape, K d^2 each)."""
    d = x.shape[1]
    q = haar_orthogonal(d, Prg())
    if per_participant:
        pairs = [(z, q) for z in padded_slices(x, partition)]
    else:
        slices = [np.ascontiguousarray(x[:, a:b]) for a, b in block_offsets(partition)]
        pairs = list(zip(slices, column_blocks(q, partition)))
    theta_m, v_inv_m = q @ bandit.theta, q @ bandit.v_inv @ q.T  # the AP's state lives in Q-space

    def run():
        masked = pairs[0][0] @ pairs[0][1].T
        for z, qj in pairs[1:]:
            masked += z @ qj.T
        return ucb_scores(masked, theta_m, v_inv_m, BETA)

    sec, scores = timed(run, repeats)
    return sec, float(np.abs(scores - ucb_scores(x, bandit.theta, bandit.v_inv, BETA)).max())


def dp_per_participant(x, partition, bandit, repeats: int) -> tuple[float, float]:
    """(seconds, max |error|) of the paper's shape for DP: each participant perturbs its padded
    context on its own columns and sends its product with V^-1 (K d^2 each); the AP sums them."""
    cols = block_offsets(partition)
    padded = padded_slices(x, partition)
    prg = Prg()
    theta, v_inv = bandit.theta, bandit.v_inv

    def run():
        noisy_x, noisy_xv = np.zeros_like(x), np.zeros_like(x)
        for (a, b), z in zip(cols, padded):
            z = z.copy()
            z[:, a:b] += SIGMA * prg_normal(prg, (x.shape[0], b - a))
            noisy_x += z
            noisy_xv += z @ v_inv
        quad = np.einsum("kd,kd->k", noisy_xv, noisy_x)
        return noisy_x @ theta + BETA * np.sqrt(np.maximum(quad, 0))

    sec, scores = timed(run, repeats)
    return sec, float(np.abs(scores - ucb_scores(x, theta, v_inv, BETA)).max())


def dp_statistic(x, partition, bandit, repeats: int) -> tuple[float, float]:
    """(seconds, max |error|) for Gaussian-mechanism contexts + AP scoring."""
    cols = block_offsets(partition)
    slices = [np.ascontiguousarray(x[:, a:b]) for a, b in cols]
    prg = Prg()
    theta, v_inv = bandit.theta, bandit.v_inv

    def run():
        noisy = np.concatenate([s + SIGMA * prg_normal(prg, s.shape) for s in slices], axis=1)
        return ucb_scores(noisy, theta, v_inv, BETA)

    sec, scores = timed(run, repeats)
    return sec, float(np.abs(scores - ucb_scores(x, theta, v_inv, BETA)).max())


# ---------------------------------------------------------------- Paillier HE


def he_pipeline(pk, sk, x, partition, bandit, arms: list[int], rows: int) -> dict:
    """HE statistic for the given arms using `rows` rows of V^-1 x; seconds per phase and counts.

    With rows = d the returned 'scores' are the exact UCB values of those arms.
    """
    d = x.shape[1]
    theta, v_inv = bandit.theta.tolist(), bandit.v_inv
    owner = np.concatenate([np.full(n, j) for j, n in enumerate(partition)])
    phase = dict.fromkeys(("encrypt", "linear", "matrix", "quadratic", "decrypt"), 0.0)
    counts = dict.fromkeys(phase, 0)
    scores = []
    for a in arms:
        t0 = time.perf_counter()
        enc = [pk.encrypt(float(v)) for v in x[a]]                   # participants: Enc(x^j)
        t1 = time.perf_counter()
        lin = enc[0] * theta[0]                                      # AP: Enc(x^T theta)
        for i in range(1, d):
            lin = lin + enc[i] * theta[i]
        t2 = time.perf_counter()
        y = []                                                       # AP: Enc((V^-1 x)_i)
        for i in range(rows):
            row = v_inv[i].tolist()
            acc = enc[0] * row[0]
            for c in range(1, d):
                acc = acc + enc[c] * row[c]
            y.append(acc)
        t3 = time.perf_counter()
        quad_parts = {}                                              # PP_j: Enc(x^j . y^j)
        for i in range(rows):
            term = y[i] * float(x[a, i])
            j = int(owner[i])
            quad_parts[j] = term if j not in quad_parts else quad_parts[j] + term
        parts = list(quad_parts.values())
        quad = parts[0]
        for p in parts[1:]:                                          # AP sums the M answers
            quad = quad + p
        t4 = time.perf_counter()
        r, q2 = sk.decrypt(lin), sk.decrypt(quad)                    # key holder
        scores.append(r + BETA * math.sqrt(max(q2, 0.0)))
        t5 = time.perf_counter()
        for key, dt in zip(phase, (t1 - t0, t2 - t1, t3 - t2, t4 - t3, t5 - t4)):
            phase[key] += dt
        counts["encrypt"] += d
        counts["linear"] += d
        counts["matrix"] += rows * d
        counts["quadratic"] += rows
        counts["decrypt"] += 2
    return {"seconds": phase, "counts": counts, "scores": scores}


def he_statistic(x, partition, bandit, rows: int) -> tuple[float, float, str]:
    """(extrapolated seconds, measured seconds, note) for the HE column."""
    from phe import paillier

    k, d = x.shape
    pk, sk = paillier.generate_paillier_keypair(n_length=2048)
    rows = min(rows, d)
    frac = he_pipeline(pk, sk, x, partition, bandit, arms=[0], rows=rows)
    full_counts = {"encrypt": k * d, "linear": k * d, "matrix": k * d * d, "quadratic": k * d,
                   "decrypt": 2 * k}
    total = sum(frac["seconds"][p] * full_counts[p] / frac["counts"][p] for p in full_counts)
    measured = sum(frac["seconds"].values())
    note = f"measured 1 of {k} arms, {rows} of {d} rows of V^-1 x ({measured:.1f} s), extrapolated"
    if rows == d:
        exact = ucb_scores(x[:1], bandit.theta, bandit.v_inv, BETA)[0]
        note += f"; arm-0 value error {abs(frac['scores'][0] - exact):.1e}"
    return total, measured, note


def he_check_tiny() -> float:
    """Max |error| of the full HE pipeline vs plaintext UCB at d = 6, K = 3, M = 2."""
    from phe import paillier

    x, partition, bandit = setting_data(6, 3, 2, seed=3)
    pk, sk = paillier.generate_paillier_keypair(n_length=1024)
    got = he_pipeline(pk, sk, x, partition, bandit, arms=[0, 1, 2], rows=6)["scores"]
    return float(np.abs(np.array(got) - ucb_scores(x, bandit.theta, bandit.v_inv, BETA)).max())


# ---------------------------------------------------------------- MPC


MPC_PARTIES = ["compute.0", "compute.1"]
INVSQRT_ITERATIONS = 10


def mpc_ucb(eng, x_shares, v_inv, theta, beta: float):
    """Shared UCB values x^T theta + beta sqrt(x^T V^-1 x) of every arm (computing parties).

    sqrt(q) = q / sqrt(q) with 1/sqrt(q) by Newton y <- y (3 - q y^2) / 2 from y0 = 3 - 2q,
    which converges for q in (0, 1] (unit contexts, lambda = 1): multiplications only.
    """
    x = type(x_shares[0]).concat(x_shares, axis=1)
    r, xv = eng.together(eng.op.matmul(x, theta), eng.op.matmul(x, v_inv), label="ucb")
    q = eng.mul(xv, x).sum(axis=1)
    y = 3.0 - q * 2
    for _ in range(INVSQRT_ITERATIONS):
        qy2 = eng.mul(q, eng.square(y))
        y = eng.mul(y, 1.5 - eng.mul_public(qy2, 0.5))
    return r + eng.mul_public(eng.mul(q, y), beta)


def mpc_statistic(x, partition, bandit, trunc: str = "auto"):
    """(seconds, max |error|, note): participants secret-share their slices with 2 computing
    parties (+ dealer), which compute the UCB values and open them to the AP alone."""
    from dealer import serve
    from mpcbandit.mpc.engine import Engine
    from mpcbandit.net.inproc import run_inproc

    k, d = x.shape
    holders = [f"part.{j}" for j in range(len(partition))]  # part.0 is the AP
    slices = [np.ascontiguousarray(x[:, a:b]) for a, b in block_offsets(partition)]
    clock = {}

    def computing(chan):
        eng = Engine(chan, MPC_PARTIES, trunc=trunc)
        v_inv, theta = eng.together(eng.op.input(None, "part.0"), eng.op.input(None, "part.0"),
                                    label="setup")  # the AP's state, kept shared (not timed)
        t0 = time.perf_counter()
        xs = eng.together(*[eng.op.input(None, h) for h in holders], label="input")
        ucb = mpc_ucb(eng, list(xs), v_inv, theta, BETA)
        eng.open_to(ucb, "part.0")
        if chan.me == "compute.0":
            clock["s"] = time.perf_counter() - t0
            st = chan.stats
            offline = ("setup", "dealer")
            clock["rounds"] = st.total().rounds - sum(st.op(o).rounds for o in offline)
            clock["bytes"] = st.total().bytes - sum(st.op(o).bytes for o in offline)
            clock["dealer_rounds"] = st.op("dealer").rounds
        eng.close()

    def holder(j):
        def run(chan):
            eng = Engine(chan, MPC_PARTIES)
            if j == 0:
                eng.together(eng.op.input(bandit.v_inv, "part.0"),
                             eng.op.input(bandit.theta, "part.0"), label="setup")
            eng.together(eng.op.input(slices[j], holders[j]), label="input")
            if j == 0:
                return eng.open_to(None, "part.0")
            return None
        return run

    parties = {p: computing for p in MPC_PARTIES} | {h: holder(j) for j, h in enumerate(holders)}
    parties["dealer.0"] = lambda chan: serve(chan, MPC_PARTIES)
    peers = {p: [q for q in parties if q != p] for p in MPC_PARTIES}
    peers |= {h: list(MPC_PARTIES) for h in holders}
    peers["dealer.0"] = list(MPC_PARTIES)
    results, _ = run_inproc(parties, deadline_s=600.0, peers=peers)
    err = float(np.abs(results["part.0"] - ucb_scores(x, bandit.theta, bandit.v_inv, BETA)).max())
    # the two computing parties exchange in lock-step: each online round is one hop
    lan = estimate_seconds(0.0, clock["rounds"], clock["bytes"], "lan")
    note = (f"2 computing parties + dealer, {len(holders)} input holders, threads in one "
            f"process, no network: {clock['rounds']} online rounds (+{clock['dealer_rounds']} "
            f"with the dealer), {clock['bytes'] / 1e6:.2f} MB online at compute.0, fixed point "
            f"L = 20, truncation {trunc}, max |error| {err:.1e}; on a LAN add ~{lan:.3f} s "
            f"(a one-way delay per round + bytes / bandwidth, docs/summary.md)")
    return clock["s"], err, note


# ---------------------------------------------------------------- the command

COLUMNS = ["setting", "d", "K", "M", "o3m_s", "o3m_error", "o3m_per_participant_s",
           "o3m_per_participant_error", "dp_per_participant_s", "he_s", "he_note", "mpc_s",
           "mpc_error", "mpc_note", "dp_s", "dp_error", "paper_o3m_s", "paper_he_s",
           "paper_mpc_s", "paper_dp_s"]


def measure_setting(name: str, repeats: int, he_rows: int | None, he: bool,
                    mpc_trunc: str) -> dict:
    """One setting's row: every method's seconds and error, and the paper's seconds."""
    d, k, m = SETTINGS[name]
    x, partition, bandit = setting_data(d, k, m)
    o3m_s, o3m_err = o3m_statistic(x, partition, bandit, repeats)
    dp_s, dp_err = dp_statistic(x, partition, bandit, repeats)
    o3m_pp_s, o3m_pp_err = o3m_statistic(x, partition, bandit, repeats, per_participant=True)
    dp_pp_s, _ = dp_per_participant(x, partition, bandit, repeats)
    mpc_s, mpc_err, mpc_note = mpc_statistic(x, partition, bandit, mpc_trunc)
    he_s, he_note = None, "skipped (--no-he)"
    if he:
        he_s, _, he_note = he_statistic(x, partition, bandit,
                                        he_rows or (d if name == "small" else 20))
    return {"setting": name, "d": d, "K": k, "M": m, "o3m_s": o3m_s, "o3m_error": o3m_err,
            "o3m_per_participant_s": o3m_pp_s, "o3m_per_participant_error": o3m_pp_err,
            "dp_per_participant_s": dp_pp_s, "he_s": he_s, "he_note": he_note, "mpc_s": mpc_s,
            "mpc_error": mpc_err, "mpc_note": mpc_note, "dp_s": dp_s, "dp_error": dp_err,
            **{f"paper_{key.lower()}_s": v for key, v in PAPER[name].items()}}


def _echo(rows: list[dict]) -> None:
    click.echo(f"{'setting':<8} {'d':>4} {'K':>3} {'M':>4} {'O3M s':>10} {'HE s':>10} "
               f"{'MPC s':>10} {'DP s':>10} | paper: {'O3M':>6} {'HE':>6} {'MPC':>6} {'DP':>6}")
    for r in rows:
        p = PAPER[r["setting"]]
        click.echo(f"{r['setting']:<8} {r['d']:>4} {r['K']:>3} {r['M']:>4} {r['o3m_s']:>10.5f} "
                   f"{or_dash(r['he_s'], '10.1f')} {or_dash(r['mpc_s'], '10.4f')} "
                   f"{r['dp_s']:>10.5f} | "
                   f"       {p['O3M']:>6} {or_dash(p['HE'], '6g')} {p['MPC']:>6} {p['DP']:>6}")
    click.echo("the paper's shape (each participant a d x d product per arm, K M d^2 in all):")
    for r in rows:
        p = PAPER[r["setting"]]
        click.echo(f"{r['setting']:<8} O3M {r['o3m_per_participant_s']:.5f} s (paper "
                   f"{p['O3M']}), DP {r['dp_per_participant_s']:.5f} s (paper {p['DP']}); "
                   f"O3M max |error| {r['o3m_per_participant_error']:.1e}")
    if len(rows) == 2:
        small, large = rows

        def grow(key: str) -> float:
            return large[key] / small[key]

        click.echo(f"large / small: O3M {grow('o3m_s'):.0f}x vectorised, "
                   f"{grow('o3m_per_participant_s'):.0f}x per participant, paper "
                   f"{PAPER['large']['O3M'] / PAPER['small']['O3M']:.0f}x; DP {grow('dp_s'):.0f}x, "
                   f"{grow('dp_per_participant_s'):.0f}x, paper "
                   f"{PAPER['large']['DP'] / PAPER['small']['DP']:.0f}x (K M d^2 grows "
                   f"{10 * 500 * 500**2 / (20 * 5 * 100**2):.0f}x, K d^2 "
                   f"{10 * 500**2 / (20 * 100**2):.1f}x)")
    for r in rows:
        click.echo(f"{r['setting']}: O3M max |error| {r['o3m_error']:.1e} (lossless); DP max "
                   f"|error| {r['dp_error']:.2f} (eps={EPS:g}, delta={DELTA:g}); HE: "
                   f"{r['he_note']}; MPC: {r['mpc_note']}")


@experiment_command("o3m-table-c3", "both settings, HE on 1 row of V^-1 x per arm (about 10 "
                                    "minutes: HE dominates)",
                    short_help="Seconds for one round's statistic: O3M, HE, MPC, DP")
@click.option("--settings", type=click.Choice(list(SETTINGS)), multiple=True,
              default=list(SETTINGS), help="Settings to time (repeat the option for several).")
@click.option("--repeats", type=click.IntRange(min=1), default=5,
              help="Timed repetitions per method; the median is kept.")
@click.option("--he-rows", type=click.IntRange(min=1), default=None, show_default=False,
              help="Rows of V^-1 x computed under HE per arm  [default: all for small, 20 for "
                   "large; --paper: 1]")
@click.option("--no-he", is_flag=True, help="Skip Paillier (minutes per setting).")
@click.option("--mpc-trunc", type=click.Choice(["auto", "local", "paper", "exact"]),
              default="auto", help="MPC truncation (auto: the engine's default, local for 2 "
                                   "parties: 1-round products, rare wrap failures; exact: none, "
                                   "7 rounds).")
def table_c3(out: Output, paper: bool, settings: tuple[str, ...], repeats: int,
             he_rows: int | None, no_he: bool, mpc_trunc: str) -> None:
    """Cao et al. (2023), Table C.3: seconds to compute one round's bandit statistic (the K
    LinUCB values) with O3M, Paillier HE, MPC and DP, beside the paper's seconds.

    Small (d = 100, K = 20, M = 5) and large (d = 500, K = 10, M = 500) settings. Every party's
    computation on this one process (no network); each method's error against the plaintext
    statistic is written beside its time. Two shapes for O3M and DP: ours (vectorised: each
    participant masks its K x d_j slice, K d^2 in all) and the paper's reading (per participant:
    a zero-padded d-vector times a d x d matrix per arm, K M d^2 in all). The paper does not say
    how it computed the statistic; its O3M and DP times grow ~1,250x from small to large, as
    K M d^2 does. HE runs a fraction of the arms and rows and extrapolates each phase in its
    operation count (said in the output); MPC is the project's engine with 2 computing parties
    and a dealer, as threads. Writes table_c3 (.csv, .md).
    """
    he_rows = he_rows or (1 if paper else None)
    click.echo(f"Table C.3: seconds for one round's bandit statistic (K UCB values), "
               f"{out.machine}")
    if not no_he:
        click.echo(f"HE pipeline check at d = 6, K = 3: max |error| {he_check_tiny():.1e}")
    rows = [measure_setting(name, repeats, he_rows, not no_he, mpc_trunc) for name in settings]
    _echo(rows)
    out.table("table_c3", COLUMNS, [[r[c] for c in COLUMNS] for r in rows],
              f"O3M Table C.3: seconds for one round's statistic ({out.machine})")
