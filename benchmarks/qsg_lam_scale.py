"""QSG-S2AUC's ``lam`` at the default width ``sigma="scale"`` (since
88420dd): test AUC at lam = 1e-4 (the default chosen at sigma = 0.125),
1e-3 and 1e-2, every other parameter at its default, seeds 0-2, on paper
003's protocol (``benchmarks/qsg_protocol.py``: min-max scaled, 200 labels,
n_u = 4 800; cod-rna, ijcnn1, skin) and on ``benchmarks/su_auc_scale.py``'s
standardised **synthetic** pool (2 000 labels, 20 000 unlabeled, 20 000 test
rows)::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/qsg_lam_scale.py \\
        --out benchmarks/results/qsg_lam_scale.csv

``--gammas`` adds Eq. (8)'s trade-off ``gamma`` (default 0.5; 1 is the
supervised PN risk alone, the unlabeled PU / NU terms off) as a second
axis, with the fit CPU seconds: does the unlabeled part pay at the default
basis? ::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/qsg_lam_scale.py \\
        --lams 1e-3 1e-2 --gammas 0.5 1 --out benchmarks/results/qsg_gamma_scale.csv
"""

from __future__ import annotations

import argparse
import csv
import time
import warnings
from pathlib import Path

from sklearn.metrics import roc_auc_score

import qsg_protocol as qp
import su_auc_scale as sc
from _bases import revision
from weakkernels import QSGS2AUC

LAMS = (1e-4, 1e-3, 1e-2)


def problems():
    """``(dataset, seed, X_fit, y_semi, X_test, y_test)``."""
    for ds in ("cod-rna", "ijcnn1", "skin"):
        X, y = qp.load(ds)
        for seed in (0, 1, 2):
            Xtr, ys, Xte, yte, *_ = qp.split(X, y, seed, 4800)
            yield ds, seed, Xtr, ys, Xte, yte
    for seed in (0, 1, 2):
        X, y = sc.pool(45_000, seed=seed)
        # 2 000 labels, 20 000 unlabeled, 20 000 test rows
        yield ("synthetic (standardised)", seed,
               *sc.auc_problem(X, y, 2_000, 20_000, 20_000))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--lams", type=float, nargs="+", default=list(LAMS))
    ap.add_argument("--gammas", type=float, nargs="+", default=None)
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args(argv)
    warnings.filterwarnings("ignore", message="prior=None")
    # without --gammas: the columns of the lam sweep's CSV (measured on
    # Fourier features, the default until 65a7e4b; a re-run gets Nyström)
    extra = ["gamma", "fit_cpu_s"] if args.gammas else []
    with args.out.open("w", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["dataset", "seed", "lam", *extra, "test_auc", "rev"])
        for ds, seed, Xtr, ys, Xte, yte in problems():
            for lam in args.lams:
                for gamma in args.gammas or [None]:
                    kw = {} if gamma is None else {"gamma": gamma}
                    c0 = time.process_time()
                    m = QSGS2AUC(lam=lam, random_state=seed, **kw).fit(Xtr, ys)
                    cpu = time.process_time() - c0
                    auc = roc_auc_score(yte, m.decision_function(Xte))
                    cells = [gamma, f"{cpu:.2f}"] if extra else []
                    w.writerow([ds, seed, lam, *cells, f"{auc:.4f}", revision()])
                    fh.flush()
                    print(ds, seed, lam, *cells, f"{auc:.4f}", flush=True)


if __name__ == "__main__":
    main()
