"""CPU of one streamed point set's fused evaluation (a pass of the loss and
its gradient, every feature regenerated): in process (``_dsg._PrimalSet``,
streamed) against ``DaskPrimalSet`` on a ``LocalCluster``; the process CPU
and minor page faults of the client and of each worker, and, measured inside
the chunk functions, the parts of a pass (kernel, loss, row reads, ...).

    PYTHONPATH=src:benchmarks python benchmarks/dask_pass_cost.py --mode inproc|dask \
        [--workers 1|2] [--set full|sample] [--evals 2] [--repeats 3] \
        [--features nystroem|fourier] [--trim keep|unset] \
        [--data-dir DIR] [--results FILE --key NAME]

Data: the **synthetic** ``synthetic_hepmass`` set (``X.npy`` memory mapped,
as ``benchmarks/dask_fit.py``), 2 048 Nyström landmarks (the 10^7-row
default) or 1 024 Fourier features, the teacher's sigma.
set "full": the unlabeled rows 10 000 .. 1 010 000 (the last level of a fit:
every row, contiguous); Dask chunks of 2^18 rows of ``X[:1 010 000]``.
set "sample": a seeded sample of 2^20 of the unlabeled rows 10 000 .. 10^7
(a sampled level of a 10^7 fit; on Dask copied beside its chunk once).
``--trim unset`` starts the workers without the nanny's
``MALLOC_TRIM_THRESHOLD_`` (see ``random_features.work_array``).
Figures: per evaluation per 10^6 rows, the median of the repeats; the
source tree measured is the one on ``PYTHONPATH``.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from pathlib import Path

import numpy as np

import _dask_pass_probe as probe_lib

PATH = None  # X.npy of the data directory (set by main)
SIGMA = None  # the teacher's sigma (meta.json)
N_L = 10_000


def build_spec(X, features, n_u_total):
    from weakkernels._dsg import nystroem_landmarks
    from weakkernels.random_features import FeatureSpec, NystromSpec

    if features == "nystroem":
        Z = nystroem_landmarks((X, np.arange(N_L)), (X, np.arange(N_L, n_u_total)),
                               2048, 0)
        spec = NystromSpec("rbf", SIGMA, Z, np.float32, 0)
        n_blocks = 1
    else:
        spec = FeatureSpec("rbf", SIGMA, 2, 1.0, X.shape[1], 256, 0, np.float32)
        n_blocks = 4
    W, second = spec.blocks(0, n_blocks)
    norm = spec.dtype.type(1.0 / np.sqrt(n_blocks))
    return spec, W, second, norm


def level(args):
    if args.set == "full":
        n = N_L + 1_000_000
        return n, None
    n = 10_000_000
    from weakkernels._dsg import seeded_sample

    idx = np.sort(seeded_sample(n - N_L, 1 << 20, 0, stream=1))
    return n, idx


def run_inproc(args, res):
    from weakkernels import _dsg

    Xall = np.load(PATH, mmap_mode="r")
    n, idx = level(args)
    X = Xall[:n]
    spec, W, second, norm = build_spec(X, args.features, n)
    index = np.arange(N_L, n)
    problem = _dsg.Problem([(X[:N_L], None), (X, index)], 1, None,
                           pointwise=probe_lib.pointwise)
    probe_lib.install("inproc")
    ps = _dsg._PrimalSet(problem, 1, idx, spec, W, second, norm, False, None)
    probe_lib.N_U = ps.m
    val, reps = timed_passes(ps, W.shape[-1], args, probe_lib.snapshot)
    out = [{"wall_s": wall, "client": diff(a, b)} for wall, a, b in reps]
    res.update(m=ps.m, value=float(val[0]), back_sum=float(val[1].sum()),
               repeats=out, _val=val)


def timed_passes(ps, n_features, args, measure):
    """A warm-up evaluation (numba, the workers' frequencies and selections,
    first faults), then ``args.repeats`` times ``args.evals`` fused
    evaluations at one seeded ``v``, ``measure()`` before and after each
    repeat. Returns the last evaluation and ``(wall s, before, after)`` per
    repeat."""
    from weakkernels import _dsg
    from weakkernels._threads import one_blas_thread

    rng = np.random.default_rng(0)
    v32 = (rng.standard_normal((n_features, 1)) * 0.01).astype(np.float32)
    shift = np.zeros(1)
    fn = _dsg.RowLoss(probe_lib.pointwise, 1, ps.m, 1.0)
    reps = []
    with one_blas_thread():
        ps.fused(v32, shift, fn)
        for _ in range(args.repeats):
            before = measure()
            t0 = time.perf_counter()
            for _ in range(args.evals):
                val = ps.fused(v32, shift, fn)
            wall = time.perf_counter() - t0
            reps.append((wall, before, measure()))
    return val, reps


def diff(s0, s1):
    parts = {}
    for k, v in s1[3].items():
        a = s0[3].get(k, [0, 0.0, 0, 0])
        parts[k] = {"calls": v[0] - a[0], "cpu_s": v[1] - a[1],
                    "minflt": v[2] - a[2], "majflt": v[3] - a[3]}
    return {"cpu_s": s1[0] - s0[0], "minflt": s1[1] - s0[1],
            "majflt": s1[2] - s0[2], "parts": parts}


def run_dask(args, res):
    import dask
    import dask.array as da
    from distributed import Client, LocalCluster

    from weakkernels._dask import DaskRows

    Xall = np.load(PATH, mmap_mode="r")
    n, idx = level(args)
    X = Xall[:n]
    spec, W, second, norm = build_spec(X, args.features, n)
    cuts = [*range(0, n, args.chunk_rows), n]
    name = "probe-rows-" + dask.base.tokenize(PATH, n, args.chunk_rows)
    graph = {(name, i, 0): (probe_lib.open_chunk, PATH, r0, r1)
             for i, (r0, r1) in enumerate(zip(cuts[:-1], cuts[1:], strict=True))}
    Xd = da.Array(graph, name, chunks=(tuple(np.diff(cuts)), (X.shape[1],)),
                  meta=np.empty((0, 0), dtype=X.dtype))
    config = {"distributed.worker.memory.target": False,
              "distributed.worker.memory.spill": False,
              "distributed.worker.memory.pause": False,
              "distributed.scheduler.work-stealing": False}
    if args.trim == "unset":
        env = dict(dask.config.get("distributed.nanny.pre-spawn-environ"))
        env.pop("MALLOC_TRIM_THRESHOLD_", None)
        config["distributed.nanny.pre-spawn-environ"] = env
    with dask.config.set(config), \
            LocalCluster(n_workers=args.workers, threads_per_worker=1, processes=True,
                         memory_limit="1GB", dashboard_address=None) as cluster, \
            Client(cluster) as client:
        res["worker_env_MALLOC_TRIM_THRESHOLD_"] = client.run(
            probe_lib.env_of, "MALLOC_TRIM_THRESHOLD_")
        client.run(probe_lib.install, "dask")
        rows = DaskRows.persist(Xd, client)
        index = np.arange(N_L, n)
        ps = rows.primal_set(index, idx, spec, W, second, norm, hold=False)
        probe_lib.N_U = ps.m  # the loss's k: same on workers (module constant)
        client.run(_set_nu, ps.m)
        val, reps = timed_passes(
            ps, W.shape[-1], args,
            lambda: (probe_lib.snapshot(), client.run(probe_lib.snapshot)))
        out = [{"wall_s": wall, "client": diff(a[0], b[0]),
                "workers": {w: diff(a[1][w], b[1][w]) for w in sorted(b[1])}}
               for wall, a, b in reps]
    res.update(m=ps.m, value=float(val[0]), back_sum=float(val[1].sum()),
               n_tasks=len(ps.parts), repeats=out, _val=val)


def _set_nu(m):
    probe_lib.N_U = m


def summarize(res, evals):
    """Median over repeats, per evaluation, per 10^6 rows."""
    scale = 1e6 / res["m"] / evals
    reps = res["repeats"]

    def med(xs):
        return float(np.median(xs))

    s = {"client_cpu": med([r["client"]["cpu_s"] for r in reps]) * scale,
         "client_minflt": med([r["client"]["minflt"] for r in reps]) * scale,
         "wall": med([r["wall_s"] for r in reps]) * scale}
    if "workers" in reps[0]:
        s["workers_cpu"] = med([sum(w["cpu_s"] for w in r["workers"].values())
                                for r in reps]) * scale
        s["workers_minflt"] = med([sum(w["minflt"] for w in r["workers"].values())
                                   for r in reps]) * scale
        parts_src = [{k: sum_parts(r["workers"], k) for k in
                      next(iter(r["workers"].values()))["parts"]} for r in reps]
    else:
        parts_src = [{k: v for k, v in r["client"]["parts"].items()} for r in reps]
    s["parts"] = {k: {"cpu_s": med([p[k]["cpu_s"] for p in parts_src]) * scale,
                      "minflt": med([p[k]["minflt"] for p in parts_src]) * scale,
                      "calls": med([p[k]["calls"] for p in parts_src]) * scale}
                  for k in parts_src[0]}
    return s


def sum_parts(workers, k):
    out = {"cpu_s": 0.0, "minflt": 0, "calls": 0}
    for w in workers.values():
        p = w["parts"].get(k)
        if p:
            for f in out:
                out[f] += p[f]
    return out


def main():
    global PATH, SIGMA
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--mode", choices=["inproc", "dask"], required=True)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--set", choices=["full", "sample"], default="full")
    ap.add_argument("--evals", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--features", choices=["nystroem", "fourier"], default="nystroem")
    ap.add_argument("--chunk-rows", type=int, default=1 << 18)
    ap.add_argument("--trim", choices=["keep", "unset"], default="keep")
    ap.add_argument("--data-dir", default="data/synthetic/synthetic_hepmass")
    ap.add_argument("--results", default=None,
                    help="a JSON file: this run's record goes in it under --key")
    ap.add_argument("--key", default=None)
    args = ap.parse_args()
    PATH = str(Path(args.data_dir) / "X.npy")
    SIGMA = json.loads((Path(args.data_dir) / "meta.json").read_text())["teacher_sigma"]
    res = {"args": {k: v for k, v in vars(args).items()
                    if k not in ("data_dir", "results")},
           "synthetic": True, "load_before": os.getloadavg()[0],
           "env_MALLOC_TRIM_THRESHOLD_": os.environ.get("MALLOC_TRIM_THRESHOLD_")}
    (run_inproc if args.mode == "inproc" else run_dask)(args, res)
    res["load_after"] = os.getloadavg()[0]
    v = res.pop("_val")  # the last evaluation's loss and gradient: bit checks
    res["last_evaluation"] = {"value": float(v[0]), "grad_sum": float(v[1].sum()),
                              "g_sum": float(np.sum(v[2]))}
    s = res["summary_per_eval_per_1e6_rows"] = summarize(res, args.evals)
    s["total_cpu"] = s["client_cpu"] + s.get("workers_cpu", 0.0)
    s["total_minflt"] = s["client_minflt"] + s.get("workers_minflt", 0.0)
    if args.results:
        path = Path(args.results)
        out = json.loads(path.read_text()) if path.exists() else {"synthetic": True}
        out[args.key or f"{args.mode}{args.workers}"] = res
        path.write_text(json.dumps(out, indent=1) + "\n")
    print(json.dumps({"args": res["args"], "m": res["m"],
                      "last_evaluation": res["last_evaluation"],
                      "load": [res["load_before"], res["load_after"]],
                      "summary": s}, indent=1))


if __name__ == "__main__":
    main()
