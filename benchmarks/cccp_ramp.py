"""Ramp-loss SVM (Algorithm 1.2) vs hinge SVM: Table 1.1 / Fig. 1.4 shape.

Usage: ``.venv/bin/python benchmarks/cccp_ramp.py [--n-train 10000] [--flip 0.1]``

ijcnn1 (LIBSVM ``ijcnn1`` = tr + val as training pool, ``ijcnn1.t`` as test
pool; features already in [-1, 1]): ``n_train`` random training points with a
fraction ``flip`` of their labels flipped (label noise, in the spirit of the
paper's USPS+N), 10,000 random test points. RBF ``sigma = 2``, ``C = 10``
(LIBSVM guide's region for ijcnn1; not tuned here, same for every row).
Reported: test error, number of support vectors, fit time (median of 3) for
our hinge SVM (Algorithm 1.2 with ``s -> -inf``), scikit-learn ``SVC`` (LIBSVM,
same C/gamma, as a speed reference), Ramp SVMs with ``s = -1`` and ``s = 0``
from ``beta^0 = 0``, and the ``s = 0`` Ramp SVM initialised on a 1/10 subset
(Sec. 1.3.5).
"""

from __future__ import annotations

import argparse
import bz2
import time

import numpy as np
from sklearn.datasets import load_svmlight_file
from sklearn.svm import SVC

from _cccp_common import DATA, HINGE_S


def load(name, n_features=22):
    with bz2.open(DATA / "ijcnn1" / name) as fh:
        X, y = load_svmlight_file(fh, n_features=n_features)
    return X.toarray(), (y > 0).astype(int)


def timed(make, X, y, repeats):
    times = []
    for _ in range(repeats):
        est = make()
        t0 = time.perf_counter()
        est.fit(X, y)
        times.append(time.perf_counter() - t0)
    return est, float(np.median(times))


def main():
    from weakkernels import RampSVM

    ap = argparse.ArgumentParser()
    ap.add_argument("--n-train", type=int, default=10000)
    ap.add_argument("--flip", type=float, default=0.1)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    rng = np.random.default_rng(0)
    Xp, yp = load("ijcnn1.trn.bz2")
    Xq, yq = load("ijcnn1.tst.bz2")
    tr = rng.choice(yp.size, args.n_train, replace=False)
    te = rng.choice(yq.size, 10000, replace=False)
    X, y = Xp[tr], yp[tr].copy()
    flip = rng.random(y.size) < args.flip
    y[flip] = 1 - y[flip]
    Xt, yt = Xq[te], yq[te]
    C, sigma = 10.0, 2.0
    RampSVM(C=C, sigma=sigma).fit(X[:200], y[:200])  # compile before timing
    rows = [
        ("hinge SVM (ours, SMO)",
         lambda: RampSVM(C=C, sigma=sigma, s=HINGE_S)),
        ("hinge SVM (sklearn SVC)", lambda: SVC(C=C, gamma=sigma)),
        ("Ramp SVM s=-1", lambda: RampSVM(C=C, sigma=sigma, s=-1.0)),
        ("Ramp SVM s=0", lambda: RampSVM(C=C, sigma=sigma, s=0.0)),
        ("Ramp SVM s=0, init on 1/10 subset",
         lambda: RampSVM(C=C, sigma=sigma, s=0.0, init_fraction=0.1,
                         random_state=0)),
    ]
    print(f"\nijcnn1, n_train={args.n_train}, label noise {args.flip:.0%}, "
          f"test 10000, C={C}, sigma={sigma}\n")
    print("| model | test error % | SVs | CCCP iters | fit s (median of "
          f"{args.repeats}) |")
    print("|---|---|---|---|---|")
    for name, make in rows:
        est, t = timed(make, X, y, args.repeats)
        err = np.mean(est.predict(Xt) != yt)
        n_sv = int(np.sum(est.n_support_))
        iters = est.n_iter_[0] if isinstance(est, RampSVM) else "-"
        print(f"| {name} | {100 * err:.2f} | {n_sv} | {iters} | {t:.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
