"""The learning-curve benchmark's C* tuning: what it fits, what it picks."""

from __future__ import annotations

import argparse

import numpy as np

import scale_accuracy as sa
from _data import two_gaussians


def _args(**kw):
    return argparse.Namespace(**{"C": 10.0, **kw})


def test_tuned_fits_the_grid_and_picks_on_validation():
    X, y_semi, y = two_gaussians(n=260, d=5, n_labeled=20, seed=3)
    lab = np.flatnonzero(y_semi >= 0)
    unl = np.flatnonzero(y_semi < 0)
    val, unl = unl[:60], unl[60:]
    out = list(sa.fits("tsgs3vm_tuned", _args(), "scale", 0, lab.size,
                       X[lab], y[lab], X[unl], X[val], y[val]))
    names = [o[0] for o in out]
    # the grid's supervised machine and the plain rule are rows of their own,
    # the validation winner follows under the method's name, then the
    # one-standard-error choice among the same fits
    assert names == ["tsgs3vm_c0", "tsgs3vm", "tsgs3vm_tuned", "tsgs3vm_tuned1se"]
    rule = 10.0 * lab.size / unl.size
    assert out[0][3] == 0.0 and np.isclose(out[1][3], rule)
    chosen, val_err = out[2][3], out[2][4]
    assert np.isclose(chosen / rule, sa.CSTAR_GRID).any()
    # the winner's validation error is the grid's minimum, and it is the
    # fitted machine with that C*, not a refit
    assert val_err <= min(out[0][4], out[1][4])
    assert out[2][1].C_star_ == chosen
    assert np.mean(out[2][1].predict(X[val]) != y[val]) == val_err
    # the 1-SE row is one of the grid's fitted machines, with its own error
    assert out[3][1] is out[2][1] or out[3][3] == 0.0
    assert np.mean(out[3][1].predict(X[val]) != y[val]) == out[3][4]


def test_tuned5_writes_every_candidate_and_both_grids_choices():
    """``_tuned5`` fits the estimator's own C* candidates (SELECT_STAGES x the
    rule), writes each, then its own choices and the narrow grid's, the
    latter picked among the first three fits only."""
    X, y_semi, y = two_gaussians(n=260, d=5, n_labeled=20, seed=4)
    lab, unl = np.flatnonzero(y_semi >= 0), np.flatnonzero(y_semi < 0)
    val, unl = unl[:60], unl[60:]
    out = list(sa.fits("tsgs3vm_tuned5", _args(), "scale", 0, lab.size,
                       X[lab], y[lab], X[unl], X[val], y[val]))
    assert [o[0] for o in out] == [
        "tsgs3vm_c0", "tsgs3vm_x0.1", "tsgs3vm", "tsgs3vm_x3", "tsgs3vm_x10",
        "tsgs3vm_tuned5", "tsgs3vm_tuned5_1se", "tsgs3vm_tuned",
        "tsgs3vm_tuned1se"]
    rule = 10.0 * lab.size / unl.size
    assert np.allclose([o[3] for o in out[:5]],
                       np.array(sa.CSTAR_GRID5) * rule)
    val_errs = [o[4] for o in out[:5]]
    assert out[5][4] == min(val_errs)
    assert out[7][4] == min(val_errs[:3])
    assert np.isclose(out[7][3] / rule, sa.CSTAR_GRID).any()
    # each chosen row is its fitted machine, scored again here
    for o in out[5:]:
        assert np.mean(o[1].predict(X[val]) != y[val]) == o[4]


def test_one_se_rule_keeps_the_supervised_machine_unless_one_se_better():
    """Paired one-standard-error rule against a hand computation on 100
    validation rows: C* = 0 is wrong on rows 0-9; the candidate fixes
    ``fixed`` of them and breaks ``broken`` others."""
    def cands(fixed, broken):
        wrong0 = np.zeros(100, bool)
        wrong0[:10] = True
        wrong1 = wrong0.copy()
        wrong1[:fixed] = False
        wrong1[10:10 + broken] = True
        return [(wrong0.mean(), "c0", 1.0, 0.0, wrong0),
                (wrong1.mean(), "rule", 1.0, 0.5, wrong1)]

    # d = wrong1 - wrong0: mean (broken - fixed) / 100; SE = sd(d) / 10
    # (2, 1): mean -0.01, SE 0.0174 -> keep C* = 0; (2, 0): -0.02 vs 0.0141
    # -> the candidate; (6, 2): -0.04 vs 0.0281 -> the candidate
    for fixed, broken, keep in ((2, 1, False), (2, 0, True), (6, 2, True)):
        d = np.r_[-np.ones(fixed), np.ones(broken), np.zeros(100 - fixed - broken)]
        se = np.sqrt(np.sum((d - d.mean()) ** 2) / 99) / 10
        assert (-d.mean() > se) == keep
        assert sa.one_se_rule(cands(fixed, broken))[1] == ("rule" if keep else "c0")
    # a tie keeps C* = 0
    assert sa.one_se_rule(cands(1, 1))[1] == "c0"


def test_single_setting_methods():
    X, y_semi, y = two_gaussians(n=200, d=4, n_labeled=20, seed=1)
    lab, unl = np.flatnonzero(y_semi >= 0), np.flatnonzero(y_semi < 0)
    (name, est, _, cstar, _), = sa.fits("tsgs3vm_c01", _args(), "scale", 0,
                                        lab.size, X[lab], y[lab], X[unl],
                                        None, None)
    assert name == "tsgs3vm_c01"
    assert np.isclose(cstar, 0.1 * 10.0 * lab.size / unl.size)
    (name, _, _, cstar, verr), = sa.fits("svc", _args(), 0.5, 0, lab.size,
                                         X[lab], y[lab], X[unl], None, None)
    assert name == "svc" and cstar == "" and verr == ""
    est = sa.make("frs3vm_ushg_mean_sq", 10.0, 0.5, 0)[0]
    assert (est.unlabeled_loss, est.balance, est.loss) == ("shg", "mean",
                                                           "squared_hinge")
    est = sa.make("tsgs3vm_uda_clip", 10.0, 0.5, 0)[0]
    assert (est.unlabeled_loss, est.balance) == ("da", "clipped")
    est = sa.make("tsgs3vm_rff_f4096_c0", 10.0, 0.5, 0)[0]
    assert (est.features, est.max_features, est.C_star) == ("fourier", 4096, 0.0)
    try:  # FRS3VM sizes its block by n_components, not max_features
        sa.make("frs3vm_f4096", 10.0, 0.5, 0)
    except SystemExit as exc:
        assert "unknown method token" in str(exc)
    else:
        raise AssertionError("frs3vm_f4096 was accepted")


def test_table_flags_a_model_at_chance():
    row = ["d", "m", 10, 100, 0, "0.1", "0.49", "", "1.0", 10, "1", "", "", "r"]
    assert "**at chance**" in sa.table([row])
    row[6] = "0.2"
    assert "**at chance**" not in sa.table([row])


def test_cccp_rows_share_the_grid_and_the_split():
    """The exact-kernel CCCP-TSVM runs on the same rows with the same C* grid
    (its ``_s01`` token is Table 1.5's s = -0.1); an unknown name is refused."""
    X, y_semi, y = two_gaussians(n=200, d=4, n_labeled=20, seed=2)
    lab = np.flatnonzero(y_semi >= 0)
    unl = np.flatnonzero(y_semi < 0)
    val, unl = unl[:50], unl[50:]
    out = list(sa.fits("cccp_s01_tuned", _args(), 0.5, 0, lab.size, X[lab],
                       y[lab], X[unl], X[val], y[val]))
    assert [o[0] for o in out] == ["cccp_s01_c0", "cccp_s01", "cccp_s01_tuned",
                                   "cccp_s01_tuned1se"]
    rule = 10.0 * lab.size / unl.size
    assert out[0][3] == 0.0 and np.isclose(out[1][3], rule)
    assert all(o[1].s == -0.1 and o[1].sigma == 0.5 for o in out)
    assert out[2][4] <= min(out[0][4], out[1][4])
    try:
        sa.make("cccpx", 10.0, 0.5, 0)
    except SystemExit as exc:
        assert "unknown method" in str(exc)
    else:
        raise AssertionError("an unknown method name was accepted")


def test_ijcnn1_tstu_draws_its_unlabeled_rows_from_the_other_source():
    """``ijcnn1_tstu`` keeps ijcnn1's labeled rows and samples its unlabeled
    ones, seeded, from ``load_other``'s rows (never the pool)."""
    yp = np.r_[np.ones(500, int), np.zeros(4500, int)]
    lab, parts, val = sa.split("ijcnn1", yp, 100, 300, 7, 20000)
    lab2, parts2, val2 = sa.split("ijcnn1_tstu", yp, 100, 300, 7, 20000)
    assert np.array_equal(lab, lab2) and val is None and val2 is None
    (src, idx), = parts2
    assert src == "other" and idx.size == 300 and np.unique(idx).size == 300
    assert idx.max() < sa.N_IJCNN1_OTHER
    again = sa.split("ijcnn1_tstu", yp, 100, 300, 7, 20000)[1][0][1]
    assert np.array_equal(idx, again)
    Xp, Xt, Xo = np.zeros((5, 2)), np.ones((5, 2)), np.arange(20.0).reshape(10, 2)
    rows = sa.unlabeled_rows([("other", np.array([1, 3]))], Xp, Xt, Xo)
    assert np.array_equal(rows, Xo[[1, 3]])
