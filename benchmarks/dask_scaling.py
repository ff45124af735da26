"""Time per pass of the chunked random-feature objective on Dask workers.

A **synthetic** HIGGS/HEPMASS-shaped set (28 features,
``weakkernels.pipeline.synthetic``) is written as one ``.npy`` file per Dask
chunk, loaded by the workers of a ``LocalCluster`` (1 thread each) and
persisted there. One *pass* is one evaluation of a row-separable loss and its
gradient over every row (``DaskPrimalSet.fused``: the L-BFGS solver's unit of
work), with D = 1024 Fourier features regenerated on the workers (the
streamed mode of a level too large to hold). Reported per worker count:
median seconds per pass, the round trip of an evaluation on one 2048-row
chunk (the per-iteration broadcast + reduction overhead), and the peak RSS of
each worker process.

    python benchmarks/dask_scaling.py --rows 1000000 --workers 1 2
"""

from __future__ import annotations

import argparse
import json
import resource
import tempfile
import time
from pathlib import Path

import dask
import dask.array as da
import numpy as np
from distributed import Client, LocalCluster, wait

from weakkernels._dask import DaskRows
from weakkernels._dsg import Problem, RowLoss, _PrimalSet
from weakkernels._threads import one_blas_thread
from weakkernels.pipeline.synthetic import SYNTHETIC, synthetic_rows
from weakkernels.random_features import FeatureSpec
from weakkernels.tsgs3vm import unlabeled_loss, unlabeled_loss_grad

CHUNK_ROWS = 1 << 18


def shg(s, f, rows, m, w):
    """The unlabeled squared-hinge part of TSGS3VM's objective (no labels)."""
    return unlabeled_loss("shg", f).sum() / m, unlabeled_loss_grad("shg", f) / m


def write_chunks(n_rows: int, out: Path) -> list[Path]:
    spec = SYNTHETIC["synthetic_hepmass"]
    paths = []
    for i, r0 in enumerate(range(0, n_rows, CHUNK_ROWS)):
        path = out / f"X_{i:04d}.npy"
        if not path.exists():
            X, _ = synthetic_rows(spec, r0, min(n_rows, r0 + CHUNK_ROWS))
            np.save(path, X)
        paths.append(path)
    return paths


def dask_rows(paths, n_rows: int, d: int):
    parts = []
    for i, p in enumerate(paths):
        n = min(CHUNK_ROWS, n_rows - i * CHUNK_ROWS)
        parts.append(da.from_delayed(dask.delayed(np.load)(str(p)), (n, d),
                                     dtype=np.float32))
    return da.concatenate(parts)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def cpu_s() -> float:
    """CPU seconds of this (worker) process: the machine is shared, so wall
    time alone mixes in other jobs' load."""
    return time.process_time()


def setup():
    """D = 1024 seeded Fourier features of 28 inputs and a fixed ``v``."""
    spec = FeatureSpec("rbf", SYNTHETIC["synthetic_hepmass"].teacher_sigma, 2, 1.0,
                       28, 256, 0, np.float32)
    W, second = spec.blocks(0, 4)
    norm = np.float32(1.0 / np.sqrt(4))
    rng = np.random.default_rng(0)
    v32 = (rng.normal(size=(W.shape[1], 1)) * 0.01).astype(np.float32)
    return spec, W, second, norm, v32, np.zeros(1)


def measure_local(paths, n_rows: int, passes: int) -> dict:
    """The same pass in this process, single-threaded, by the in-memory
    solver's point set with its features regenerated (the reference)."""
    spec, W, second, norm, v32, shift = setup()
    X = np.concatenate([np.load(p) for p in paths])
    ps = _PrimalSet(Problem([(X, None)], 1, None), 0, None, spec, W, second, norm,
                    False, None)
    loss = RowLoss(shg, 1, n_rows, 1.0)
    times, cpus = [], []
    with one_blas_thread():
        for _ in range(passes):
            c, t = time.process_time(), time.perf_counter()
            value, back, _ = ps.fused(v32, shift, loss)
            times.append(time.perf_counter() - t)
            cpus.append(round(time.process_time() - c, 2))
    return {"rows": n_rows, "workers": "in-process", "pass_s":
            [round(x, 2) for x in times], "cpu_s_per_pass": cpus,
            "median_pass_s": round(float(np.median(times)), 2),
            "value": float(value), "grad_norm": float(np.linalg.norm(back))}


def measure(paths, n_rows: int, n_workers: int, passes: int) -> dict:
    spec, W, second, norm, v32, shift = setup()
    with LocalCluster(n_workers=n_workers, threads_per_worker=1, processes=True,
                      memory_limit=0, dashboard_address=None) as cluster, \
            Client(cluster) as client:
        t = time.perf_counter()
        rows = DaskRows.persist(dask_rows(paths, n_rows, 28), client)
        wait(rows.blocks)
        load = time.perf_counter() - t
        ps = rows.primal_set(None, None, spec, W, second, norm, hold=False)
        small = rows.primal_set(None, np.arange(2048), spec, W, second, norm,
                                hold=False)
        loss = RowLoss(shg, 1, n_rows, 1.0)
        ps.fused(v32, shift, loss)  # warm-up: compile, frequencies on workers
        times, cpus = [], []
        for _ in range(passes):
            c0 = client.run(cpu_s)
            t = time.perf_counter()
            value, back, _ = ps.fused(v32, shift, loss)
            times.append(time.perf_counter() - t)
            c1 = client.run(cpu_s)
            cpus.append([round(c1[k] - c0[k], 2) for k in sorted(c0)])
        small.fused(v32, shift, loss)
        trips = []
        for _ in range(20):
            t = time.perf_counter()
            small.fused(v32, shift, loss)
            trips.append(time.perf_counter() - t)
        rss = client.run(peak_rss_mb)
    return {"rows": n_rows, "workers": n_workers, "dask_chunks": len(paths),
            "load_s": round(load, 2), "pass_s": [round(x, 2) for x in times],
            "median_pass_s": round(float(np.median(times)), 2),
            "worker_cpu_s_per_pass": cpus,
            "round_trip_2048_rows_ms": round(1e3 * float(np.median(trips)), 1),
            "peak_rss_mb_per_worker": sorted(round(x) for x in rss.values()),
            "value": float(value), "grad_norm": float(np.linalg.norm(back))}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--passes", type=int, default=3)
    ap.add_argument("--data", default=None, help="folder for the .npy chunks")
    ap.add_argument("--in-process", action="store_true",
                    help="also time the pass in this process (needs n x 28 floats)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(args.data or tmp)
        out.mkdir(parents=True, exist_ok=True)
        paths = write_chunks(args.rows, out)
        if args.in_process:
            print(json.dumps(measure_local(paths, args.rows, args.passes)),
                  flush=True)
        for w in args.workers:
            print(json.dumps(measure(paths, args.rows, w, args.passes)), flush=True)


if __name__ == "__main__":
    main()
