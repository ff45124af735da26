"""A full TSGS3VM fit on 10^7 **synthetic** rows: in one process, and through
the workers of a Dask ``LocalCluster``; same estimator, same rows, the models
compared.

Data: the HIGGS/HEPMASS-shaped synthetic set of ``benchmarks/scale_train.py``
(``weakkernels.pipeline.synthetic``, ``synthetic_hepmass``: 28 features, the
content from a nonlinear teacher), its float32 ``X.npy`` memory-mapped. The
first ``--n-labeled`` rows keep their labels, the others are unlabeled; the
decision values are compared on ``--n-test`` rows from the end of the set
(never trained on).

``--mode local`` fits the memory-mapped ``X[:n]`` in this process.
``--mode dask`` fits a dask array of ``X[:n]`` in chunks of ``--chunk-rows``
rows, each chunk a read-only memory map of the file opened by a worker
(``np.load(mmap_mode="r")``), on ``LocalCluster(n_workers, threads_per_worker=1,
processes=True, memory_limit=--worker-memory)`` with spilling off (the chunks
are mapped files: nothing to spill). Each mode writes ``<out>/<mode>.npz``
(coefficients, intercept, decision values on the test rows) and
``<out>/<mode>.json`` (times, peak memory). ``--mode compare`` compares the two
and writes ``--results``.

Memory, per process (client, each worker): ``VmHWM`` of ``/proc/<pid>/status``
at the end (the resident high-water mark, what a nanny's memory limit watches;
it counts the mapped file pages that were resident), and the peaks of
``RssAnon`` / ``RssFile`` sampled every 50 ms in that process.

    export NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1
    nice -n 5 python benchmarks/dask_fit.py --mode local --data-dir DIR
    nice -n 5 python benchmarks/dask_fit.py --mode dask --data-dir DIR
    python benchmarks/dask_fit.py --mode compare
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

import _peak_memory
from _peak_memory import PeakSampler, status
from weakkernels.pipeline.synthetic import SYNTHETIC, open_synthetic


# -- worker side (run through client.run in each worker process; this script's
# functions travel by value, so the sampler is kept on the worker object) ----
def worker_start_sampler(dask_worker):
    dask_worker.wk_peak_sampler = PeakSampler().start()
    return status()["VmRSS"]


def worker_peaks(dask_worker) -> dict:
    return dask_worker.wk_peak_sampler.stop()


def worker_cpu_s() -> float:
    return time.process_time()


def open_chunk(path: str, r0: int, r1: int):
    """Rows ``r0:r1`` of ``X.npy``, a read-only memory map (no copy)."""
    return np.load(path, mmap_mode="r")[r0:r1]


def estimator(args):
    from weakkernels import TSGS3VM

    # the defaults of benchmarks/scale_train.py --solver lbfgs: L-BFGS on
    # growing samples up to every row, the default feature count
    return TSGS3VM(sigma=SYNTHETIC[args.dataset].teacher_sigma, C=args.C,
                   random_state=0, max_features=args.max_features)


def labels(y_true, n: int, n_labeled: int) -> np.ndarray:
    y = np.full(n, -1, dtype=np.int8)
    y[:n_labeled] = y_true[:n_labeled]
    return y


def fit_local(args, X, y, X_test):
    est = estimator(args)
    sampler = PeakSampler().start()
    t0, c0 = time.perf_counter(), time.process_time()
    est.fit(X, y)
    fit_s, cpu_s = time.perf_counter() - t0, time.process_time() - c0
    peaks = sampler.stop()
    return est, {"fit_s": fit_s, "cpu_s": cpu_s, "client": peaks}


def fit_dask(args, X, y, X_test):
    import cloudpickle
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    # the worker-side functions use the sampler: its module travels by value
    # (a worker needs no copy of benchmarks/ on its path)
    cloudpickle.register_pickle_by_value(_peak_memory)

    path = str(Path(args.data_dir) / "X.npy")
    n, d = X.shape
    cuts = [*range(0, n, args.chunk_rows), n]
    # one task per chunk, its key the array's: the map is made on the worker
    # that keeps it (from_delayed + concatenate put an alias task over each
    # chunk, which the scheduler may run on the other worker: the chunk then
    # travels and lands there as an anonymous in-memory copy)
    name = "synthetic-rows-" + dask.base.tokenize(path, n, args.chunk_rows)
    graph = {(name, i, 0): (open_chunk, path, r0, r1)
             for i, (r0, r1) in enumerate(zip(cuts[:-1], cuts[1:], strict=True))}
    Xd = da.Array(graph, name, chunks=(tuple(np.diff(cuts)), (d,)),
                  meta=np.empty((0, 0), dtype=X.dtype))
    est = estimator(args)
    # The chunks are mapped files: spilling would copy them to disk and back
    # into memory, and a chunk moved to another worker (work stealing) is
    # read whole, stays resident on its sender and becomes anonymous memory
    # on its receiver -- every chunk task runs where its chunk is. A paused
    # worker runs no task, so it never drops the pages that paused it (a
    # first run stalled so): no pause; the nanny still restarts a worker
    # above 95 % of its memory_limit.
    config = {"distributed.worker.memory.target": False,
              "distributed.worker.memory.spill": False,
              "distributed.worker.memory.pause": False,
              "distributed.scheduler.work-stealing": False}
    sampler = PeakSampler().start()
    with dask.config.set(config), \
            LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                         memory_limit=args.worker_memory,
                         dashboard_address=None) as cluster, \
            Client(cluster) as client:
        base = client.run(worker_start_sampler)
        c0 = client.run(worker_cpu_s)
        t0, cc0 = time.perf_counter(), time.process_time()
        est.fit(Xd, y)
        fit_s, client_cpu = time.perf_counter() - t0, time.process_time() - cc0
        c1 = client.run(worker_cpu_s)
        peaks = client.run(worker_peaks)
        limits = {w: info["memory_limit"]
                  for w, info in client.scheduler_info()["workers"].items()}
    client_peaks = sampler.stop()
    workers = [{"rss_before_fit": base[w], "cpu_s": c1[w] - c0[w],
                "memory_limit": limits[w], **peaks[w]} for w in sorted(peaks)]
    return est, {"fit_s": fit_s, "client_cpu_s": client_cpu,
                 "cpu_s": client_cpu + sum(w["cpu_s"] for w in workers),
                 "client": client_peaks, "workers": workers,
                 "n_workers": args.workers, "chunk_rows": args.chunk_rows,
                 "worker_memory": args.worker_memory}


def compare(args) -> dict:
    out = Path(args.out_dir)
    a, b = np.load(out / "local.npz"), np.load(out / "dask.npz")
    ja = json.loads((out / "local.json").read_text())
    jb = json.loads((out / "dask.json").read_text())
    fa, fb = a["decision"], b["decision"]
    same_coef = bool(np.array_equal(a["coef"], b["coef"])
                     and np.array_equal(a["intercept"], b["intercept"]))
    res = {
        "synthetic": True, "local": ja, "dask": jb,
        "coef_bit_identical": same_coef,
        "coef_max_abs_diff": float(np.max(np.abs(a["coef"] - b["coef"]))),
        "coef_max_abs": float(np.max(np.abs(a["coef"]))),
        "decision_max_abs_diff": float(np.max(np.abs(fa - fb))),
        "decision_max_abs": float(np.max(np.abs(fa))),
        "decision_rel_diff": float(np.max(np.abs(fa - fb)) / np.max(np.abs(fa))),
        "predictions_differing": int(np.sum(np.sign(fa) != np.sign(fb))),
        "n_test": int(fa.size),
        "test_error": {"local": ja["test_error"], "dask": jb["test_error"]},
        "n_iter": {"local": ja["n_iter"], "dask": jb["n_iter"]},
    }
    return res


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["local", "dask", "compare"], required=True)
    ap.add_argument("--dataset", default="synthetic_hepmass", choices=sorted(SYNTHETIC))
    ap.add_argument("--data-dir", default=None,
                    help="a written synthetic set (default data/synthetic/<dataset>)")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--n-labeled", type=int, default=10_000)
    ap.add_argument("--n-test", type=int, default=100_000)
    ap.add_argument("--C", type=float, default=10.0)
    ap.add_argument("--max-features", type=int, default=None,
                    help="pin the feature count (default: the estimator's rule)")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunk-rows", type=int, default=1 << 18)
    ap.add_argument("--worker-memory", default="1GB",
                    help="each worker's memory_limit (its nanny restarts it "
                    "above 95 %%)")
    ap.add_argument("--out-dir", default="benchmarks/results/dask_fit")
    ap.add_argument("--results", default="benchmarks/results/dask_fit.json")
    args = ap.parse_args(argv)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if args.mode == "compare":
        res = compare(args)
        Path(args.results).write_text(json.dumps(res, indent=2) + "\n")
        print(json.dumps(res, indent=2))
        return 0
    spec = SYNTHETIC[args.dataset]
    args.data_dir = args.data_dir or f"data/synthetic/{args.dataset}"
    if args.rows > spec.n_rows - args.n_test:
        raise SystemExit(f"--rows must leave {args.n_test} test rows")
    X_all, y_all = open_synthetic(args.data_dir)
    X, y = X_all[:args.rows], labels(y_all, args.rows, args.n_labeled)
    X_test = np.asarray(X_all[spec.n_rows - args.n_test:])
    y_test = np.asarray(y_all[spec.n_rows - args.n_test:])
    fit = fit_local if args.mode == "local" else fit_dask
    est, figures = fit(args, X, y, X_test)
    decision = est.decision_function(X_test)
    np.savez(out / f"{args.mode}.npz", coef=est.coef_, intercept=est.intercept_,
             decision=decision)
    figures.update(
        mode=args.mode, rows=args.rows, d=int(X.shape[1]), n_labeled=args.n_labeled,
        C=args.C, n_iter=int(est.n_iter_), n_features_model=int(est.n_features_model_),
        features=est.features_,
        test_error=float(np.mean(est.predict(X_test) != y_test)),
        load_avg_1min=os.getloadavg()[0], synthetic=True,
        command=" ".join(["python", "benchmarks/dask_fit.py", *(argv or sys.argv[1:])]))
    (out / f"{args.mode}.json").write_text(json.dumps(figures, indent=2) + "\n")
    print(json.dumps(figures, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
