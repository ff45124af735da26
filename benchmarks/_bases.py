"""Fourier vs Nyström features at equal feature count, with the fit's CPU
time: the one measuring loop of ``tsgsu_protocol.py --bases`` and
``qsg_protocol.py --bases``.

Every fit is one line of a CSV (appended; ``rev`` is the git revision that
ran it), which ``benchmarks/pages/70-su-auc.md`` renders with the ``pivot``
renderer. CPU seconds are ``time.process_time`` of the fit: run with one
thread (``NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1``) so that they are the work
done, not the wall time of a shared machine.
"""

from __future__ import annotations

import csv
import subprocess
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
COLUMNS = ["dataset", "n_u", "n_rows", "basis", "m", "sigma", "seed", "metric",
           "score", "fit_cpu_s", "fit_wall_s", "n_iter", "rev"]


def revision() -> str:
    """The short git revision of the code measured (``+dirty`` if changed)."""
    try:
        rev = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT,
                             capture_output=True, text=True, check=True).stdout
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "src"],
                               cwd=ROOT, capture_output=True, text=True,
                               check=True).stdout
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return rev.strip() + ("+dirty" if dirty.strip() else "")


def append_row(out: Path, columns: list, row: dict) -> None:
    """Append ``row`` to the CSV ``out`` (its header first if new) and echo
    its non-empty cells: the resumable result files of the measurement
    scripts, one fit per line."""
    new = not out.exists()
    with out.open("a", newline="") as fh:
        w = csv.DictWriter(fh, columns)
        if new:
            w.writeheader()
        w.writerow(row)
    print(" ".join(f"{k}={row[k]}" for k in columns if row[k] != ""), flush=True)


def compare_bases(out: Path, dataset: str, problems: dict, make, score, *,
                  metric: str, ms, sigmas, bases=("fourier", "nystroem"),
                  log=print) -> list[dict]:
    """Fit ``make(basis, m, sigma, seed)`` on every ``problems[seed] =
    (X_fit, y_fit, X_test, y_test, n_u)`` for every basis, feature count
    ``m`` and ``sigma``; ``score(est, X_test, y_test)`` is the test
    ``metric``. Appends one CSV line per fit to ``out`` and returns them."""
    out.parent.mkdir(parents=True, exist_ok=True)
    new = not out.exists()
    rev = revision()
    rows = []
    # one small fit per basis first: numba's compilation (or cache load) is
    # not charged to the first measured fit
    seed0 = next(iter(problems))
    X_fit, y_fit = problems[seed0][:2]
    few = np.r_[0:300, X_fit.shape[0] - 300:X_fit.shape[0]]
    for basis in bases:
        make(basis, 64, sigmas[0], seed0).fit(X_fit[few], y_fit[few])
    with out.open("a", newline="") as fh:
        w = csv.DictWriter(fh, COLUMNS)
        if new:
            w.writeheader()
        for seed, (X_fit, y_fit, Xt, yt, n_u) in problems.items():
            for sigma in sigmas:
                for m in ms:
                    for basis in bases:
                        est = make(basis, m, sigma, seed)
                        c0, t0 = time.process_time(), time.perf_counter()
                        est.fit(X_fit, y_fit)
                        cpu = time.process_time() - c0
                        wall = time.perf_counter() - t0
                        assert est.features_ == basis and est.n_features_model_ == m
                        row = {"dataset": dataset, "n_u": n_u,
                               "n_rows": X_fit.shape[0], "basis": basis, "m": m,
                               "sigma": sigma, "seed": seed, "metric": metric,
                               "score": f"{score(est, Xt, yt):.5f}",
                               "fit_cpu_s": f"{cpu:.2f}", "fit_wall_s": f"{wall:.2f}",
                               "n_iter": est.n_iter_, "rev": rev}
                        w.writerow(row)
                        fh.flush()
                        rows.append(row)
                        log(f"  {dataset} n_u={n_u} seed={seed} sigma={sigma} "
                            f"m={m} {basis:8s} {metric}={row['score']} "
                            f"cpu={row['fit_cpu_s']}s wall={row['fit_wall_s']}s "
                            f"iter={est.n_iter_}")
    return rows
