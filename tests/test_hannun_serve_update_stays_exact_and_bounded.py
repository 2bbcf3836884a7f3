"""The batched reward update of Hannun's served bandit keeps W_a and b_a exactly (bit for bit the
sums of the encoded contexts' products) and W_a^-1 within its stated bound of the true inverse
after every batch of a long log, the bound not growing with the log (docs/serve-internals.md)."""

import numpy as np
from hannun_serve_inproc import PULLER, random_log, run_serve_log, section

from mpcbandit.mpc.fixed import encode
from mpcbandit.protocols.hannun.serve_reference import ServeReference, inverse_error_bound

KEY = bytes(range(32, 64))
L = 20


def test_w_and_b_stay_exact_and_the_inverse_within_its_bound_over_a_long_log():
    A, D, reg = 3, 10, 0.5
    rng = np.random.default_rng(11)
    ref = ServeReference(A, D, 0.1, L, KEY, regularizer=reg)
    log, _ = random_log(rng, ref, 1500, max_batch=24, rewarded=0.9, common=0.6)
    out = run_serve_log(log, section(log, arms=A, dims=D, regularizer=reg), KEY, check=True)
    arms = out[PULLER]
    contexts = {i: encode(x, L).view(np.int64) for kind, ids, xs in log if kind == "decide"
                for i, x in zip(ids, xs)}
    w = np.repeat(np.eye(D, dtype=np.int64)[None], A, axis=0) * int((1 + reg) * 2 ** (2 * L))
    b = np.zeros((A, D), dtype=np.int64)
    errors, norms = [], []
    batches = [e for e in out["feature_holder.0"] if e["kind"] == "reward"]
    for (kind, ids, rewards), got in zip([e for e in log if e[0] == "reward"], batches):
        for i, r in zip(ids, rewards):
            x = contexts[i]
            w[arms[i]] += np.outer(x, x)
            b[arms[i]] += int(r) * x
        assert np.array_equal(got["w"], w) and np.array_equal(got["b"], b)   # exact
        true = w / 2.0 ** (2 * L)
        norm = np.linalg.norm(true, ord=2, axis=(1, 2)).max()
        error = np.abs(got["w_inv"] - np.linalg.inv(true)).max()
        assert error <= inverse_error_bound(D, L, norm), (len(errors), error)
        errors.append(error)
        norms.append(norm)
    print(f"errors {min(errors):.3g}..{max(errors):.3g}, ||W|| up to {max(norms):.0f}")
    assert len(batches) > 100 and sum(e["size"] for e in batches) > 1200
    assert norms[-1] > 100            # W grew: the bound's second-order term was exercised
    # no drift: the last batches are as close to the inverse as the first ones
    assert max(errors[-20:]) <= 4 * max(errors[:20])
