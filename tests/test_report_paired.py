"""The report's paired differences against svc (marked only where the seeds
resolve them) and its flag for non-finite test scores (never averaged away)."""

from __future__ import annotations

import numpy as np

from weakkernels.pipeline.reporting import (
    NONFINITE,
    RESOLVED,
    non_finite_scores,
    paired_differences,
    summary_table,
)
from weakkernels.pipeline.storage import save_npz

SVC = [0.10, 0.12, 0.11]


def _records(model, errors, nu=500):
    return [{"model": model, "dataset": "toy", "n_unlabeled": nu, "seed": s,
             "test_error": e} for s, e in enumerate(errors, 1)]


def _shifted(deltas):
    return [e + d for e, d in zip(SVC, deltas, strict=True)]


def _per_seed():
    return (_records("svc", SVC) + _records("steady", _shifted((0.05, 0.051, 0.049)))
            + _records("noisy", _shifted((0.03, -0.02, 0.01)))
            + _records("single", [0.30]))


def test_paired_difference_is_marked_only_where_resolved():
    paired = paired_differences(_per_seed())
    mean, sd, n, resolved = paired[("steady", "toy", 500)]
    assert n == 3 and resolved
    assert np.isclose(mean, 0.05) and np.isclose(sd, 0.001)
    mean, sd, n, resolved = paired[("noisy", "toy", 500)]
    assert n == 3 and not resolved and np.isclose(mean, 0.02 / 3)
    mean, sd, n, resolved = paired[("single", "toy", 500)]
    assert n == 1 and not resolved and np.isnan(sd) and np.isclose(mean, 0.2)
    assert ("svc", "toy", 500) not in paired


def _summary(models):
    return {m: {"toy": {"nu500": {"test_error_mean": 0.1, "test_error_std": 0.01,
                                  "test_auc_mean": 0.9, "test_auc_std": 0.01,
                                  "n_seeds": 3}}} for m in models}


def test_table_shows_the_paired_column_and_hides_a_nan_auc():
    summary = _summary(["svc", "steady", "noisy"])
    md = summary_table(summary, paired_differences(_per_seed()),
                       {("noisy", "toy", 500): (21, 1)})
    rows = {line.split(" | ")[0].lstrip("| "): line for line in md.splitlines()
            if line.startswith("| ") and "---" not in line}
    assert f"+0.0500 +- 0.0010 (3) {RESOLVED}" in rows["steady"]
    assert "(3) |" in rows["noisy"] and RESOLVED not in rows["noisy"]
    assert f"n/a {NONFINITE}" in rows["noisy"] and "0.9000" not in rows["noisy"]
    assert "0.9000 +- 0.0100" in rows["steady"]
    assert "| -- |" in rows["svc"]
    assert "21 non-finite test score(s) in 1 of 3 seed(s)" in md
    assert f"{NONFINITE} 1 row(s) with non-finite test scores" in md


def test_non_finite_scores_counts_per_cell(tmp_path):
    runs = []
    for seed, score in ((1, [0.1, np.nan, np.inf]), (2, [0.2, 0.3, 0.4])):
        name = f"m__toy__nu500__seed{seed}.npz"
        save_npz(tmp_path / name, score_test=np.asarray(score))
        runs.append({"model": "m", "dataset": "toy", "n_unlabeled": 500,
                     "predictions": name})
    assert non_finite_scores(runs, tmp_path) == {("m", "toy", 500): (2, 1)}
