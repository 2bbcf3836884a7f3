"""What the AP learns from O3M's masked contexts (beyond Cao et al. 2023; see docs/o3m-threat-model.md).

Runs the O3M protocol in-process, records exactly what the AP receives from each passive
participant (Q^j x^j_{t,a}, K x d per round), and measures:
1. rotation invariance: inner products and norms of the masked local contexts equal those of
   the raw ones, so the AP holds the Gram matrix of every participant's contexts;
2. subspace: the masked vectors of participant j span a d_j-dimensional subspace (the AP
   learns d_j, and the contexts up to one unknown d_j x d_j rotation);
3. known-plaintext recovery: with n known (x^j, Q^j x^j) pairs (a colluding user, a public
   record) least squares gives Q^j, then every context of that participant x = Q^{jT} x~.
Prints the measured errors and writes CSV.

    python scripts/o3m_leakage.py                 # d = 100, partition [20]*5, K = 10, T = 200
    python scripts/o3m_leakage.py --iterations 20 --out /tmp/leak
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpcbandit.results import write_csv  # noqa: E402
from mpcbandit.config import load_config  # noqa: E402
from mpcbandit.protocols.inproc_runner import run_protocol_inproc  # noqa: E402
from mpcbandit.protocols.o3m import participant_stream  # noqa: E402

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "o3m-synthetic.toml"


def record_ap_view(cfg) -> tuple[dict[int, np.ndarray], dict[int, np.ndarray]]:
    """Run O3M; return what the AP received from each PP (T*K x d) and each PP's true Q^j."""
    seen: dict[int, list[np.ndarray]] = {}
    masks: dict[int, np.ndarray] = {}

    def observe(name, chan):
        inner = chan.exchange

        def exchange(label, send=None, recv=(), **kw):
            got = inner(label, send=send, recv=recv, **kw)
            if name == "ap.0" and label == "contexts":
                for peer, body in got.items():
                    seen.setdefault(int(peer.split(".")[1]), []).append(body)
            if name.startswith("pp.") and label == "mask":
                masks[int(name.split(".")[1])] = got["pmg.0"]  # ground truth, for scoring only
            return got
        chan.exchange = exchange

    run_protocol_inproc(cfg, observe=observe)
    return {j: np.concatenate(v) for j, v in seen.items()}, masks


def raw_contexts(cfg, j: int) -> np.ndarray:
    """Participant j's true local contexts, stacked like the AP's view (T*K x d_j)."""
    stream = participant_stream(cfg, j)
    return np.concatenate([stream.features(t) for t in range(cfg.section.iterations)])


def known_plaintext_attack(raw: np.ndarray, masked: np.ndarray, n: int, rng) -> tuple[np.ndarray, dict]:
    """Least-squares Q^j from n random known pairs, then every context: (Q^j estimate, errors)."""
    known = rng.choice(len(raw), size=n, replace=False)
    q_t, *_ = np.linalg.lstsq(raw[known], masked[known], rcond=None)  # masked = raw Q^{jT}
    recovered = masked @ q_t.T  # x = Q^{jT} x~ (Q^j has orthonormal columns)
    err = np.linalg.norm(recovered - raw, axis=1) / np.linalg.norm(raw, axis=1)
    return q_t.T, {"known_pairs": n, "median_rel_error": float(np.median(err)),
                   "max_rel_error": float(err.max()), "recovered_1e-6": float(np.mean(err < 1e-6))}


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--partition", default="20,20,20,20,20")
    ap.add_argument("--arms", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", type=Path, default=Path("runs/o3m-leakage"))
    args = ap.parse_args(argv)
    partition = [int(v) for v in args.partition.split(",")]
    cfg = load_config(CONFIG, [f"o3m.iterations={args.iterations}", f"o3m.arms={args.arms}",
                               f"o3m.partition={partition}", f"o3m.participants={len(partition)}",
                               f"seed={args.seed}"])
    view, masks = record_ap_view(cfg)
    rng = np.random.default_rng(args.seed)
    rows = []
    print(f"O3M leakage, d = {sum(partition)}, partition {partition}, K = {args.arms}, "
          f"T = {args.iterations}: what the AP sees of each passive participant")
    print(f"{'pp':>3} {'d_j':>4} {'|gram err|':>11} {'|norm err|':>11} {'rank':>5} "
          f"{'pairs':>6} {'Q err':>9} {'median rel err':>15} {'max rel err':>12} {'recovered':>10}")
    for j in sorted(view):
        masked, raw, dj = view[j], raw_contexts(cfg, j), partition[j]
        sub = slice(0, min(len(raw), 500))
        gram_err = float(np.abs(masked[sub] @ masked[sub].T - raw[sub] @ raw[sub].T).max())
        norm_err = float(np.abs(np.linalg.norm(masked, axis=1) - np.linalg.norm(raw, axis=1)).max())
        sv = np.linalg.svd(masked, compute_uv=False)
        rank = int(np.sum(sv > sv[0] * 1e-10))
        for n in sorted({max(dj - 1, 1), dj, 2 * dj}):
            if n > len(raw):
                continue
            q_hat, res = known_plaintext_attack(raw, masked, n, rng)
            q_err = float(np.abs(q_hat - masks[j]).max())
            row = {"participant": j, "d_j": dj, "gram_max_abs_error": gram_err,
                   "norm_max_abs_error": norm_err, "span_rank": rank, "mask_max_abs_error": q_err, **res}
            rows.append(row)
            print(f"{j:>3} {dj:>4} {gram_err:>11.2e} {norm_err:>11.2e} {rank:>5} {n:>6} {q_err:>9.2e} "
                  f"{res['median_rel_error']:>15.2e} {res['max_rel_error']:>12.2e} "
                  f"{res['recovered_1e-6']:>10.1%}")
    args.out.mkdir(parents=True, exist_ok=True)
    path = args.out / "o3m_leakage.csv"
    write_csv(path, rows)
    print("recovered = share of all T*K contexts of that participant rebuilt to 1e-6 relative "
          "error (with n < d_j pairs only the n known ones are)")
    print(f"wrote {path}")
    return rows


if __name__ == "__main__":
    main()
