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
    # the validation winner comes last under the method's name
    assert names == ["tsgs3vm_c0", "tsgs3vm", "tsgs3vm_tuned"]
    rule = 10.0 * lab.size / unl.size
    assert out[0][3] == 0.0 and np.isclose(out[1][3], rule)
    chosen, val_err = out[2][3], out[2][4]
    assert np.isclose(chosen / rule, sa.CSTAR_GRID).any()
    # the winner's validation error is the grid's minimum, and it is the
    # fitted machine with that C*, not a refit
    assert val_err <= min(out[0][4], out[1][4])
    assert out[2][1].C_star_ == chosen
    assert np.mean(out[2][1].predict(X[val]) != y[val]) == val_err


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
    assert [o[0] for o in out] == ["cccp_s01_c0", "cccp_s01", "cccp_s01_tuned"]
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
