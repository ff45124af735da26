"""Optuna tuning throughput: one worker vs two workers on one PostgreSQL study.

A throw-away PostgreSQL server runs on loopback (``scale_servers.postgres_server``).
For each worker count ``w`` a fresh study of ``--n-trials`` trials is run by ``w``
worker processes, each executing the tune stage's ``tune()`` function
(``pipelines/tune.py``) on the same storage URL -- the path ``dvc repro tune``
takes with ``WK_OPTUNA_STORAGE`` set.  Trials fit TSGS3VM (the fixed settings of
``params.yaml``: batch 256, 128 iterations) on a split of the **synthetic** SUSY-
shaped set (``--n-unlabeled`` unlabeled rows), so each trial is CPU-bound; each
worker runs its kernels on ``--numba-threads`` threads (default 1: one worker is
one core, as on a cluster of single-core workers).

Reported per worker count: trials per minute over the study's own clock (first
trial start to last trial end, from the storage) and over the wall clock of the
whole run (including the workers' start-up: imports, numba compilation).

Usage::

    python benchmarks/scale_tune_workers.py --n-trials 24
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

import numpy as np

from weakkernels.pipeline.splits import ssl_split
from weakkernels.pipeline.storage import save_npz
from weakkernels.pipeline.synthetic import SYNTHETIC, synthetic_rows

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "benchmarks"))

from scale_servers import postgres_server  # noqa: E402

WORKER = textwrap.dedent("""
    import json
    from weakkernels.pipeline.search import tune
    cfg = json.loads({cfg!r})
    tune([("tsgs3vm", "synth")], {prep!r}, {splits!r}, cfg,
         {{"fixed": {{"tsgs3vm": {{"batch_size": 256, "max_iter": 128}}}}}},
         root={root!r}, log_mlflow=False)
""")


def make_data(tmp: Path, n_unlabeled: int) -> None:
    spec = SYNTHETIC["synthetic_susy"]
    n = n_unlabeled + 2000
    X, y = synthetic_rows(spec, 0, n)
    save_npz(tmp / "prep" / "synth.npz", X=X.astype(np.float64),
             y=y.astype(np.int64), classes=np.array([0.0, 1.0]))
    sp = ssl_split(y.astype(np.int64), n_labeled=200, n_unlabeled=[n_unlabeled],
                   n_val=500, n_test=1000, seed=0)
    save_npz(tmp / "splits" / "synth" / "ssl_seed0.npz", **sp)


def run(pg, tmp: Path, workers: int, n_trials: int, threads: int) -> dict:
    import optuna
    from optuna.trial import TrialState

    url = pg.create_database(f"bench_w{workers}")
    cfg = {"n_trials": n_trials, "n_startup_trials": 8, "sampler_seed": 3,
           "split_seed": 0, "callback_every": 16, "storage": url,
           "pruner": {"n_startup_trials": 1000}}  # no pruning: equal work/trial
    code = WORKER.format(pipelines=str(ROOT / "pipelines"), cfg=json.dumps(cfg),
                         prep=str(tmp / "prep"), splits=str(tmp / "splits"),
                         root=str(tmp))
    env = {**os.environ, **pg.env(), "MLFLOW_DISABLE_TELEMETRY": "true",
           "NUMBA_NUM_THREADS": str(threads)}
    env.pop("WK_OPTUNA_STORAGE", None)
    t0 = time.perf_counter()
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              text=True) for _ in range(workers)]
    try:
        for p in procs:
            _, err = p.communicate(timeout=3600)
            if p.returncode:
                raise RuntimeError(err[-3000:])
    finally:
        for p in procs:
            if p.poll() is None:
                p.kill()
                p.wait()
    wall = time.perf_counter() - t0
    os.environ.update(pg.env())
    (summary,) = optuna.get_all_study_summaries(storage=url)
    trials = optuna.load_study(study_name=summary.study_name,
                               storage=url).get_trials(deepcopy=False)
    done = [t for t in trials if t.state in (TrialState.COMPLETE, TrialState.PRUNED)]
    span = (max(t.datetime_complete for t in done)
            - min(t.datetime_start for t in done)).total_seconds()
    return dict(workers=workers, n_finished=len(done), n_trials=n_trials,
                n_surplus=sum(bool(t.user_attrs.get("surplus")) for t in trials),
                study_span_s=span, wall_s=wall,
                trials_per_min_study=60 * len(done) / span,
                trials_per_min_wall=60 * len(done) / wall,
                median_trial_s=float(np.median(
                    [(t.datetime_complete - t.datetime_start).total_seconds()
                     for t in done])),
                load_avg_1min=os.getloadavg()[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n-trials", type=int, default=24)
    ap.add_argument("--n-unlabeled", type=int, default=20000)
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--numba-threads", type=int, default=1,
                    help="per worker (1: one worker = one core)")
    ap.add_argument("--out", default="benchmarks/results/scale_tune_workers.json")
    args = ap.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="wk-tune-bench-") as tmp, \
            postgres_server() as pg:
        make_data(Path(tmp), args.n_unlabeled)
        for w in map(int, args.workers.split(",")):
            rows.append(run(pg, Path(tmp), w, args.n_trials, args.numba_threads))
            print(json.dumps(rows[-1]), flush=True)
    meta = dict(n_cpus=os.cpu_count(), numba_threads_per_worker=args.numba_threads,
                machine=platform.platform(),
                shared_machine=True, storage="PostgreSQL 15 on 127.0.0.1",
                command="python benchmarks/scale_tune_workers.py "
                + " ".join(argv if argv is not None else sys.argv[1:]))
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(dict(meta=meta, rows=rows), indent=2) + "\n")
    print("| workers | finished trials | trials/min (study clock) | "
          "trials/min (wall, incl. start-up) | median trial | load avg |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['workers']} | {r['n_finished']} (+{r['n_surplus']} surplus) | "
              f"{r['trials_per_min_study']:.1f} | {r['trials_per_min_wall']:.1f} | "
              f"{r['median_trial_s']:.2f} s | {r['load_avg_1min']:.1f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
