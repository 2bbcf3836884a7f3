"""What the AP learns from O3M's masked contexts, beyond Cao et al. (2023):
`mpcbandit bench o3m-leakage` (docs/o3m-threat-model.md).

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
"""

from __future__ import annotations

import click
import numpy as np

from mpcbandit.crypto.orthogonal_mask import block_offsets
from mpcbandit.data import criteo
from mpcbandit.experiments.common import Output, experiment_command, int_list, shipped_config
from mpcbandit.protocols.inproc_runner import run_protocol_inproc
from mpcbandit.protocols.o3m.protocol import participant_stream

__all__ = ["bench", "criteo_config", "criteo_leakage", "criteo_recovery", "record_ap_view",
           "synthetic_leakage"]


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


def known_plaintext_attack(raw: np.ndarray, masked: np.ndarray, n: int,
                           rng) -> tuple[np.ndarray, dict]:
    """Least-squares Q^j from n random known pairs, then every context: (Q^j estimate, errors)."""
    known = rng.choice(len(raw), size=n, replace=False)
    q_t, *_ = np.linalg.lstsq(raw[known], masked[known], rcond=None)  # masked = raw Q^{jT}
    recovered = masked @ q_t.T  # x = Q^{jT} x~ (Q^j has orthonormal columns)
    err = np.linalg.norm(recovered - raw, axis=1) / np.linalg.norm(raw, axis=1)
    return q_t.T, {"known_pairs": n, "median_rel_error": float(np.median(err)),
                   "max_rel_error": float(err.max()),
                   "recovered_1e-6": float(np.mean(err < 1e-6))}


def _orth(a: np.ndarray) -> np.ndarray:
    """An orthonormal basis of the column space of a (columns), by SVD."""
    u, sv, _ = np.linalg.svd(a, full_matrices=False)
    return u[:, : int(np.sum(sv > 1e-9 * max(sv.max(initial=0.0), 1.0)))]


def criteo_layout(partition: list[int], j: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Participant j's columns of the outer addition: (its user features, A, G),
    x^j = A u + G w."""
    a, b = block_offsets(partition)[j]
    cols = np.arange(a, b)
    users = np.unique(cols // criteo.ITEM_DIMS)
    lift_users = (cols[:, None] // criteo.ITEM_DIMS == users[None, :]).astype(np.float64)
    lift_items = (cols[:, None] % criteo.ITEM_DIMS
                  == np.arange(criteo.ITEM_DIMS)).astype(np.float64)
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
    out = {"participant": j, "d_j": len(lift_users), "user_features": len(users),
           "free_dims": m, "rounds": len(truth)}
    for name, rows in (("one_transform", slice(None)), ("colluders", colluders)):
        guess = u0 + coords @ _procrustes(coords[rows], true_coords[rows]) @ frame
        err = np.abs(guess - truth)
        out[f"max_abs_error_{name}"] = float(err.max())
        out[f"rms_error_per_std_{name}"] = float(np.sqrt(np.mean((err / spread) ** 2)))
    return out


def criteo_config(partition: list[int], arms: int, iterations: int, data_path, seed: int = 1):
    """O3M on the Criteo log (the shipped config) with this partition and size."""
    return shipped_config("o3m-criteo.toml", [
        f"o3m.partition={partition}", f"o3m.participants={len(partition)}", f"o3m.arms={arms}",
        f"o3m.iterations={iterations}", f"o3m.data_path={str(data_path or '')!r}", f"seed={seed}"])


def synthetic_leakage(partition: list[int], arms: int, iterations: int,
                      seed: int) -> list[dict]:
    """Claims 1-3 on the synthetic task: a row per participant and number of known pairs."""
    cfg = shipped_config("o3m-synthetic.toml", [
        f"o3m.iterations={iterations}", f"o3m.arms={arms}", f"o3m.partition={partition}",
        f"o3m.participants={len(partition)}", f"seed={seed}"])
    view, masks = record_ap_view(cfg)
    rng = np.random.default_rng(seed)
    rows = []
    for j in sorted(view):
        masked, raw, dj = view[j], raw_contexts(cfg, j), partition[j]
        sub = slice(0, min(len(raw), 500))
        gram_err = float(np.abs(masked[sub] @ masked[sub].T - raw[sub] @ raw[sub].T).max())
        norm_err = float(np.abs(np.linalg.norm(masked, axis=1)
                                - np.linalg.norm(raw, axis=1)).max())
        sv = np.linalg.svd(masked, compute_uv=False)
        rank = int(np.sum(sv > sv[0] * 1e-10))
        for n in sorted({max(dj - 1, 1), dj, 2 * dj}):
            if n > len(raw):
                continue
            q_hat, res = known_plaintext_attack(raw, masked, n, rng)
            rows.append({"participant": j, "d_j": dj, "gram_max_abs_error": gram_err,
                         "norm_max_abs_error": norm_err, "span_rank": rank,
                         "mask_max_abs_error": float(np.abs(q_hat - masks[j]).max()), **res})
    return rows


def criteo_leakage(partition: list[int], arms: int, iterations: int, seed: int,
                   data_path: str | None) -> list[dict]:
    """Claim 4 on the Criteo log: the item-difference attack on every passive participant."""
    cfg = criteo_config(partition, arms, iterations, data_path, seed)
    log = criteo.load_criteo(cfg.section.data_path or None, arms=arms)
    view, _ = record_ap_view(cfg)
    return [criteo_recovery(view[j], log, log.items, partition, j) for j in sorted(view)]


SYNTHETIC_NOTE = ("recovered = share of all T·K contexts of that participant rebuilt to 1e-6 "
                  "relative error (with n < d_j known pairs only the n known ones are)")
CRITEO_NOTE = ("free = directions of a participant's user features that the item differences "
               "leave open: its features are exact up to one orthogonal transform of them for "
               "the whole run (0: exact; 1: a swap), which as many colluding users fix; errors "
               "are max |u − û| over all rounds and features (scaled to [0, 1]); rms error/std "
               "1.0 = guessing each feature's mean")


@experiment_command("o3m-leakage", "the same as the defaults (an audit of what the AP learns; "
                                   "the paper has no such measurement)",
                    short_help="What O3M's active participant infers of others' data")
@click.option("--data", type=click.Choice(["synthetic", "criteo"]), default="synthetic",
              help="synthetic: claims 1-3 (Gram matrix, subspace, known pairs); criteo: the "
                   "item-difference attack on user ⊗ item contexts (claim 4).")
@click.option("--partition", type=int_list, default=None, show_default="20,20,20,20,20; "
              "criteo: 12,3,6,9,9", help="d_j per participant.")
@click.option("--arms", type=click.IntRange(min=2), default=10, help="Arms K.")
@click.option("--iterations", type=click.IntRange(min=1), default=200, help="Rounds T.")
@click.option("--seed", type=int, default=1, help="The config's seed.")
@click.option("--data-path", default=None, show_default="the Criteo sample under MPCBANDIT_DATA",
              help="The Criteo log (with --data criteo).")
def bench(out: Output, paper: bool, data: str, partition: list[int] | None, arms: int,
          iterations: int, seed: int, data_path: str | None) -> None:
    """Plays O3M's active participant (AP) with exactly what it receives from each passive
    participant (Q^j x^j, K x d_j per round) and measures what it infers: (1) the Gram matrix
    of every participant's contexts, (2) the dimension and span of its subspace, (3) every
    context from d_j known pairs; with --data criteo, (4) each participant's user features
    from the arms' item differences, with no colluding user. Writes o3m_leakage or
    o3m_leakage_criteo (.csv, .md).
    """
    if data == "criteo":
        partition = partition or [12, 3, 6, 9, 9]
        rows = criteo_leakage(partition, arms, iterations, seed, data_path)
        stem, note = "o3m_leakage_criteo", CRITEO_NOTE
        title = (f"O3M item-difference leakage on Criteo contexts (d = {criteo.DIMS}), partition "
                 f"{partition}, K = {arms}, T = {iterations}, no known user features")
    else:
        partition = partition or [20] * 5
        rows = synthetic_leakage(partition, arms, iterations, seed)
        stem, note = "o3m_leakage", SYNTHETIC_NOTE
        title = (f"O3M leakage to the AP, d = {sum(partition)}, partition {partition}, "
                 f"K = {arms}, T = {iterations}")
    out.table(stem, list(rows[0]), [list(r.values()) for r in rows], title, note)
    click.echo((out.folder / f"{stem}.md").read_text())
