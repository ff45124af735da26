"""CCCPTSVM / RampSVM: sigma=1.0 (their default until this script's
measurement) against "scale" (``resolve_sigma("scale", X_fit)``, X_fit = the
rows passed to fit: labeled and unlabeled for CCCPTSVM, the labels for
RampSVM and SVC), every other parameter at its default; SVC on the labels at
both widths for reference. Sets: g50c (10 official splits), SSL-book g241c /
g241n (official 100-label splits 0-5), cod-rna / ijcnn1 as
``benchmarks/s3vm_defaults.py`` builds them (min-max over the whole set, 200
labels, 2 000 unlabeled, 2 000 test rows, seeds 0-2) and
``benchmarks/su_auc_scale.py``'s standardised **synthetic** pool (200 labels,
3 000 unlabeled, 4 000 test rows, seeds 0-2). The published run
(``benchmarks/results/cccp_sigma_default.csv``) was made at 31bd9d9, where
CCCPTSVM and RampSVM refused the string: "scale" is passed as the number it
resolves to (``tests/test_sigma_scale.py``: the same bits)::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 python benchmarks/cccp_sigma_default.py

Every fit runs in a forked child (one process computing at a time: the parent
only waits), killed after WALL_LIMIT s; a fit whose CPU time exceeds 180 s is
recorded and the remaining splits of that configuration are skipped.
"""

from __future__ import annotations

import csv
import os
import pickle
import sys
import time
from pathlib import Path

import numpy as np
from sklearn.svm import SVC

import s3vm_defaults as sd
import su_auc_scale as sc
from _cccp_common import g50c, sslbook
from weakkernels import CCCPTSVM, RampSVM
from weakkernels.kernels import resolve_sigma

CSV = Path(__file__).resolve().parent / "results" / "cccp_sigma_default.csv"
CPU_LIMIT = 180.0
WALL_LIMIT = 420.0
FIELDS = ["estimator", "dataset", "split", "sigma_setting", "sigma_value",
          "test_error", "fit_cpu_s", "fit_wall_s", "n_labeled", "n_unlabeled",
          "n_test", "note"]


def in_child(fn):
    """Run fn() in a forked child; return its result, or None on timeout."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        try:
            res = fn()
        except Exception as exc:  # noqa: BLE001
            res = {"error": repr(exc)[:200]}
        with os.fdopen(w, "wb") as fh:
            pickle.dump(res, fh)
        os._exit(0)
    os.close(w)
    t0 = time.monotonic()
    import select

    data = b""
    with os.fdopen(r, "rb") as fh:
        while True:
            left = WALL_LIMIT - (time.monotonic() - t0)
            if left <= 0:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
                return None
            ready, _, _ = select.select([fh], [], [], min(left, 5.0))
            if ready:
                chunk = fh.read()
                data += chunk
                break
    os.waitpid(pid, 0)
    return pickle.loads(data)


def fit_eval(make, X, y, Xt, yt):
    def job():
        m = make()
        c0, t0 = time.process_time(), time.perf_counter()
        m.fit(X, y)
        cpu, wall = time.process_time() - c0, time.perf_counter() - t0
        return {"err": float(np.mean(m.predict(Xt) != yt)), "cpu": cpu, "wall": wall}
    return in_child(job)


def datasets(only=None):
    """yield (dataset, split, XL, yl, XU, XT, yt)."""
    if only is None or "g50c" in only:
        X, y, splits = g50c()
        for k, (L, U) in enumerate(splits[:10]):
            yield "g50c", k, X[L], y[L], X[U], X[U], y[U]
    for name in ("g241c", "g241n"):
        if only is None or name in only:
            X, y, splits = sslbook(sd.SSLBOOK[name], 100)
            for k, (L, U) in enumerate(splits[:6]):
                yield name, k, X[L], y[L], X[U], X[U], y[U]
    for name in ("cod-rna", "ijcnn1"):
        if only is None or name in only:
            # s3vm_defaults.splits: min-max over the whole data set, then a
            # permutation: 200 labeled, 2000 unlabeled, 2000 test
            for split, XL, yl, XU, XT, yt in sd.splits(name, seeds=(0, 1, 2)):
                yield name, int(split.split()[-1]), XL, yl, XU, XT, yt
    if only is None or "synthetic" in only:
        for s in range(3):
            X, y = sc.pool(8000, seed=s)
            n_fit = 3200
            X_fit, Xt = sc.standardise(X[:n_fit], X[n_fit:n_fit + 4000])
            yield ("synthetic", s, X_fit[:200], y[:200], X_fit[200:n_fit], Xt,
                   y[n_fit:n_fit + 4000])


def warm_up():
    """Compile the numba kernels in the parent, so the children's fit times
    exclude JIT compilation."""
    rng = np.random.default_rng(0)
    X = rng.normal(size=(60, 3))
    y = (X[:, 0] > 0).astype(int)
    ys = y.copy()
    ys[20:] = -1
    CCCPTSVM().fit(X, ys).predict(X)
    RampSVM(random_state=0).fit(X, y).predict(X)


def main():
    only = sys.argv[1:] or None
    warm_up()
    new = not CSV.exists()
    fh = open(CSV, "a", newline="")
    w = csv.DictWriter(fh, FIELDS)
    if new:
        w.writeheader()
    skip = set()
    for ds, split, XL, yl, XU, XT, yt in datasets(only):
        X = np.vstack([XL, XU])
        ysemi = np.r_[yl, np.full(len(XU), -1)]
        s_tr = resolve_sigma("scale", X)
        s_lab = resolve_sigma("scale", XL)
        configs = [
            ("CCCPTSVM", "1.0", 1.0, X, ysemi, lambda: CCCPTSVM(sigma=1.0)),
            ("CCCPTSVM", "scale", s_tr, X, ysemi, lambda s=s_tr: CCCPTSVM(sigma=s)),
            ("RampSVM (labeled)", "1.0", 1.0, XL, yl,
             lambda: RampSVM(sigma=1.0, random_state=0)),
            ("RampSVM (labeled)", "scale", s_lab, XL, yl,
             lambda s=s_lab: RampSVM(sigma=s, random_state=0)),
            ("SVC (labeled)", "scale", s_lab, XL, yl, lambda: SVC()),
            ("SVC (labeled)", "1.0", 1.0, XL, yl, lambda: SVC(gamma=1.0)),
        ]
        for est, setting, val, Xf, yf, make in configs:
            key = (est, ds, setting)
            row = dict(estimator=est, dataset=ds, split=split, sigma_setting=setting,
                       sigma_value=f"{val:.6g}", n_labeled=len(yl),
                       n_unlabeled=len(XU) if est == "CCCPTSVM" else 0,
                       n_test=len(yt), note="")
            if key in skip:
                row.update(test_error="", fit_cpu_s="", fit_wall_s="",
                           note="skipped: an earlier split exceeded 180 s CPU")
            else:
                res = fit_eval(make, Xf, yf, XT, yt)
                if res is None:
                    skip.add(key)
                    row.update(test_error="", fit_cpu_s="", fit_wall_s="",
                               note=f"killed after {WALL_LIMIT:.0f} s wall")
                elif "error" in res:
                    row.update(test_error="", fit_cpu_s="", fit_wall_s="",
                               note="error: " + res["error"])
                else:
                    row.update(test_error=f"{res['err']:.4f}",
                               fit_cpu_s=f"{res['cpu']:.3f}",
                               fit_wall_s=f"{res['wall']:.3f}")
                    if res["cpu"] > CPU_LIMIT:
                        skip.add(key)
                        row["note"] = "fit > 180 s CPU; later splits skipped"
            w.writerow(row)
            fh.flush()
            print(ds, split, est, setting, row["sigma_value"], row["test_error"],
                  row["fit_cpu_s"], row["note"], flush=True)
    fh.close()


if __name__ == "__main__":
    main()
