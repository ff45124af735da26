"""The sample levels of ``solver="lbfgs"``, side by side: the schedules
before ``PRIMAL_MERGE_FRACTION`` and before ``PRIMAL_ANNEAL_EVERY_ROW``
against one level.

Schedules (``--schedules``; every other setting at the estimator's default):

* ``merged``: :func:`weakkernels._dsg.primal_levels` as it is, a sampled
  level of more than ``PRIMAL_MERGE_FRACTION`` (0.5) of the next level's
  rows dropped, without ``PRIMAL_ANNEAL_EVERY_ROW`` (the default from
  95f043f to be9f3d9): the annealing of C* runs on level 0;
* ``every``: as ``merged`` with every sampled level kept
  (``PRIMAL_MERGE_FRACTION = 1``, the schedule before 95f043f): level 0
  holds 4 096 rows per set even when a set has 4 800;
* ``one``: one level, every row (``PRIMAL_START_ROWS`` past the data): the
  annealing of C* runs on every row. Today's default for an annealed fit
  whose features are held (``PRIMAL_ANNEAL_EVERY_ROW``); past the held
  bound it differs (the default keeps the sample levels there).

Parts:

* ``--part s3vm``: ``TSGS3VM(C=10, sigma=1/(d Var X))`` on
  ``benchmarks/scale_accuracy.py``'s splits (``--dataset``, ``--L``, ``--U``,
  ``--seeds``; ``random_state`` = seed), test error, beside the same
  estimator with ``C_star=0`` (its supervised machine; fitted once, under
  the first schedule);
* ``--part qsg``: ``QSGS2AUC()`` on paper 003's protocol as
  ``benchmarks/qsg_protocol.py`` builds it (200 labels, n_u = 4 800), test
  AUC.

One process, one thread (run with ``NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1
OPENBLAS_NUM_THREADS=1``): the schedules of a split run one after the other,
so their CPU seconds are measured under the same load. Rows are appended to
``--out`` with the git revision that ran them::

    python benchmarks/level_schedule.py --part s3vm --dataset ijcnn1 --L 1000 \\
        --U 6000,8000 --schedules merged,every
    python benchmarks/level_schedule.py --part s3vm --dataset cod-rna --L 200 \\
        --U 8000 --schedules merged,every
    python benchmarks/level_schedule.py --part s3vm --dataset ijcnn1 --L 1000 \\
        --U 20000,47990 --schedules merged,one
    python benchmarks/level_schedule.py --part qsg --datasets cod-rna ijcnn1
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

from _bases import append_row, revision
from weakkernels import SolverOptions, _dsg
from weakkernels._dsg import primal as _primal

OUT = Path(__file__).resolve().parent / "results" / "level_schedule.csv"
COLS = ["estimator", "dataset", "L", "U", "seed", "schedule", "level_rows",
        "metric", "value", "fit_cpu_s", "rev"]
SCHEDULES = {"merged": SolverOptions(primal_anneal_every_row=False),
             "every": SolverOptions(primal_merge_fraction=1.0,
                                    primal_anneal_every_row=False),
             "one": SolverOptions(primal_start_rows=1 << 62)}


def timed_fit(est, X, y, name):
    """Fit under schedule ``name``: ``(cpu seconds, rows per level)``."""
    seen, real = [], _primal.primal_levels

    def spy(sizes, seed, held_rows=None, opts=None):
        levels = real(sizes, seed, held_rows, opts or SolverOptions())
        seen.append("/".join(str(_dsg.level_rows(sizes, lv)) for lv in levels))
        return levels

    _primal.primal_levels = spy
    try:
        est.set_params(solver_options=SCHEDULES[name])
        c0 = time.process_time()
        est.fit(X, y)
        return time.process_time() - c0, seen[0] if seen else ""
    finally:
        _primal.primal_levels = real


def part_s3vm(a, out, rev):
    import scale_accuracy as sa
    from weakkernels import TSGS3VM

    Xp, yp, Xt, yt, _, _, sigma = sa.load(a.dataset)
    for L in a.L:
        for U in a.U:
            for seed in a.seeds:
                lab, parts, _ = sa.split(a.dataset, yp, L, U, seed, Xt.shape[0])
                XU = sa.unlabeled_rows(parts, Xp, Xt)
                X = np.vstack([Xp[lab], XU])
                y = np.r_[yp[lab], np.full(XU.shape[0], -1)]
                runs = [("tsgs3vm", s, {}) for s in a.schedules]
                if not a.no_c0:
                    runs.insert(0, ("tsgs3vm_c0", a.schedules[0], {"C_star": 0.0}))
                for name, sched, kw in runs:
                    est = TSGS3VM(C=10.0, sigma=sigma, random_state=seed, **kw)
                    cpu, levels = timed_fit(est, X, y, sched)
                    err = float(np.mean(est.predict(Xt) != yt))
                    append_row(out, COLS, {
                        "estimator": name, "dataset": a.dataset, "L": L, "U": U,
                        "seed": seed, "schedule": sched, "level_rows": levels,
                        "metric": "test_error", "value": f"{100 * err:.3f}",
                        "fit_cpu_s": f"{cpu:.2f}", "rev": rev})
                    if hasattr(est, "validation_errors_"):
                        # the held-out choice of C* (stdout only: the CSV's
                        # columns are those of its first rows)
                        print(f"  C*_ = {est.C_star_:g}; held-out (C*, error): "
                              f"{est.validation_errors_.round(4).tolist()}",
                              flush=True)


def part_qsg(a, out, rev):
    from sklearn.metrics import roc_auc_score

    import qsg_protocol as qp
    from weakkernels import QSGS2AUC

    for ds in a.datasets:
        X, y = qp.load(ds)
        for seed in a.seeds:
            Xtr, ys, Xte, yte, *_ = qp.split(X, y, seed, 4800)
            for sched in a.schedules:
                est = QSGS2AUC(random_state=seed)
                cpu, levels = timed_fit(est, Xtr, ys, sched)
                auc = roc_auc_score(yte, est.decision_function(Xte))
                append_row(out, COLS, {
                    "estimator": "qsgs2auc", "dataset": ds,
                    "L": int(np.sum(ys != -1)), "U": int(np.sum(ys == -1)),
                    "seed": seed, "schedule": sched, "level_rows": levels,
                    "metric": "test_auc", "value": f"{auc:.5f}",
                    "fit_cpu_s": f"{cpu:.2f}", "rev": rev})


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", required=True, choices=["s3vm", "qsg"])
    ap.add_argument("--dataset", default="ijcnn1")
    ap.add_argument("--datasets", nargs="+", default=["cod-rna", "ijcnn1"])
    ints = lambda s: [int(v) for v in s.split(",")]  # noqa: E731
    ap.add_argument("--L", type=ints, default=[1000])
    ap.add_argument("--U", type=ints, default=[8000])
    ap.add_argument("--seeds", type=ints, default=[0, 1, 2])
    ap.add_argument("--schedules", type=lambda s: s.split(","),
                    default=["merged", "every"])
    ap.add_argument("--no-c0", action="store_true", help="skip the C_star=0 fit")
    ap.add_argument("--out", type=Path, default=OUT)
    a = ap.parse_args(argv)
    bad = set(a.schedules) - set(SCHEDULES)
    if bad:
        ap.error(f"unknown schedules {sorted(bad)}; choose from {sorted(SCHEDULES)}")
    a.out.parent.mkdir(parents=True, exist_ok=True)
    (part_s3vm if a.part == "s3vm" else part_qsg)(a, a.out, revision())


if __name__ == "__main__":
    main()
