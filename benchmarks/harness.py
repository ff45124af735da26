"""Benchmark harness: our solvers beside their peers on the papers'
protocols, every method x dataset x n_u x seed in its own budgeted subprocess.

A *protocol* is a named YAML file in ``benchmarks/protocols/`` (see
``g50c_like.yaml`` for the annotated format): data sets, split sizes, seeds,
the kernel width rule, the methods with their parameters and their per-method
budget (wall seconds and resident memory), reference figures measured elsewhere
and the targets to check.  For every cell the harness

1. builds the split in this process (seeded; features scaled with statistics of
   the training points only) and writes it to a temporary ``.npz``;
2. runs ``benchmarks/peers/worker.py`` on it in a fresh subprocess -- with our
   interpreter, or with a peer's own venv (``benchmarks/peers/setup_peer_venv.sh``
   creates it on demand) -- under the method's time budget (the process is
   killed at the deadline) and RSS cap (resident memory of the process tree,
   polled every 50 ms; killed when over), with BLAS/OpenMP/numba limited to one
   thread so that every method gets the same single core;
3. records the worker's measurements (test error or AUC, fit / predict /
   compile seconds, peak RSS, model bytes, validation curve) or the budget that
   stopped it -- a method out of budget stays in the table.

A method that exceeds its budget on a data set is not run again on that data
set's later seeds or larger n_u (recorded as ``skipped (... budget at n_u=...,
seed ...)``), so a budget costs its wall time once.

Results go to MLflow (experiment ``benchmark-<protocol>``: a parent run, one
nested run per cell with its curve logged with ``step=n_iter``; the store of
:mod:`weakkernels.pipeline.tracking`), to ``benchmarks/results/harness/
<protocol>.json`` and to a markdown table (``.md``) with hardware, command,
references and targets; scaling protocols also write a log-log PNG.

Usage::

    .venv/bin/python benchmarks/harness.py --suite quick  # = make bench
    .venv/bin/python benchmarks/harness.py --protocol g50c_like
    .venv/bin/python benchmarks/harness.py --all          # every protocol
    .venv/bin/python benchmarks/harness.py --list
    mlflow run . -e benchmark -P suite=quick --env-manager local

The documentation's benchmark pages (``docs/benchmarks/``) render each run
from its JSON (``benchmarks/pages.py``'s renderers, ``make docs``).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import yaml

import pages

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
PROTOCOLS = HERE / "protocols"
RESULTS = HERE / "results" / "harness"
WORKER = HERE / "peers" / "worker.py"
PEER_VENVS = HERE / ".peer-venvs"
SETUP = HERE / "peers" / "setup_peer_venv.sh"
# the data mirror beside the clone (../shared/data/raw), or $WEAKKERNELS_DATA
DATA = Path(os.environ.get("WEAKKERNELS_DATA",
                           Path(__file__).resolve().parents[2] / "shared/data/raw"))

ONE_THREAD = {
    "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    "NUMBA_NUM_THREADS": "1", "VECLIB_MAXIMUM_THREADS": "1",
}
ERROR_KEY = {"ssl": "test_error", "su": "test_error", "auc": "test_auc"}


# ------------------------------------------------------------------ protocols
def protocol_path(name: str) -> Path:
    p = Path(name)
    return p if p.suffix in (".yaml", ".yml") and p.exists() else PROTOCOLS / (
        name + ".yaml")


def load_protocol(name: str) -> dict:
    with open(protocol_path(name)) as fh:
        proto = yaml.safe_load(fh)
    proto.setdefault("name", Path(name).stem)
    proto.setdefault("seeds", [0, 1, 2])
    proto.setdefault("budget", {"time_s": 300, "rss_mb": 4000})
    proto.setdefault("scale", "standard")
    proto.setdefault("n_val", 1000)
    names = {m["name"] for m in proto.get("methods", [])}
    unknown = set(proto.get("paired_with", ())) - names
    if unknown:
        raise ValueError(f"{name}: paired_with names unknown methods {sorted(unknown)}")
    for t in proto.get("targets", []):
        unknown = {t["ours"], *t["against"]} - names
        if unknown:
            raise ValueError(f"{name}: target {t['text']!r} names unknown "
                             f"methods {sorted(unknown)}")
    return proto


def list_protocols() -> list[str]:
    return sorted(p.stem for p in PROTOCOLS.glob("*.yaml") if p.stem != "tiny")


# ----------------------------------------------------------------------- data
def gaussians(n: int, d: int, bayes_error: float, seed: int):
    """Two ``d``-dim unit-covariance Gaussians with the given Bayes error.

    Means ``+-mu (1, ..., 1)/sqrt(d)`` with ``Phi(-mu) = bayes_error`` (g50c's
    construction, Chapelle & Zien 2005); balanced classes, labels 0/1.
    """
    from scipy.stats import norm

    rng = np.random.default_rng(seed)
    mu = -norm.ppf(bayes_error)
    y = rng.integers(0, 2, size=n)
    X = rng.normal(size=(n, d)) + np.outer(2 * y - 1, np.full(d, mu / math.sqrt(d)))
    return X, y


def load_data(spec: dict, seed: int):
    """``(X, y01, splits)`` of a data set spec (registry name or synthetic):
    ``splits`` the set's official ``(labeled, unlabeled)`` index lists where
    the spec asks for them (``official_splits``), else None."""
    if spec.get("synthetic") == "gaussians":
        n = spec["n"]
        # the data themselves depend on the seed: every seed is a new sample
        return (*gaussians(n, spec["d"], spec["bayes_error"], 10_000 + seed), None)
    from weakkernels.pipeline.datasets import load_raw

    raw = load_raw(spec["registry"], DATA, **spec.get("options", {}))
    X = np.asarray(raw.X, dtype=np.float64)
    y_raw = np.asarray(raw.y)
    pos = spec.get("positive", "max")
    if pos == "multiclass":  # class indices 0..K-1
        y = np.searchsorted(np.unique(y_raw), y_raw).astype(np.int64)
    else:
        y = (y_raw == (y_raw.max() if pos == "max" else pos)).astype(np.int64)
    splits = ((raw.split_labeled, raw.split_unlabeled)
              if spec.get("official_splits") else None)
    return X, y, splits


_DATA_CACHE: dict = {}


def cached_data(spec: dict, seed: int):
    """:func:`load_data`, the last set kept in memory (the key is the spec's
    content: a copy of the spec finds it too)."""
    key = json.dumps(spec, sort_keys=True) + (
        f"#{seed}" if spec.get("synthetic") else "")
    if key not in _DATA_CACHE:
        _DATA_CACHE.clear()  # one data set in memory at a time
        _DATA_CACHE[key] = load_data(spec, seed)
    return _DATA_CACHE[key]


def _scale(Xtr, *others, how: str):
    if how == "none":
        return (Xtr, *others)
    if how == "minmax":  # paper 003: features in [0, 1]
        lo, hi = Xtr.min(axis=0), Xtr.max(axis=0)
        rng = np.where(hi > lo, hi - lo, 1.0)
        return tuple((A - lo) / rng for A in (Xtr, *others))
    mu, sd = Xtr.mean(axis=0), Xtr.std(axis=0)
    sd[sd == 0] = 1.0
    return tuple((A - mu) / sd for A in (Xtr, *others))


def make_split(proto: dict, ds: dict, n_u: int | None, seed: int):
    """Arrays of one cell and split facts.

    ``ssl`` / ``auc``: ``n_labeled`` labeled points (at least one per class),
    ``n_u`` unlabeled (None: the rest), ``n_test`` test and ``n_val`` validation
    points, disjoint, drawn at random with ``seed``.  ``su``: the pipeline's SU
    split builder (one class positive, ``n_pairs`` similar pairs by the class
    prior, ``n_u`` unlabeled, test = ``ceil(n_u / 3)``).
    """
    X, y, splits = cached_data(ds, seed)
    task = proto["task"]
    rng = np.random.default_rng(seed)
    n_val = int(proto.get("n_val", 1000))
    if task == "su":
        from weakkernels.pipeline.splits import fit_arrays, resolve, su_split

        split = resolve(su_split(y, positive=1, n_pairs=proto["n_pairs"],
                                 n_unlabeled=[n_u], n_val=n_val, seed=seed), n_u)
        Xf, yf = fit_arrays(X, y, split)
        test, val = np.asarray(split["test"]), np.asarray(split["val"])
        Xf, Xt, Xv = _scale(Xf, X[test], X[val], how=proto["scale"])
        info = {"prior": float(split["prior"]), "n_pairs": int((yf == 1).sum() // 2),
                "n_unlabeled": int((yf == -1).sum()), "n_test": int(test.size)}
        return dict(X_train=Xf, y_train=yf, X_test=Xt, y_test=y[test], X_val=Xv,
                    y_val=y[val]), info
    if ds.get("official_splits"):
        # Chapelle's benchmark splits: split number = seed; the test error is
        # measured on the unlabeled points (transduction, paper 004 Sec. 1.6.1).
        L, U = splits
        lab, unl = L[seed], U[seed]
        val = rng.choice(unl, size=min(n_val, unl.size), replace=False)
        test = unl
    else:
        lab, unl, test, val = _random_ssl_split(proto, ds, y, n_u, n_val, rng)
    idx = np.concatenate([lab, unl])
    yt = np.full(idx.size, -1)
    yt[: lab.size] = y[lab]
    Xtr, Xt, Xv = _scale(X[idx], X[test], X[val], how=proto["scale"])
    info = {"n_labeled": int(lab.size), "n_unlabeled": int(unl.size),
            "n_test": int(test.size), "prior": float(y[lab].mean())}
    return dict(X_train=Xtr, y_train=yt, X_test=Xt, y_test=y[test], X_val=Xv,
                y_val=y[val]), info


def _random_ssl_split(proto, ds, y, n_u, n_val, rng):
    """Disjoint ``(labeled, unlabeled, test, val)`` indices drawn with ``rng``:
    ``n_labeled`` labeled points, the first one of each class first."""
    perm = rng.permutation(y.size)
    n_test = ds.get("n_test", proto.get("n_test"))
    if isinstance(n_test, float):
        n_test = int(n_test * y.size)
    n_test = int(min(n_test, y.size // 3))
    test, val, pool = perm[:n_test], perm[n_test:n_test + n_val], perm[
        n_test + n_val:]
    n_l = int(ds.get("n_labeled", proto["n_labeled"]))  # a set may set its own
    lab = np.concatenate([pool[y[pool] == c][:1] for c in (0, 1)])
    lab = np.concatenate([lab, np.setdiff1d(pool, lab, assume_unique=True)[
        : n_l - lab.size]])
    rest = np.setdiff1d(pool, lab, assume_unique=True)
    rest = rng.permutation(rest)
    unl = rest if n_u is None else rest[:n_u]
    if n_u is not None and unl.size < n_u:
        raise ValueError(f"{ds['name']}: only {unl.size} unlabeled points for "
                         f"n_u={n_u}")
    return lab, unl, test, val


def kernel_width(rule, X) -> float:
    """``sigma`` of ``exp(-sigma ||x - x'||^2)``: a number, ``"median"`` (1 /
    median squared distance, the CCCP benchmarks' rule), ``"scale"`` (1 / (d
    Var X) over the training rows: scikit-learn's ``gamma="scale"``, as the
    estimators resolve it) or ``"inv_dim"``."""
    if isinstance(rule, (int, float)):
        return float(rule)
    if rule == "scale":
        from weakkernels.kernels import resolve_sigma

        return resolve_sigma("scale", X)
    if rule == "inv_dim":
        return 1.0 / X.shape[1]
    if rule == "median":
        return median_sigma(X)
    raise ValueError(f"unknown kernel width rule {rule!r}")


def median_sigma(X, n_sample: int = 1000, seed: int = 0) -> float:
    """``1 / median ||x - x'||^2`` over a seeded sample of the rows' pairs."""
    rng = np.random.default_rng(seed)
    idx = rng.choice(X.shape[0], size=min(n_sample, X.shape[0]), replace=False)
    Z = X[idx]
    sq = np.sum(Z * Z, axis=1)
    d2 = sq[:, None] + sq[None, :] - 2 * Z @ Z.T
    return float(1.0 / np.median(d2[np.triu_indices(len(idx), 1)]))


def resolve_params(params: dict, ctx: dict) -> dict:
    """Substitute the ``"$name"`` values of :func:`context`."""
    out = {}
    for k, v in params.items():
        if isinstance(v, str) and v.startswith("$"):
            v = ctx[v[1:]]
        out[k] = v
    return out


def context(proto: dict, info: dict, n_train: int, sigma: float) -> dict:
    """Values a protocol's parameters may name as ``"$name"``.

    Every C here is on the *sum* of the losses (scikit-learn ``SVC``'s ``C``;
    ``TSGS3VM``/``FRS3VM``/``CCCPTSVM`` use the same convention):

    * ``C``: the protocol's ``C``; ``sigma``: its kernel width rule's value;
      ``prior``: the labeled positive fraction (SU: the class prior);
    * ``sqrt_n``: ``ceil(sqrt(n))`` of the training set (labeled + unlabeled),
      paper 000 Sec. 6's number of random features;
    * ``cstar_LU`` = ``C n_l / n_u``: ``U C* = L C``, paper 004's heuristic
      (Sec. 1.6.1.1): the unlabeled sum weighs as much as the labeled sum;
    * ``cstar_eq1`` = ``C n_l^2 / n_u^2``: paper 000 Sec. 6's ``C* = C n_l /
      n_u`` read in its Eq. (1), where ``C`` weighs the labeled *mean* and
      ``C*`` the unlabeled *mean* (expectation): with ``C_paper = C n_l``,
      ``C*_paper = C_paper n_l / n_u`` is ``C*_paper / n_u`` on the sum.
    """
    C = float(proto.get("C", 1.0))
    ctx = {"C": C, "sigma": sigma, "prior": info["prior"],
           "sqrt_n": int(math.ceil(math.sqrt(n_train)))}
    if "n_labeled" in info:
        n_l, n_u = info["n_labeled"], max(1, info["n_unlabeled"])
        ctx["cstar_LU"] = C * n_l / n_u
        ctx["cstar_eq1"] = C * n_l**2 / n_u**2
    return ctx


# -------------------------------------------------------------------- running
def peer_python(venv: str) -> tuple[str | None, str]:
    """Interpreter of a peer venv, created on demand; ``(None, why)`` on failure."""
    if venv == "main":
        return sys.executable, ""
    py = PEER_VENVS / venv / "bin" / "python"
    if not (PEER_VENVS / venv / ".ok").exists():
        r = subprocess.run(["sh", str(SETUP), venv], capture_output=True, text=True)
        if r.returncode != 0 or not (PEER_VENVS / venv / ".ok").exists():
            log = PEER_VENVS / f"{venv}.log"
            tail = log.read_text().strip().splitlines()[-3:] if log.exists() else []
            return None, "not installable: " + " | ".join(tail)[:300]
    return str(py), ""


def run_budgeted(cmd: list[str], env: dict, time_s: float, rss_mb: float):
    """Run ``cmd``; kill it at ``time_s`` seconds or when the resident memory of
    its process tree exceeds ``rss_mb``.  Returns ``(status, wall, peak_mb,
    stderr tail)``; status is ``"done"``, ``"time budget"`` or ``"memory
    budget"``."""
    import psutil

    t0 = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL,
                                stderr=err)
        ps = psutil.Process(proc.pid)
        peak, status = 0.0, "done"
        while proc.poll() is None:
            try:
                rss = ps.memory_info().rss + sum(
                    c.memory_info().rss for c in ps.children(recursive=True))
            except psutil.Error:
                rss = 0
            peak = max(peak, rss / 2**20)
            if peak > rss_mb:
                status = "memory budget"
            elif time.perf_counter() - t0 > time_s:
                status = "time budget"
            if status != "done":
                for c in ps.children(recursive=True):
                    c.kill()
                proc.kill()
                proc.wait()
                break
            time.sleep(0.05)
        err.seek(0)
        tail = err.read().decode(errors="replace").strip().splitlines()[-3:]
    if status == "done" and proc.returncode:
        tail = [f"exit code {proc.returncode}"] + tail[-1:]
    return status, time.perf_counter() - t0, peak, " | ".join(tail)[:400]


def cell_jobs(proto, ds, n_u, seed, methods, skip) -> list[tuple[dict, dict | None]]:
    """The rows of one cell (data set x n_u x seed) and, for each method to
    run, its job: the split (built here: seeded, scaled on the training
    points), the worker's job description, the interpreter and the budget."""
    arrays, info = make_split(proto, ds, n_u, seed)
    Xtr = arrays["X_train"]
    ctx = context(proto, info, Xtr.shape[0],
                  kernel_width(proto.get("sigma", "median"), Xtr))
    out = []
    for m in methods:
        row = {"protocol": proto["name"], "dataset": ds["name"], "seed": seed,
               "method": m["name"], "impl": m["method"],
               "n_unlabeled": info["n_unlabeled"], **{
                   k: v for k, v in info.items() if k != "n_unlabeled"}}
        budget = {**proto["budget"], **m.get("budget", {})}
        row["budget_time_s"], row["budget_rss_mb"] = (
            budget["time_s"], budget["rss_mb"])
        limit = m.get("max_n_unlabeled")
        job = None
        if limit is not None and info["n_unlabeled"] > limit:
            row["status"] = f"not run (n_u > {limit}: {m.get('why', 'budget')})"
        elif m["name"] in skip:
            row["status"] = skip[m["name"]]
        else:
            params = resolve_params(m.get("params", {}), ctx)
            row["params"] = params
            py, why = peer_python(m.get("venv", "main"))
            if py is None:
                row["status"] = why
            else:
                job = {"arrays": arrays, "python": py, "budget": budget,
                       "job": {"method": m["method"], "seed": seed,
                               "params": params, "task": proto["task"],
                               "callback_every": m.get("callback_every")}}
        out.append((row, job))
    return out


def run_job(job: dict) -> dict:
    """One method on one split in its budgeted subprocess
    (``benchmarks/peers/worker.py``), in a temporary folder of its own: here,
    or as a task on a Dask worker (which must see this checkout's path)."""
    with tempfile.TemporaryDirectory(prefix="wk-bench-") as tmp:
        data, out = Path(tmp) / "split.npz", Path(tmp) / "method.json"
        np.savez(data, **job["arrays"])
        jf = Path(tmp) / "method.job.json"
        jf.write_text(json.dumps({**job["job"], "data": str(data), "out": str(out)}))
        env = {**os.environ, **ONE_THREAD, "PYTHONPATH": str(HERE / "peers")}
        env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))
        status, wall, peak, tail = run_budgeted(
            [job["python"], str(WORKER), str(jf)], env, job["budget"]["time_s"],
            job["budget"]["rss_mb"])
        res = {"wall_s": wall, "polled_peak_rss_mb": peak,
               # the estimators may change while a long run goes on
               "finished_utc": _now(), "src_sha": _src_sha()}
        if status != "done":
            res["status"] = status
        elif out.exists():
            res.update(json.loads(out.read_text()))
        else:
            res["status"] = "crashed"
            res["error"] = tail
    return res


def run_cell(proto, ds, n_u, seed, methods, skip, log) -> list[dict]:
    """One cell, its methods one after the other in this process."""
    rows = []
    for row, job in cell_jobs(proto, ds, n_u, seed, methods, skip):
        if job is not None:
            row.update(run_job(job))
        rows.append(row)
        log(_row_line(row, proto["task"]))
    return rows


def _row_line(r, task):
    key = ERROR_KEY[task]
    if r.get("status") == "ok":
        return (f"  {r['dataset']} n_u={r['n_unlabeled']} seed={r['seed']} "
                f"{r['method']}: {key}={r[key]:.4f} fit={r['fit_s']:.2f}s "
                f"rss={r['peak_rss_mb']:.0f}MB")
    return (f"  {r['dataset']} n_u={r['n_unlabeled']} seed={r['seed']} "
            f"{r['method']}: {r.get('status')} {r.get('error', '')}")


def run_protocol(proto: dict, log=print, methods_filter=None,
                 datasets_filter=None, n_unlabeled=None, pool=None) -> list[dict]:
    """Every cell of the protocol. With a Dask ``pool``
    (:class:`weakkernels.pipeline.fitting.FitPool`) the jobs of one data set
    x n_u (every seed and method) run as tasks at once; the rows are the
    local run's, in its order (a method out of budget on one seed is
    recorded as skipped on the later ones, its task's result dropped)."""
    methods = [m for m in proto["methods"]
               if not methods_filter or m["name"] in methods_filter]
    rows = []
    for ds in proto["datasets"]:
        if datasets_filter and ds["name"] not in datasets_filter:
            continue
        skip: dict[str, str] = {}
        sizes = ds.get("n_unlabeled", proto.get("n_unlabeled", [None]))
        for n_u in sizes if n_unlabeled is None else n_unlabeled:
            if pool is None or pool.client is None:
                cells = ((seed, run_cell(proto, ds, n_u, seed, methods, skip, log))
                         for seed in ds.get("seeds", proto["seeds"]))
            else:
                cells = _run_wave(proto, ds, n_u, methods, skip, log, pool)
            for _, cell in cells:
                rows += cell
                # Out of budget once: not run again on later seeds or larger n_u
                # of this data set (recorded as skipped, with the reason).
                for r in cell:
                    if r.get("status") in ("time budget", "memory budget"):
                        skip[r["method"]] = (f"skipped ({r['status']} at "
                                             f"n_u={r['n_unlabeled']}, seed "
                                             f"{r['seed']})")
    return rows


def _run_wave(proto, ds, n_u, methods, skip, log, pool):
    """The cells of every seed at one n_u, their jobs submitted to ``pool``
    first, then read in the local order (yields ``(seed, rows)``)."""
    if __name__ != "__main__":  # the workers cannot import this script
        import cloudpickle

        cloudpickle.register_pickle_by_value(sys.modules[__name__])
    waves = [(seed, cell_jobs(proto, ds, n_u, seed, methods, skip))
             for seed in ds.get("seeds", proto["seeds"])]
    for seed, jobs in waves:
        for row, job in jobs:
            if job is not None:
                pool.submit_call((seed, row["method"]), run_job, job)
    for seed, jobs in waves:
        rows = []
        for row, job in jobs:
            if job is not None:
                res = pool.result((seed, row["method"]))
                if row["method"] in skip:  # out of budget on an earlier seed
                    row.pop("params", None)
                    row["status"] = skip[row["method"]]
                else:
                    row.update(res)
            rows.append(row)
            log(_row_line(row, proto["task"]))
        yield seed, rows


# -------------------------------------------------------------------- summary
def _med(vals):
    vals = [v for v in vals if v is not None and np.isfinite(v)]
    return float(np.median(vals)) if vals else None


def _curve_free(r: dict) -> dict:
    """Fit time without the validation curve's evaluations.  Rows from workers
    that predate ``fit_s_incl_curve`` hold the curve time in ``fit_s`` and have
    ``fit_s_excl_curve``; their CPU time cannot be corrected and is dropped."""
    if r.get("curve") and "fit_s_excl_curve" in r and "fit_s_incl_curve" not in r:
        r = {**r, "fit_s": r["fit_s_excl_curve"], "fit_cpu_s": None}
    return r


def paired(rows: list[dict], key: str, reference: str) -> dict:
    """Per (dataset, n_u, method): the mean over seeds of the method's
    ``key`` minus the ``reference`` method's on the same seed (the same
    split), its standard error and the number of seeds both ran."""
    ref = {(r["dataset"], r["n_unlabeled"], r["seed"]): r[key] for r in rows
           if r["method"] == reference and r.get("status") == "ok"}
    diffs: dict = {}
    for r in rows:
        cell = (r["dataset"], r["n_unlabeled"], r["seed"])
        if r.get("status") == "ok" and cell in ref:
            diffs.setdefault(cell[:2] + (r["method"],), []).append(
                r[key] - ref[cell])
    out = {}
    for k, d in diffs.items():
        d = np.asarray(d, dtype=float)
        se = float(d.std(ddof=1) / np.sqrt(d.size)) if d.size > 1 else None
        out[k] = {"paired_diff": float(d.mean()), "paired_se": se,
                  "paired_n": int(d.size)}
    return out


def summarize(rows: list[dict], task: str, references=None) -> list[dict]:
    """Median over seeds per (dataset, n_u, method); statuses counted; with
    ``references`` (a protocol's ``paired_with``: method names) the paired
    mean difference to each (:func:`paired`), under ``paired``."""
    key = ERROR_KEY[task]
    groups: dict = {}
    for r in rows:
        groups.setdefault((r["dataset"], r["n_unlabeled"], r["method"]), []).append(r)
    pairs = {ref: paired(rows, key, ref) for ref in references or ()}
    out = []
    for (ds, n_u, m), rs in groups.items():
        ok = [_curve_free(r) for r in rs if r.get("status") == "ok"]
        s = {"dataset": ds, "n_unlabeled": n_u, "method": m, "n_ok": len(ok),
             "n_runs": len(rs),
             "statuses": sorted({r.get("status") for r in rs if
                                 r.get("status") != "ok"})}
        for k in (key, "fit_s", "fit_cpu_s", "predict_s", "compile_s",
                  "peak_rss_mb",
                  "model_bytes", "fit_s_excl_curve"):
            s[k] = _med([r.get(k) for r in ok])
        errs = [r[key] for r in ok]
        s[key + "_min"] = min(errs) if errs else None
        s[key + "_max"] = max(errs) if errs else None
        s[key + "_mean"] = float(np.mean(errs)) if errs else None
        if pairs:
            s["paired"] = {ref: p[(ds, n_u, m)] for ref, p in pairs.items()
                           if (ds, n_u, m) in p and ref != m}
        out.append(s)
    return out


def check_targets(proto, summary) -> list[dict]:
    """Each target: ``ours`` vs ``against`` (list; the best of them) at
    ``n_unlabeled`` on ``dataset``: metric gap (``max_gap``; error: ours - best,
    AUC: best - ours) and speed-up (``min_speedup`` on median fit time)."""
    task = proto["task"]
    key = ERROR_KEY[task]
    res = []
    for t in proto.get("targets", []):
        def pick(m, t=t):
            for s in summary:
                if (s["method"] == m and s["dataset"] == t["dataset"]
                        and (t.get("n_unlabeled") is None
                             or s["n_unlabeled"] == t["n_unlabeled"])
                        and s[key] is not None):
                    return s
            return None

        ours = pick(t["ours"])
        others = [s for s in (pick(a) for a in t["against"]) if s is not None]
        r = {"target": t["text"], "met": None, "detail": "not measured"}
        if ours is not None and others:
            best = (min if key == "test_error" else max)(others, key=lambda s: s[key])
            gap = ours[key] - best[key] if key == "test_error" else best[key] - ours[
                key]
            ok = gap <= t.get("max_gap", math.inf)
            det = f"{t['ours']} {key}={ours[key]:.4f} vs {best['method']} " \
                  f"{best[key]:.4f} (gap {gap:+.4f})"
            if "min_speedup" in t:
                # CPU seconds when both have them (the machine is shared)
                k = "fit_cpu_s" if ours["fit_cpu_s"] and best["fit_cpu_s"] else "fit_s"
                sp = best[k] / ours[k]
                ok = ok and sp >= t["min_speedup"]
                det += f"; speed-up {sp:.1f}x ({k} {ours[k]:.3g} vs {best[k]:.3g})"
            r.update(met=bool(ok), detail=det)
        elif ours is not None:
            ran = {s["method"] for s in summary}
            r["detail"] = ("peer did not finish within its budget: "
                           if ran & set(t["against"]) else "peer not in this run: "
                           ) + ", ".join(t["against"])
        res.append(r)
    return res


def hardware() -> str:
    import psutil

    cpu = platform.processor() or platform.machine()
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return (f"{cpu}, {os.cpu_count()} cores, "
            f"{psutil.virtual_memory().total / 2**30:.0f} GB RAM, Python "
            f"{platform.python_version()}, {platform.system()}; machine shared with "
            "other developers (load average at the end of this run: "
            f"{os.getloadavg()[0]:.1f}; wall times noisy, see the CPU column); "
            "every method single-threaded")


def _src_sha() -> str:
    """Hash of the package sources the worker imported (``src/weakkernels``)."""
    import hashlib

    h = hashlib.sha256()
    for f in sorted((ROOT / "src" / "weakkernels").rglob("*.py")):
        h.update(f.read_bytes())
    return h.hexdigest()[:12]


def _now() -> str:
    return f"{_dt.datetime.now(_dt.UTC):%Y-%m-%d %H:%M}"


def _fmt(v, spec="{:.3g}"):
    return "-" if v is None else spec.format(v)


# the command-line options that select part of a protocol (a run's filters)
FILTERS = ("--datasets", "--n-unlabeled", "--seeds", "--methods")


def heading(name: str, command: str) -> str:
    """``### Protocol `name```, followed by the run's filters when the command
    has any: the same protocol run on other data sets, sizes, seeds or
    methods gets its own heading in the benchmark pages."""
    words, keep, picked = shlex.split(command), False, []
    for w in words:
        if w.startswith("--"):
            keep = w in FILTERS
        if keep:
            picked.append(shlex.quote(w))
    return f"### Protocol `{name}`" + (f", `{' '.join(picked)}`" if picked else "")


def markdown(proto, rows, summary, targets, command, hw=None, date=None) -> str:
    task = proto["task"]
    key = ERROR_KEY[task]
    label = "test AUC" if task == "auc" else "test error %"
    scale = 1.0 if task == "auc" else 100.0
    lines = [heading(proto["name"], command), "", proto.get("description", "")
             .strip(), "",
             f"Command: `{command}`  ", f"Hardware: {hw or hardware()}  ",
             f"Date: {date or _now()} UTC; seeds "
             f"{proto['seeds']}; medians over seeds (range in brackets); per-method "
             "budgets in the protocol file.", ""]
    for ds in dict.fromkeys(s["dataset"] for s in summary):
        for n_u in dict.fromkeys(s["n_unlabeled"] for s in summary
                                 if s["dataset"] == ds):
            lines += [f"**{ds}, n_u = {n_u}**", "",
                      f"| method | {label} | fit s | fit CPU s | predict s | "
                      "compile s | peak RSS MB | model KB | runs ok | status |",
                      "|---|---|---|---|---|---|---|---|---|---|"]
            for s in summary:
                if s["dataset"] != ds or s["n_unlabeled"] != n_u:
                    continue
                nd = 4 if task == "auc" else 2
                err = "-" if s[key] is None else (
                    f"{scale * s[key]:.{nd}f} [{scale * s[key + '_min']:.{nd}f}–"
                    f"{scale * s[key + '_max']:.{nd}f}]")
                kb = None if s["model_bytes"] is None else s["model_bytes"] / 1024
                lines.append(
                    f"| {s['method']} | {err} | {_fmt(s['fit_s'])} | "
                    f"{_fmt(s['fit_cpu_s'])} | "
                    f"{_fmt(s['predict_s'])} | {_fmt(s['compile_s'])} | "
                    f"{_fmt(s['peak_rss_mb'], '{:.0f}')} | {_fmt(kb, '{:.1f}')} | "
                    f"{s['n_ok']}/{s['n_runs']} | "
                    f"{'; '.join(s['statuses']) or 'ok'} |")
            lines.append("")
    if proto.get("paired_with"):
        lines += pages.paired_table(proto, summary)
    if proto.get("reference"):
        lines += ["Reference figures **measured elsewhere by the project lead, not "
                  "in this run** (other machine, other implementations):", ""]
        lines += [f"- {r}" for r in proto["reference"]]
        lines.append("")
    if targets:
        lines += ["| target | met? | measured |", "|---|---|---|"]
        for t in targets:
            lines.append(f"| {t['target']} | {pages.MET[t['met']]} | "
                         f"{t['detail']} |")
        lines.append("")
    return "\n".join(lines)


def scaling_plot(proto, summary, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    for m in dict.fromkeys(s["method"] for s in summary):
        # CPU seconds: on a shared machine the wall time mostly measures the
        # other jobs (the load changed several-fold during our runs)
        pts = sorted((s["n_unlabeled"], s["fit_cpu_s"], s["peak_rss_mb"])
                     for s in summary if s["method"] == m and s["fit_cpu_s"])
        if not pts:
            continue
        n, t, r = zip(*pts, strict=True)
        axes[0].loglog(n, t, "o-", label=m)
        axes[1].loglog(n, r, "o-", label=m)
    axes[0].set(xlabel="unlabeled points n_u", ylabel="fit CPU time (s, median)",
                title=f"{proto['name']}: time")
    axes[1].set(xlabel="unlabeled points n_u", ylabel="peak RSS of the process (MB)",
                title="memory")
    for a in axes:
        a.grid(True, which="both", alpha=0.3)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def curve_plot(proto, rows, path: Path) -> bool:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    with_curve = [r for r in rows if r.get("curve")]
    if not with_curve:
        return False
    fig, ax = plt.subplots(figsize=(6, 4))
    for r in with_curve:
        it, t, v = zip(*r["curve"], strict=True)
        ax.plot(t, v, label=f"{r['method']} {r['dataset']} n_u={r['n_unlabeled']} "
                f"s{r['seed']}", lw=1)
    ax.set(xlabel="fit wall time (s, curve evaluation excluded)",
           ylabel="validation AUC" if proto["task"] == "auc" else "validation error",
           title=proto["name"])
    ax.set_xscale("log")
    if len(with_curve) <= 12:
        ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return True


# -------------------------------------------------------------------- logging
def log_mlflow(proto, rows, summary, targets, files, command) -> str | None:
    import mlflow

    from weakkernels.pipeline.tracking import provenance_tags, setup_mlflow

    setup_mlflow(f"benchmark-{proto['name']}", ROOT)
    key = ERROR_KEY[proto["task"]]
    parent = os.environ.get("MLFLOW_RUN_ID")
    with mlflow.start_run(run_id=parent, run_name=None if parent else
                          f"harness-{proto['name']}") as run:
        mlflow.set_tags({**provenance_tags(ROOT, "benchmark_harness", proto),
                         "protocol": proto["name"], "command": command})
        for r in rows:
            name = f"{r['dataset']}-{r['n_unlabeled']}-{r['method']}-s{r['seed']}"
            with mlflow.start_run(run_name=name, nested=True):
                mlflow.set_tags({"status": r.get("status", ""), "method": r["method"],
                                 "dataset": r["dataset"],
                                 "error": str(r.get("error", ""))[:500]})
                mlflow.log_params({"seed": r["seed"], "n_unlabeled": r["n_unlabeled"],
                                   "impl": r["impl"],
                                   "budget_time_s": r["budget_time_s"],
                                   "budget_rss_mb": r["budget_rss_mb"],
                                   **{f"p.{k}": str(v)[:200] for k, v in
                                      (r.get("params") or {}).items()}})
                mets = {k: r[k] for k in (key, "fit_s", "fit_cpu_s", "predict_s",
                                          "compile_s",
                                          "peak_rss_mb", "model_bytes",
                                          "fit_s_excl_curve", "fit_s_incl_curve",
                                          "curve_cpu_s", "wall_s",
                                          "polled_peak_rss_mb")
                        if isinstance(r.get(k), (int, float))}
                if mets:
                    mlflow.log_metrics(mets)
                for it, t, v in r.get("curve") or []:
                    mlflow.log_metric("val_" + ("auc" if proto["task"] == "auc"
                                                else "error"), v, step=it)
                    mlflow.log_metric("curve_fit_s", t, step=it)
        for i, t in enumerate(targets):
            mlflow.set_tag(f"target.{i}", f"met={t['met']}: {t['target']}"[:5000])
        for f in files:
            mlflow.log_artifact(str(f))
        return run.info.run_id


# ----------------------------------------------------------------------- main
def run(name: str, *, out_dir: Path = RESULTS, methods=None, datasets=None,
        seeds=None, n_unlabeled=None, mlflow_log: bool = True, log=print,
        command: str = "", compute=None) -> dict:
    """One protocol. ``compute`` (``params.yaml``'s ``compute``: scheduler
    local or dask, address): with dask the jobs run as tasks of train's
    :class:`~weakkernels.pipeline.fitting.FitPool` (a LocalCluster when the
    address is null)."""
    from weakkernels.pipeline.fitting import FitPool

    proto = load_protocol(name)
    if seeds is not None:  # the command line's seeds, for every data set
        proto["seeds"] = seeds
        for ds in proto["datasets"]:
            ds.pop("seeds", None)
    if proto["task"] == "throughput":
        return run_throughput(proto, out_dir, log, command)
    t0 = time.perf_counter()
    with FitPool(compute) as pool:
        rows = run_protocol(proto, log, methods, datasets, n_unlabeled, pool)
    summary = summarize(rows, proto["task"], proto.get("paired_with"))
    targets = check_targets(proto, summary)
    out_dir.mkdir(parents=True, exist_ok=True)
    # a partial run (filters) writes beside the full one, never over it
    tag = "".join(
        f"__{k}-" + "-".join(str(v) for v in vals).replace(" ", "_")
        for k, vals in (("ds", datasets), ("nu", n_unlabeled), ("m", methods))
        if vals)
    tag = re.sub(r"[^A-Za-z0-9.=_-]+", "_", tag)
    if len(tag) > 120:  # long method labels: keep file names under NAME_MAX
        import hashlib

        tag = tag[:100] + "__" + hashlib.sha256(tag.encode()).hexdigest()[:12]
    stem = out_dir / (proto["name"] + tag)
    files = [Path(f"{stem}.json"), Path(f"{stem}.md")]
    md = markdown(proto, rows, summary, targets, command)
    if proto.get("scaling"):
        png = out_dir / f"{stem.name}_scaling.png"
        scaling_plot(proto, summary, png)
        files.append(png)
        md += f"\n![scaling](results/harness/{png.name})\n"
    cpng = out_dir / f"{stem.name}_curves.png"
    if curve_plot(proto, rows, cpng):
        files.append(cpng)
    files[1].write_text(md)
    files[0].write_text(json.dumps({"protocol": proto, "rows": rows,
                                    "summary": summary, "targets": targets,
                                    "hardware": hardware(), "command": command,
                                    "date": _now(),
                                    "seconds": time.perf_counter() - t0},
                                   indent=1, default=str))
    run_id = log_mlflow(proto, rows, summary, targets, files, command) \
        if mlflow_log else None
    log(md)
    return {"rows": rows, "summary": summary, "targets": targets, "files": files,
            "run_id": run_id}


def run_throughput(proto, out_dir, log, command):
    """Target: training throughput >= ``ratio`` of the NumPy limit, measured by
    ``benchmarks/throughput.py`` (same run, d in ``dims``)."""
    out_dir.mkdir(parents=True, exist_ok=True)
    js = out_dir / f"{proto['name']}.json"
    cmd = [sys.executable, str(HERE / "throughput.py"), "--dims",
           ",".join(map(str, proto["dims"])), "--iters", str(proto["iters"]),
           "--repeats", str(proto["repeats"]), "--out", str(js)]
    env = {**os.environ, **ONE_THREAD}
    env.setdefault("NUMBA_CACHE_DIR", str(ROOT / ".numba_cache"))
    subprocess.run(cmd, check=True, env=env, cwd=ROOT)
    res = json.loads(js.read_text())
    lines = [heading(proto["name"], command), "", proto["description"].strip(), "",
             f"Command: `{command}` (runs `{' '.join(cmd[1:])}`)  ",
             f"Hardware: {hardware()}", "",
             "| d | fit s | our rate (evals/s) | limit | ratio | target ≥ "
             f"{proto['ratio']} |", "|---|---|---|---|---|---|"]
    targets = []
    for r in res["rows"]:
        met = r["ratio"] >= proto["ratio"]
        targets.append({"target": f"throughput d={r['d']}", "met": met,
                        "detail": f"{r['ratio']:.2f}"})
        lines.append(f"| {r['d']} | {r['fit_s']:.2f} | {r['rate']:.3g} | "
                     f"{r['limit']:.3g} | {r['ratio']:.2f} | "
                     f"{'met' if met else '**not met**'} |")
    md = "\n".join(lines) + "\n"
    (out_dir / f"{proto['name']}.md").write_text(md)
    log(md)
    return {"rows": res["rows"], "targets": targets}


def rebuild(json_path: Path) -> None:
    """Recompute summary, targets and markdown of a finished run from its JSON
    (the rows are the measurements; nothing is re-run)."""
    d = json.loads(json_path.read_text())
    if "protocol" not in d:  # benchmarks/throughput.py's own output
        return
    proto, rows = d["protocol"], d["rows"]
    # targets are an evaluation of the rows: take them from the current file
    proto["targets"] = load_protocol(proto["name"]).get("targets", [])
    summary = summarize(rows, proto["task"], proto.get("paired_with"))
    targets = check_targets(proto, summary)
    md = markdown(proto, rows, summary, targets, d["command"], d["hardware"],
                  d.get("date", "(see JSON)"))
    md_path = json_path.with_name(json_path.name[: -len(".json")] + ".md")
    png = json_path.with_name(json_path.name[: -len(".json")] + "_scaling.png")
    if proto.get("scaling"):
        scaling_plot(proto, summary, png)
        md += f"\n![scaling](results/harness/{png.name})\n"
    md_path.write_text(md)
    json_path.write_text(json.dumps({**d, "summary": summary, "targets": targets},
                                    indent=1, default=str))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--protocol", "--suite", action="append", default=[],
                    help="a named suite of benchmarks/protocols/ (see --list)")
    ap.add_argument("--all", action="store_true", help="every protocol")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--methods", nargs="+")
    ap.add_argument("--datasets", nargs="+")
    ap.add_argument("--seeds", type=int, nargs="+")
    ap.add_argument("--n-unlabeled", type=int, nargs="+")
    ap.add_argument("--out-dir", type=Path, default=RESULTS)
    ap.add_argument("--no-mlflow", action="store_true")
    ap.add_argument("--scheduler", choices=["local", "dask"], default=None,
                    help="where the jobs run (default: params.yaml compute)")
    ap.add_argument("--address", default=None,
                    help="a Dask scheduler's address (default: params.yaml "
                    "compute; none: a LocalCluster)")
    ap.add_argument("--rebuild", nargs="+", type=Path, metavar="RESULT_JSON",
                    help="recompute tables of finished runs from their JSON")
    args = ap.parse_args(argv)
    if args.rebuild:
        for p in args.rebuild:
            rebuild(p)
        return
    if args.list:
        for p in list_protocols():
            print(p, "-", load_protocol(p).get("description", "").strip().split(
                "\n")[0])
        return
    names = list_protocols() if args.all else args.protocol
    if not names:
        ap.error("give --protocol NAME (see --list) or --all")
    command = "python benchmarks/harness.py " + " ".join(
        shlex.quote(a) for a in (sys.argv[1:] if argv is None else argv))
    compute = dict(yaml.safe_load((ROOT / "params.yaml").read_text())
                   .get("compute") or {"scheduler": "local", "address": None})
    if args.scheduler:
        compute["scheduler"] = args.scheduler
    if args.address:
        compute["address"] = args.address
    for name in names:
        run(name, out_dir=args.out_dir, methods=args.methods, datasets=args.datasets,
            seeds=args.seeds, n_unlabeled=args.n_unlabeled,
            mlflow_log=not args.no_mlflow,
            log=lambda s: print(s, flush=True), command=command, compute=compute)


if __name__ == "__main__":
    main()
