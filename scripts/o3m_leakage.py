"""What the AP learns from O3M's masked contexts (beyond Cao et al. 2023; see docs/o3m-threat-model.md).

Runs the O3M protocol in-process, records exactly what the AP receives from each passive
participant (Q^j x^j_{t,a}, K x d per round), and measures:
1. rotation invariance: inner products and norms of the masked local contexts equal those of
   the raw ones, so the AP holds the Gram matrix of every participant's contexts;
2. subspace: the masked vectors of participant j span a d_j-dimensional subspace (the AP
   learns d_j, and the contexts up to one unknown d_j x d_j rotation);
3. known-plaintext recovery: with n known (x^j, Q^j x^j) pairs (a colluding user, a public
   record) least squares gives Q^j, then every context of that participant x = Q^{jT} x~.
With `--data criteo` (contexts user features (+) item features, App. D.3) it measures instead
4. the item-difference attack: x^j_{t,a} - x^j_{t,0} = G^j (w_a - w_0) depends only on the item
   features w, which the AP knows, so every round hands the AP known-plaintext pairs without any
   colluding user; it rebuilds each participant's user features up to one orthogonal transform
   of the m directions its item part leaves free (m = 0: one user feature; two: a swap; three: a
   2-D rotation), then fixes that transform with m colluding users.
Prints the measured errors and writes CSV.

    python scripts/o3m_leakage.py                 # d = 100, partition [20]*5, K = 10, T = 200
    python scripts/o3m_leakage.py --iterations 20 --out /tmp/leak
    python scripts/o3m_leakage.py --data criteo   # the shared Criteo sample, partition 12,3,6,9,9
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from mpcbandit.config import load_config  # noqa: E402
from mpcbandit.crypto.orthogonal_mask import block_offsets  # noqa: E402
from mpcbandit.data import criteo  # noqa: E402
from mpcbandit.protocols.inproc_runner import run_protocol_inproc  # noqa: E402
from mpcbandit.protocols.o3m import participant_stream  # noqa: E402
from mpcbandit.results import write_csv  # noqa: E402

CONFIG = Path(__file__).resolve().parents[1] / "configs" / "o3m-synthetic.toml"
CRITEO_CONFIG = Path(__file__).resolve().parents[1] / "configs" / "o3m-criteo.toml"


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


def _orth(a: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the column space of a (columns), by SVD."""
    u, sv, _ = np.linalg.svd(a, full_matrices=False)
    return u[:, : int(np.sum(sv > 1e-9 * max(sv.max(initial=0.0), 1.0)))]


def criteo_layout(partition: list[int], j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Participant j's columns of the outer addition: (its user features, A, G), x^j = A u + G w."""
    a, b = block_offsets(partition)[j]
    cols = np.arange(a, b)
    users = np.unique(cols // criteo.ITEM_DIMS)
    lift_users = (cols[:, None] // criteo.ITEM_DIMS == users[None, :]).astype(np.float64)
    lift_items = (cols[:, None] % criteo.ITEM_DIMS == np.arange(criteo.ITEM_DIMS)).astype(np.float64)
    return users, lift_users, lift_items


def item_difference_attack(masked: np.ndarray, items: np.ndarray, lift_users: np.ndarray,
                           lift_items: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The AP's rebuild of one participant's user features from what it holds (see module doc).

    masked: the T*K received Q^j x^j_{t,a}; items: the K arms' item features (the AP's catalogue).
    Returns (u0, frame, coords): every round's user features are u0[t] + coords[t] @ O @ frame
    for one orthogonal m x m matrix O that the masked data cannot fix (m = coords.shape[1]).
    """
    arms, d_j = len(items), lift_users.shape[0]
    rounds = masked.reshape(-1, arms, masked.shape[1])
    known = _orth(lift_items)                                   # P: the item part's directions
    diffs = (items[1:] - items[0]) @ lift_items.T @ known       # P^T (x_a - x_0), every round alike
    seen = (rounds[:, 1:] - rounds[:, :1]).reshape(-1, masked.shape[1])
    q_known_t, *_ = np.linalg.lstsq(np.tile(diffs, (len(rounds), 1)), seen, rcond=None)
    y = rounds[:, 0]                                            # arm 0's masked context per round
    x_known = (y @ q_known_t.T) @ known.T                       # P P^T x: read off exactly
    rest = y - (y @ q_known_t.T) @ q_known_t                    # Q^j (I - P P^T) x
    free = _orth((np.eye(d_j) - known @ known.T) @ lift_users)  # L: where the rest of x lies
    m = free.shape[1]
    u_sv, sv, _ = np.linalg.svd(rest, full_matrices=False)
    coords = u_sv[:, :m] * sv[:m]                               # (I - P P^T) x in L, up to O(m)
    to_users = np.linalg.pinv(lift_users)                       # x - G w_0 = A u
    u0 = (x_known - items[0] @ lift_items.T) @ to_users.T
    return u0, free.T @ to_users.T, coords


def _procrustes(coords: np.ndarray, target: np.ndarray) -> np.ndarray:
    """The orthogonal O minimising |coords O - target| (rows: rounds)."""
    u_sv, _, vt = np.linalg.svd(coords.T @ target)
    return u_sv @ vt


def spread_rows(coords: np.ndarray) -> np.ndarray:
    """Pick coords.shape[1] rows far from each other's span (greedy): users worth recruiting."""
    picked, rest = [], coords.copy()
    for _ in range(coords.shape[1]):
        picked.append(int(np.argmax(np.linalg.norm(rest, axis=1))))
        direction = rest[picked[-1]] / np.linalg.norm(rest[picked[-1]])
        rest = rest - np.outer(rest @ direction, direction)
    return np.asarray(picked, dtype=np.int64)


def criteo_recovery(masked, log: criteo.CriteoLog, items, partition, j) -> dict:
    """Measure the item-difference attack on participant j of a run over log's first rounds;
    items: the catalogue the AP uses (log.items, or a wrong one)."""
    users, lift_users, lift_items = criteo_layout(partition, j)
    truth = log.users[: len(masked) // len(items)][:, users]
    u0, frame, coords = item_difference_attack(masked, items, lift_users, lift_items)
    m = coords.shape[1]
    true_coords = (truth - u0) @ np.linalg.pinv(frame) if m else coords
    colluders = spread_rows(coords)  # m users, chosen from the AP's view, reveal their features
    spread = np.where(truth.std(axis=0) > 0, truth.std(axis=0), 1.0)
    out = {"participant": j, "d_j": len(lift_users), "user_features": len(users), "free_dims": m,
           "rounds": len(truth)}
    for name, rows in (("one_transform", slice(None)), ("colluders", colluders)):
        guess = u0 + coords @ _procrustes(coords[rows], true_coords[rows]) @ frame
        err = np.abs(guess - truth)
        out[f"max_abs_error_{name}"] = float(err.max())
        out[f"rms_error_per_std_{name}"] = float(np.sqrt(np.mean((err / spread) ** 2)))
    return out


def criteo_config(partition: list[int], arms: int, iterations: int, data_path, seed: int = 1):
    """O3M on the Criteo log (the shipped config) with this partition and size."""
    return load_config(CRITEO_CONFIG, [f"o3m.partition={partition}", f"o3m.participants={len(partition)}",
                                       f"o3m.arms={arms}", f"o3m.iterations={iterations}",
                                       f"o3m.data_path={str(data_path or '')!r}", f"seed={seed}"])


def _save(rows: list[dict], out: Path, name: str, legend: str) -> None:
    """Write rows to out/name, then the table's legend and where it went."""
    out.mkdir(parents=True, exist_ok=True)
    write_csv(out / name, rows)
    print(legend)
    print(f"wrote {out / name}")


def criteo_main(args) -> list[dict]:
    """--data criteo: the item-difference attack on every passive participant."""
    partition = [int(v) for v in (args.partition or "12,3,6,9,9").split(",")]
    cfg = criteo_config(partition, args.arms, args.iterations, args.data_path, args.seed)
    log = criteo.load_criteo(cfg.section.data_path or None, arms=args.arms)
    view, _ = record_ap_view(cfg)
    print(f"O3M item-difference leakage on Criteo contexts (user (+) item, d = {criteo.DIMS}), "
          f"partition {partition}, K = {args.arms}, T = {args.iterations}; no known user features")
    print(f"{'pp':>3} {'d_j':>4} {'users':>6} {'free':>5} {'err, one O(free) left':>22} "
          f"{'colluders':>10} {'err with them':>14} {'rms err/std':>12}")
    rows = [criteo_recovery(view[j], log, log.items, partition, j) for j in sorted(view)]
    for r in rows:
        print(f"{r['participant']:>3} {r['d_j']:>4} {r['user_features']:>6} {r['free_dims']:>5} "
              f"{r['max_abs_error_one_transform']:>22.2e} {r['free_dims']:>10} "
              f"{r['max_abs_error_colluders']:>14.2e} {r['rms_error_per_std_colluders']:>12.2e}")
    _save(rows, args.out, "o3m_leakage_criteo.csv",
          "free = directions of a participant's user features that the item differences leave open: "
          "its features are exact up to one orthogonal transform of them for the whole run (0: "
          "exact; 1: a swap), which as many colluding users fix; errors are max |u - u_hat| over all "
          "rounds and features (scaled to [0, 1]); rms err/std 1.0 = guessing each feature's mean")
    return rows


def main(argv: list[str] | None = None) -> list[dict]:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--iterations", type=int, default=200)
    ap.add_argument("--partition", default=None,
                    help="d_j per participant (default 20,20,20,20,20; with --data criteo 12,3,6,9,9)")
    ap.add_argument("--arms", type=int, default=10)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--data", choices=("synthetic", "criteo"), default="synthetic",
                    help="criteo: the item-difference attack on user (+) item contexts")
    ap.add_argument("--data-path", default=None, help="criteo log (default: the shared sample)")
    ap.add_argument("--out", type=Path, default=Path("runs/o3m-leakage"))
    args = ap.parse_args(argv)
    if args.data == "criteo":
        return criteo_main(args)
    args.partition = args.partition or "20,20,20,20,20"
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
    _save(rows, args.out, "o3m_leakage.csv",
          "recovered = share of all T*K contexts of that participant rebuilt to 1e-6 relative "
          "error (with n < d_j pairs only the n known ones are)")
    return rows


if __name__ == "__main__":
    main()
