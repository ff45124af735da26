"""What the report and the headline compare: each model against ``svc`` on
the same labels, paired by split.

:data:`REFERENCE` is the supervised machine every model is set against (the
report's *vs svc* column, :func:`weakkernels.pipeline.evaluation.behind_supervised`,
the headline); :data:`HEADLINE_MODEL` is the model whose difference is the
headline of ``metrics/test.json``.  :func:`paired_differences` is the one
computation of a paired difference, its spread and whether the seeds resolve
it, for the report stage and the evaluate stage alike.
"""

from __future__ import annotations

from collections import defaultdict

import numpy as np

__all__ = ["HEADLINE_MODEL", "REFERENCE", "paired_differences"]

REFERENCE = "svc"  # the supervised machine on the same labels
# The project's flagship semi-supervised model (paper 000's TSGS3VM with the
# estimator defaults, as the catalogue names it): the headline is its paired
# difference against REFERENCE, one like-for-like comparison per data set.
HEADLINE_MODEL = "tsgs3vm"


def paired_differences(per_seed, reference: str = REFERENCE) -> dict:
    """``{(model, dataset, n_unlabeled): (mean, sd, n, resolved)}``: the test
    error of ``model`` minus the reference's on the same split (seed), over
    the seeds both ran. ``resolved``: at least two seeds and the mean's 0.95
    t interval excludes 0 (``|mean| > t_{0.975, n-1} sd / sqrt(n)``); with two
    seeds ``t`` is 12.7, so only a large, consistent difference is marked."""
    from scipy.stats import t as student_t

    ref = {(r["dataset"], int(r["n_unlabeled"]), r["seed"]): r["test_error"]
           for r in per_seed if r["model"] == reference}
    diffs: dict[tuple, list[float]] = defaultdict(list)
    for r in per_seed:
        key = (r["dataset"], int(r["n_unlabeled"]), r["seed"])
        if r["model"] != reference and key in ref:
            diffs[(r["model"], key[0], key[1])].append(r["test_error"] - ref[key])
    out = {}
    for cell, d in diffs.items():
        d = np.asarray(d)
        n, mean = d.size, float(d.mean())
        sd = float(d.std(ddof=1)) if n >= 2 else float("nan")
        resolved = n >= 2 and abs(mean) > (
            student_t.ppf(0.975, n - 1) * sd / np.sqrt(n))
        out[cell] = (mean, sd, n, bool(resolved))
    return out
