"""On Criteo-shaped contexts (user (+) item features) the AP rebuilds the passive participants'
user features from the arms' item differences, with no colluding user (docs/o3m-threat-model.md):
exactly for one feature, up to one orthogonal transform of the free directions otherwise, and
exactly once that many users collude. With a wrong item catalogue the same attack guesses."""

import csv

import numpy as np
import pytest
from click.testing import CliRunner

from mpcbandit.cli import main
from mpcbandit.data import criteo
from mpcbandit.experiments import o3m_leakage

PARTITION = [12, 3, 6, 9, 9]  # the AP holds 4 user features; the passive ones 1, 2, 3 and 3
ARMS, ROUNDS = 6, 40

# one worker runs the module, so its module fixture runs once
pytestmark = pytest.mark.xdist_group("o3m-leakage-attack")


def _criteo_shaped_log(path, rows=240, items=12, seed=3):
    """A Kaggle-layout CSV: random numeric user columns, rows showing one of `items` items."""
    rng = np.random.default_rng(seed)
    catalogue = [[f"{rng.integers(1 << 32):08x}" for _ in range(26)] for _ in range(items)]
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["Id", "Label"] + [f"I{i}" for i in range(1, 14)] + [f"C{i}" for i in range(1, 27)])
        for n in range(rows):
            numeric = ["" if rng.random() < 0.1 else str(int(rng.integers(0, 60))) for _ in range(13)]
            out.writerow([n, int(rng.random() < 0.3)] + numeric + catalogue[rng.integers(items)])
    return path


@pytest.fixture(scope="module")
def attack(tmp_path_factory):
    folder = tmp_path_factory.mktemp("criteo")
    data = _criteo_shaped_log(folder / "train.csv")
    result = CliRunner().invoke(main, [
        "bench", "o3m-leakage", "--data", "criteo", "--data-path", str(data), "--arms", str(ARMS),
        "--iterations", str(ROUNDS), "--partition", ",".join(map(str, PARTITION)),
        "--out", str(folder)])
    assert result.exit_code == 0, result.output
    with (folder / "o3m_leakage_criteo.csv").open() as f:
        rows = [{k: float(v) for k, v in r.items()} for r in csv.DictReader(f)]
    return data, {int(r["participant"]): r for r in rows}


def test_ap_rebuilds_each_participants_user_features_up_to_its_free_directions(attack):
    _, rows = attack
    assert sorted(rows) == [1, 2, 3, 4]
    assert [rows[j]["user_features"] for j in (1, 2, 3, 4)] == [1, 2, 3, 3]
    assert [rows[j]["free_dims"] for j in (1, 2, 3, 4)] == [0, 1, 2, 2]  # exact, a swap, a rotation
    for r in rows.values():
        assert r["max_abs_error_one_transform"] < 1e-9  # features scaled to [0, 1]


def test_as_many_colluders_as_free_directions_disclose_every_round(attack):
    _, rows = attack
    for r in rows.values():
        assert r["max_abs_error_colluders"] < 1e-9 and r["rms_error_per_std_colluders"] < 1e-8
        # guessing each feature's mean scores 1.0 here, by construction


def test_with_a_wrong_item_catalogue_the_attack_does_worse_than_guessing(attack):
    data, _ = attack
    log = criteo.load_criteo(data, arms=ARMS)
    view, _ = o3m_leakage.record_ap_view(o3m_leakage.criteo_config(PARTITION, ARMS, ROUNDS, data))
    wrong = np.random.default_rng(0).permutation(log.items)  # per-arm differences the AP gets wrong
    right = o3m_leakage.criteo_recovery(view[1], log, log.items, PARTITION, 1)
    guessed = o3m_leakage.criteo_recovery(view[1], log, wrong, PARTITION, 1)
    assert right["rms_error_per_std_colluders"] < 1e-8
    assert guessed["rms_error_per_std_colluders"] > 1.0  # guessing each feature's mean: 1.0
