"""The tune stage's C* = 0 check: a tuned S3VM keeps its unlabeled term only
if it beats its own supervised machine by one standard error on validation."""

from __future__ import annotations

import numpy as np
import pytest

from _pipeline import tune_cfg
from weakkernels.pipeline import search
from weakkernels.pipeline.registry import FitContext, build
from weakkernels.pipeline.splits import ssl_split
from weakkernels.pipeline.storage import save_npz


def _toy(tmp, n_labeled):
    rng = np.random.default_rng(0)
    X = np.r_[rng.normal(0, 1, (150, 3)), rng.normal(1.5, 1, (150, 3))]
    y = np.r_[np.zeros(150, np.int64), np.ones(150, np.int64)]
    save_npz(tmp / "prep" / "toy.npz", X=X, y=y, classes=np.array([0.0, 1.0]))
    sp = ssl_split(y, n_labeled=n_labeled, n_unlabeled=[60], n_val=60, n_test=60,
                   seed=0)
    save_npz(tmp / "splits" / "toy" / "ssl_seed0.npz", **sp)


def test_one_se_better_against_a_hand_computation():
    """100 points; the reference is wrong on points 0-9, the candidate fixes
    ``fixed`` of them and breaks ``broken`` others."""
    for fixed, broken, better in ((2, 1, False), (2, 0, True), (6, 2, True),
                                  (1, 1, False)):
        ref = np.zeros(100, bool)
        ref[:10] = True
        cand = ref.copy()
        cand[:fixed] = False
        cand[10:10 + broken] = True
        d = np.r_[-np.ones(fixed), np.ones(broken), np.zeros(100 - fixed - broken)]
        mean = d.mean()
        se = np.sqrt(np.sum((d - mean) ** 2) / 99) / 10
        got = search.one_se_better(cand, ref)
        assert got[0] is better
        assert got[1] == pytest.approx(mean, abs=1e-15)
        assert got[2] == pytest.approx(se, rel=1e-12)
    # one point of difference: mean and SE are both 1/n, a tie at every n
    # (in floating point the two differ in the last bit, either way)
    for n in (50, 60, 200, 1000, 2000):
        ref = np.zeros(n, bool)
        ref[0] = True
        better, mean, se = search.one_se_better(np.zeros(n, bool), ref)
        assert not better and mean == pytest.approx(-se, rel=1e-12)
    # identical errors: no evidence either way, the reference stays
    assert search.one_se_better(np.ones(5, bool), np.ones(5, bool)) == (False, 0.0,
                                                                         0.0)


def test_c_star_scale_zero_builds_the_supervised_machine():
    ctx = FitContext(n_labeled=20, n_unlabeled=80, seed=0, prior=0.5,
                     callback=None, callback_every=1, sigma_scale=1.0)
    p = {"C": 3.0, "c_star_scale": 0.0, "sigma_rel": 1.0}
    assert build("tsgs3vm", p, {}, ctx).C_star == 0.0
    assert build("cccp_tsvm", p, {}, ctx).C_star == 0.0


def test_the_study_chooses_c_star_so_the_estimator_does_not():
    """The S3VMs' own cross-validated choice (selection="auto" on
    small sets) would nest a second choice of C* in every trial: the
    catalogue turns it off unless models.fixed asks for it."""
    ctx = FitContext(n_labeled=20, n_unlabeled=80, seed=0, prior=0.5,
                     callback=None, callback_every=1, sigma_scale=1.0)
    p = {"C": 3.0, "c_star_scale": 1.0, "sigma_rel": 1.0}
    for name in ("tsgs3vm", "frs3vm", "tsgs3vm_sgd"):
        assert build(name, p, {}, ctx).selection is None
    assert build("tsgs3vm", p, {"selection": "cv"}, ctx).selection == "cv"


@pytest.mark.parametrize("n_labeled, cv_max_labeled", [(30, 100), (60, 0)])
def test_tune_refits_the_best_trial_and_its_c_star_zero_twin(
        tmp_path, monkeypatch, n_labeled, cv_max_labeled):
    """Both protocols (5-fold CV on 30 labels, the 60-point validation split):
    the refit of the best trial reproduces its validation loss, the choice
    follows the one-SE rule, and the kept parameters are the ones recorded;
    with ``c_star_fallback: none`` the best trial stands as it is."""
    monkeypatch.delenv("WK_OPTUNA_STORAGE", raising=False)
    _toy(tmp_path, n_labeled)
    cfg = tune_cfg(n_trials=3, n_startup_trials=3, cv_max_labeled=cv_max_labeled,
                   c_star_fallback="one_se", storage=f"sqlite:///{tmp_path}/o.db")
    run = ([("tsgs3vm", "toy")], tmp_path / "prep", tmp_path / "splits")
    plain = search.tune(*run, {**cfg, "c_star_fallback": "none"}, {"fixed": {}},
                        root=tmp_path, log_mlflow=False)["tsgs3vm/toy"]
    assert "c_star_fallback" not in plain
    assert plain["params"]["c_star_scale"] > 0
    rec = search.tune(*run, cfg, {"fixed": {}}, root=tmp_path,
                      log_mlflow=False)["tsgs3vm/toy"]
    # the same study (the check is not part of its identity): same best trial
    assert rec["study"] == plain["study"] and rec["trial"] == plain["trial"]
    fb = rec["c_star_fallback"]
    assert fb["tuned_val_loss"] == pytest.approx(plain["val_loss"], abs=1e-12)
    assert fb["n_val_points"] == (n_labeled if cv_max_labeled else 60)
    # the one-SE rule with its relative margin (one point of difference is a
    # tie: weakkernels._selection.one_se_better)
    assert (fb["kept"] == "tuned") == (
        -fb["paired_diff"] > fb["paired_se"] * (1 + 1e-9))
    if fb["kept"] == "tuned":
        assert rec["params"] == plain["params"]
        assert rec["val_loss"] == fb["tuned_val_loss"]
    else:
        assert rec["params"] == {**plain["params"], "c_star_scale": 0.0}
        assert rec["val_loss"] == fb["supervised_val_loss"]


def test_tune_keeps_the_tuned_c_star_when_it_is_one_se_better(tmp_path,
                                                               monkeypatch):
    """Both branches of the choice, with the rule forced: the tuned C* stays
    when it is better, the C* = 0 machine replaces it when it is not; a
    baseline without C* is never checked."""
    monkeypatch.delenv("WK_OPTUNA_STORAGE", raising=False)
    _toy(tmp_path, 60)
    cfg = tune_cfg(n_trials=2, n_startup_trials=2, cv_max_labeled=0,
                   c_star_fallback="one_se", storage=f"sqlite:///{tmp_path}/o.db")
    run = ([("tsgs3vm", "toy"), ("svc", "toy")], tmp_path / "prep",
           tmp_path / "splits")
    for better in (True, False):
        monkeypatch.setattr(search, "one_se_better",
                            lambda a, b, better=better: (better, 0.0, 0.0))
        best = search.tune(*run, cfg, {"fixed": {}}, root=tmp_path,
                           log_mlflow=False)
        rec = best["tsgs3vm/toy"]
        assert rec["c_star_fallback"]["kept"] == ("tuned" if better
                                                  else "supervised")
        assert (rec["params"]["c_star_scale"] > 0) is better
        assert "c_star_fallback" not in best["svc/toy"]
