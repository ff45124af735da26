"""The worker side of ``benchmarks/dask_pass_cost.py`` (sent to the Dask
workers by value): the pointwise loss, the chunk opener, and the per-process
instrumentation of the chunk functions (CPU and page faults of each call, by
``RUSAGE_THREAD``)."""

from __future__ import annotations

import resource
import time

import numpy as np

N_U = 1_000_000
C_STAR = 10.0 * 10_000 / 10_000_000


def pointwise(s, f, rows, m, w):
    """TSGS3VM's unlabeled part (binary default "da", s = -0.3)."""
    from weakkernels.tsgs3vm import unlabeled_loss, unlabeled_loss_grad

    k = C_STAR * w * N_U / m
    return (k * unlabeled_loss("da", f, -0.3).sum(),
            k * unlabeled_loss_grad("da", f, -0.3))


def open_chunk(path: str, r0: int, r1: int):
    return np.load(path, mmap_mode="r")[r0:r1]


# -- instrumentation ----------------------------------------------------------
STATS: dict = {}


def _thread_usage():
    ru = resource.getrusage(resource.RUSAGE_THREAD)
    return time.thread_time(), ru.ru_minflt, ru.ru_majflt


def _wrap(name, fn):
    def wrapped(*a, **k):
        t0, f0, j0 = _thread_usage()
        try:
            return fn(*a, **k)
        finally:
            _acc(name, t0, f0, j0)
    wrapped.__wrapped_probe__ = fn
    return wrapped


def _wrap_gen(name, fn):
    """A generator function: time each resume (the body between yields)."""
    def wrapped(*a, **k):
        gen = fn(*a, **k)
        while True:
            t0, f0, j0 = _thread_usage()
            try:
                item = next(gen)
            except StopIteration:
                _acc(name, t0, f0, j0, count=0)
                return
            _acc(name, t0, f0, j0, count=1)
            yield item
    wrapped.__wrapped_probe__ = fn
    return wrapped


def _acc(name, t0, f0, j0, count=1):
    t1, f1, j1 = _thread_usage()
    s = STATS.setdefault(name, [0, 0.0, 0, 0])
    s[0] += count
    s[1] += t1 - t0
    s[2] += f1 - f0
    s[3] += j1 - j0


def install(where: str):
    """Wrap the chunk functions of the Dask tasks (where="dask") or of the
    in-process point set (where="inproc") in this process."""
    import weakkernels._dask as dk
    import weakkernels._dsg as dsg
    import weakkernels.random_features as rf

    def patch(mod, name, gen=False):
        fn = getattr(mod, name)
        if hasattr(fn, "__wrapped_probe__"):
            return
        setattr(mod, name, (_wrap_gen if gen else _wrap)(f"{name}", fn))

    if where == "dask":
        for name in ("_fused_task", "primal_chunk", "fused_chunk",
                     "as_compute_rows", "release_mapped_rows", "_aligned",
                     "_frequencies", "_take"):
            patch(dk, name)
        patch(dk, "_chunks", gen=True)
    else:
        for name in ("primal_chunk", "fused_chunk"):
            patch(dsg, name)
        dsg.Problem.rows = _wrap("Problem.rows", dsg.Problem.rows.__wrapped_probe__
                                 if hasattr(dsg.Problem.rows, "__wrapped_probe__")
                                 else dsg.Problem.rows)
    # inside the features, either path: the spec's kernel
    K = rf.NystromSpec._kernel
    if not hasattr(K, "__wrapped_probe__"):
        rf.NystromSpec._kernel = _wrap("NystromSpec._kernel", K)
    F = rf.FeatureSpec.features
    if not hasattr(F, "__wrapped_probe__"):
        rf.FeatureSpec.features = _wrap("FeatureSpec.features", F)
    return True


def snapshot():
    """(process CPU s, process ru_minflt, ru_majflt, copy of STATS)."""
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return (time.process_time(), ru.ru_minflt, ru.ru_majflt,
            {k: list(v) for k, v in STATS.items()})


def env_of(name):
    import os
    return os.environ.get(name)
