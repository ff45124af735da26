"""The random-feature estimators on dask arrays: the chunked L-BFGS objective
computed on Dask workers (weakkernels._dask) gives the in-memory model, bit
for bit.

One LocalCluster of two worker processes serves the module. A level of the
solver whose features fit the client's hold budget is evaluated in the client
on its gathered rows (the in-memory solver's own point set); the tests of the
workers' path set that budget to zero (``streamed``), so every level streams,
in memory and on the workers alike. Both paths cut a set into the same
2048-row sub-chunks and add their partials in the same order (the workers
return one partial per sub-chunk, the client adds them), so the models are
compared bit for bit: with Dask chunks of 230 rows, most sub-chunks span
several Dask chunks. The fits run in float64 for a fixed number of
iterations (as in the other estimator tests); the 10^6- and 10^7-row float32
fits of benchmarks/dask_fit.py check the default settings.
"""

from __future__ import annotations

import os
import signal
import time

import numba
import numpy as np
import pytest
import scipy.sparse as sp
from tests._data import two_gaussians
from tests.test_pipeline_sparse import (
    _best,
    _models_cfg,
    _register,
    _sparse_problem,
    _split_cfg,
    _train_cfg,
)
from tests.test_tsgsu import su_problem

from _pipeline import params as repo_params
from weakkernels import FRS3VM, QSGS2AUC, TSGS3VM, TSGSU, SolverOptions, kernels
from weakkernels._dask import DaskRows
from weakkernels.pipeline.fitting import train
from weakkernels.pipeline.preparation import prepare
from weakkernels.pipeline.splitting import make_splits
from weakkernels.pipeline.timings import strip

da = pytest.importorskip("dask.array")
distributed = pytest.importorskip("distributed")

CHUNK = 230  # rows per Dask chunk: uneven, several chunks per set


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1,
                                  processes=True, dashboard_address=None) as cluster:
        with distributed.Client(cluster) as c:
            yield c


@pytest.fixture
def streamed():
    """Solver options under which no level's features are held: every level
    streams, so every evaluation runs as tasks on the workers (and in memory,
    regenerated)."""
    return SolverOptions(primal_cache_max_bytes=0)


def _semi(seed=0, n=700):
    X, y, _ = two_gaussians(n=n, d=6, n_labeled=40, seed=seed)
    return np.maximum(X, 0.0), y  # half the entries zero: a sparse-able X


def _semi_all_landmarks(seed=0):
    """Data for the default Nystroem size, every row a landmark
    (``nystroem_all_rows``): a streamed fit then costs n^2 per pass, so fewer
    rows (350 instead of 700: still two Dask chunks within one sub-chunk)."""
    return _semi(seed, n=350)


def _su(seed=0):
    X, y, _, _ = su_problem(n_pairs=150, n_u=400, n_test=10, seed=seed)
    return np.maximum(X, 0.0), y


# float64 and a fixed iteration count (the tolerance is not reached): both
# paths take the same L-BFGS steps, apart from rounding far below float32's
_OPT = {"tol": 1e-12, "max_iter": 12, "dtype": "float64", "random_state": 0}
# the machinery tests compare the S3VMs' one fit at the given C* (the k + 1
# fits of selection="auto"'s cross-validation at this size are tested once,
# test_the_default_choice_of_c_star_is_the_in_memory_one)
_S3VM = {**_OPT, "selection": None}
ESTIMATORS = {
    "TSGS3VM-nystroem": (lambda: TSGS3VM(**_S3VM), _semi_all_landmarks),
    "TSGS3VM-fourier": (lambda: TSGS3VM(features="fourier", max_features=128,
                                        **_S3VM), _semi),
    "FRS3VM": (lambda: FRS3VM(n_components=128, **_S3VM), _semi),
    "TSGSU": (lambda: TSGSU(prior=0.7, sigma=0.5, features="fourier",
                            max_features=128, **_OPT), _su),
    "TSGSU-nystroem": (lambda: TSGSU(prior=0.7, sigma=0.5, features="nystroem",
                                     max_features=128, **_OPT), _su),
    "QSGS2AUC": (lambda: QSGS2AUC(features="fourier", max_features=128, **_OPT),
                 _semi),
    "QSGS2AUC-nystroem": (lambda: QSGS2AUC(features="nystroem", max_features=128,
                                           **_OPT), _semi),
}


def _dask(X, y, sparse):
    Xd = da.from_array(X, chunks=(CHUNK, -1))
    if sparse:
        Xd = Xd.map_blocks(sp.csr_matrix, dtype=X.dtype,
                           meta=sp.csr_matrix((0, 0), dtype=X.dtype))
    return Xd, da.from_array(y, chunks=CHUNK)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("name", list(ESTIMATORS))
def test_dask_fit_is_the_in_memory_fit(client, streamed, name, sparse):
    make, data = ESTIMATORS[name]
    X, y = data()
    ref = make().set_params(solver_options=streamed).fit(
        sp.csr_matrix(X) if sparse else X, y)
    Xd, yd = _dask(X, y, sparse)
    est = make().set_params(solver_options=streamed).fit(Xd, yd)
    assert est.n_features_in_ == X.shape[1]
    f_ref, f = ref.decision_function(X), est.decision_function(X)
    np.testing.assert_array_equal(f, f_ref)
    # prediction on a dask array stays lazy and equals the NumPy one
    lazy = est.decision_function(Xd)
    assert isinstance(lazy, da.Array)
    # rounding only: BLAS sums a dask chunk's rows in other blocks (a value
    # near zero then differs by 1e-15 of the scale, not of itself)
    np.testing.assert_allclose(lazy.compute(), f, rtol=1e-12,
                               atol=1e-12 * np.abs(f).max())
    np.testing.assert_array_equal(est.predict(Xd).compute(), est.predict(X))
    np.testing.assert_allclose(est.predict_proba(Xd).compute(),
                               est.predict_proba(X), rtol=1e-12)


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
def test_the_default_choice_of_c_star_is_the_in_memory_one(client, streamed, sparse):
    """selection="auto" cross-validates C* on this small problem (with the
    ramp_cccp candidate) on a Dask input as on the same rows in memory: the
    same candidates, validation errors and model bit for bit, also where
    every level would stream to the workers."""
    X, y = _semi(n=300)  # 40 labels: five folds
    fmt = sp.csr_matrix if sparse else np.asarray
    ref = TSGS3VM(**_OPT, solver_options=streamed).fit(fmt(X), y)
    est = TSGS3VM(**_OPT, solver_options=streamed).fit(*_dask(X, y, sparse))
    assert ref.selection_ == est.selection_ == "cv"
    assert est.validation_losses_ == ref.validation_losses_
    assert "ramp_cccp" in est.validation_losses_
    np.testing.assert_array_equal(est.validation_errors_, ref.validation_errors_)
    assert est.to_bytes() == ref.to_bytes()


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "csr"])
@pytest.mark.parametrize("seed", [0, 2, 3])
def test_default_sigma_is_the_in_memory_one(client, seed, sparse):
    """``sigma="scale"`` sums the values on the in-memory path's row grid, so
    the width and the model do not depend on the chunks. Summed per Dask chunk
    (before 85e1f0c), seeds 2 and 3 gave other last bits and models 1e-13 to
    1e-11 apart; seed 0 (the data of the tests above) happened to agree."""
    X, y = _semi(seed=seed)
    fmt = sp.csr_matrix if sparse else np.asarray
    ref = TSGS3VM(**_S3VM).fit(fmt(X), y)
    est = TSGS3VM(**_S3VM).fit(*_dask(X, y, sparse))
    assert est.sigma_ == ref.sigma_
    np.testing.assert_array_equal(est.decision_function(X), ref.decision_function(X))
    # a set longer than one cell of the grid, in chunks that straddle cells
    Xl = np.random.default_rng(seed).random((kernels.MOMENT_CELL_ROWS + 4321, 3))
    Xl[Xl < 0.5] = 0.0
    rows = DaskRows.persist(_dask(Xl, np.zeros(len(Xl)), sparse)[0].rechunk(
        (50_000, -1)), client)
    assert (kernels.resolve_sigma("scale", rows)
            == kernels.resolve_sigma("scale", fmt(Xl)))


def test_validation_fraction_on_dask_is_the_in_memory_fit(client, streamed):
    """The held-out C* choice (``validation_fraction``) splits the labeled
    rows, which stay in the client: on a dask array it scores the same
    stages, keeps the same C* and returns the in-memory model, bit for bit."""
    X, y = _semi(seed=3)
    make = lambda: TSGS3VM(selection="holdout", validation_fraction=0.25, **_OPT)  # noqa: E731
    ref = make().set_params(solver_options=streamed).fit(X, y)
    est = make().set_params(solver_options=streamed).fit(*_dask(X, y, False))
    assert ref.validation_errors_.shape == (5, 2)
    np.testing.assert_array_equal(est.validation_errors_, ref.validation_errors_)
    assert est.C_star_ == ref.C_star_
    np.testing.assert_array_equal(est.decision_function(X), ref.decision_function(X))


def test_held_levels_are_the_in_memory_fit_bit_for_bit(client):
    """Levels that fit the hold budget run in the client on their gathered
    rows, with the in-memory solver's chunks and sums: the same bits as the
    NumPy fit (the worker path's per-Dask-chunk sums round differently), and
    so the same model for any number of workers."""
    X, y = _semi(seed=4)
    make = lambda: TSGS3VM(features="fourier", max_features=128,  # noqa: E731
                           sigma=0.5, **_S3VM)
    ref = make().fit(X, y)
    est = make().fit(*_dask(X, y, False))
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    np.testing.assert_array_equal(est.intercept_, ref.intercept_)


def test_point_set_products_are_the_in_memory_ones(client, monkeypatch):
    """The solver's products on rows held by workers -- streamed (one task
    per Dask chunk, sub-chunks crossing chunk borders, among them chunks
    holding no sub-chunk start; the sample's rows copied on the workers or
    read from the chunks) or gathered to the client (held) -- equal the
    in-memory point set's bit for bit in float32, on a sample of a subset of
    the rows (the pointwise loss sees the set's row numbers)."""
    from weakkernels._dask import DaskRows
    from weakkernels._dsg import Problem, RowLoss, _PrimalSet
    from weakkernels.random_features import FeatureSpec

    rng = np.random.default_rng(0)
    X = rng.standard_normal((6000, 5)).astype(np.float32)
    rows = DaskRows.persist(da.from_array(X, chunks=((2500, 700, 90, 2300, 410),
                                                     -1)), client)
    index = np.flatnonzero(rng.random(6000) > 0.1)  # the set: most rows
    idx = np.sort(rng.choice(index.size, 4500, replace=False))  # its sample
    spec = FeatureSpec("rbf", 0.5, 2, 1.0, 5, 64, 3, np.float32)
    W, second = spec.blocks(0, 2)
    norm = np.float32(1 / np.sqrt(2))
    ref = _PrimalSet(Problem([(X, index)], 1, None), 0, idx, spec, W, second,
                     norm, False, None)
    v32 = rng.standard_normal((128, 1)).astype(np.float32)
    g = rng.standard_normal((idx.size, 1))
    shift = np.array([0.25])
    loss = RowLoss(lambda s, f, r, m, w: (float((f[:, 0] * r).sum()),
                                          f * np.sqrt(r)[:, None]), 0, idx.size, 1.0)
    want = [ref.forward(v32), ref.backward(g), ref.mean(), ref.fused(v32, shift, loss)]
    for hold, budget in ((False, float("inf")), (False, 0.0), (True, 0.0)):
        monkeypatch.setattr(DaskRows, "worker_budget", lambda self, fraction: budget)  # noqa: B023
        ps = rows.primal_set(index, idx, spec, W, second, norm, hold=hold)
        copied = client.gather([sel for _, sel, _ in getattr(ps, "parts", [])])
        assert all((c[3] is not None) == (budget > 0) for c in copied)
        got = [ps.forward(v32), ps.backward(g), ps.mean(), ps.fused(v32, shift, loss)]
        for a, b in zip(got[:3], want[:3], strict=True):
            np.testing.assert_array_equal(a, b)
        for a, b in zip(got[3], want[3], strict=True):
            np.testing.assert_array_equal(a, b)


@pytest.mark.parametrize("name", ["TSGSU", "QSGS2AUC"])
def test_moment_losses_bring_only_sums_to_the_client(client, streamed,
                                                     monkeypatch, name):
    """TSGSU (squared loss) and QSG-S2AUC evaluate their losses from each
    set's output moments (``Problem.moments``): on Dask workers every
    evaluation is one fused pass returning (D,) sums, never the outputs of
    the rows (``forward``) nor a per-row gradient sent back (``backward``),
    whose size grows with n."""
    from weakkernels._dask import DaskPrimalSet

    calls = {"fused": 0}
    fused = DaskPrimalSet.fused

    def counted(self, *args):
        calls["fused"] += 1
        return fused(self, *args)

    def refuse(self, *args):
        raise AssertionError("n-sized outputs brought to the client")

    monkeypatch.setattr(DaskPrimalSet, "fused", counted)
    monkeypatch.setattr(DaskPrimalSet, "forward", refuse)
    monkeypatch.setattr(DaskPrimalSet, "backward", refuse)
    make, data = ESTIMATORS[name]
    X, y = data()
    make().set_params(solver_options=streamed).fit(*_dask(X, y, False))
    assert calls["fused"] > 0


def test_dask_fit_does_not_depend_on_the_workers(client, streamed):
    """Partials are added in chunk order: one worker or two, the same bits."""
    X, y = _semi(seed=3)
    Xd, yd = _dask(X, y, False)
    make = ESTIMATORS["TSGS3VM-fourier"][0]
    two = make().set_params(solver_options=streamed).fit(Xd, yd)
    with distributed.LocalCluster(n_workers=1, threads_per_worker=1,
                                  processes=True, dashboard_address=None) as one_cl:
        with distributed.Client(one_cl) as one_client, one_client.as_current():
            one = make().set_params(solver_options=streamed).fit(Xd, yd)
            assert len(one_client.scheduler_info()["workers"]) == 1
    np.testing.assert_array_equal(one.coef_, two.coef_)
    np.testing.assert_array_equal(one.intercept_, two.intercept_)


def test_worker_killed_mid_fit_gives_the_same_model(client, streamed):
    """A worker killed between two annealing stages loses its chunks and
    selections; the scheduler recomputes them on the other
    worker (and the restarted one) from the graph, and the model is the one
    of an undisturbed fit, bit for bit -- never a model without the chunk."""
    X, y = _semi(seed=5)
    Xd, yd = _dask(X, y, False)
    make = ESTIMATORS["TSGS3VM-fourier"][0]
    ref = make().set_params(solver_options=streamed).fit(Xd, yd)
    pids = client.run(os.getpid)
    killed = []

    def kill_once(est, n_iter):
        if not killed:
            pid = pids[sorted(pids)[0]]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    est = make().set_params(solver_options=streamed, callback=kill_once).fit(Xd, yd)
    assert killed
    np.testing.assert_array_equal(est.coef_, ref.coef_)
    np.testing.assert_array_equal(est.intercept_, ref.intercept_)
    # the nanny restarts the killed worker: wait so later tests see two
    client.wait_for_workers(2, timeout=60)
    time.sleep(0.5)


def test_train_stage_on_dask_writes_the_local_outputs(client, tmp_path, monkeypatch):
    """``compute.scheduler: dask``: the ``train`` stage's fits run as tasks on a
    cluster and its DVC outputs (model files, test scores, the run records
    without timings) are the local run's, byte for byte. The stage function
    on a tiny CSR set, not a full ``dvc repro`` (minutes: too slow here)."""
    tmp = tmp_path
    raw = _register(monkeypatch, tmp, "tiny_sparse", *_sparse_problem(0.02))
    prepare(["tiny_sparse"], raw, tmp / "prep", **repo_params()["prepare"])
    make_splits(["tiny_sparse"], tmp / "prep", tmp / "splits", _split_cfg())
    runs = {}
    address = client.scheduler.address
    for name, compute in (("local", {"scheduler": "local", "address": None}),
                          ("dask", {"scheduler": "dask", "address": address})):
        runs[name] = strip(train(
            [("tsgs3vm", "tiny_sparse")], _best(), tmp / "prep", tmp / "splits",
            tmp / name / "models", tmp / name / "pred", _train_cfg(), _models_cfg(),
            log_mlflow=False, compute=compute))
    for rec in runs["dask"]:
        rec["model_file"] = rec["model_file"].replace("/dask/", "/local/")
    assert runs["dask"] == runs["local"]
    files = sorted(p.relative_to(tmp / "local")
                   for p in (tmp / "local").rglob("*") if p.is_file())
    assert files and any(str(f).endswith(".wkm") for f in files)
    for f in files:
        assert (tmp / "dask" / f).read_bytes() == (tmp / "local" / f).read_bytes(), f


def test_benchmark_harness_jobs_on_dask_give_the_local_rows(client, tmp_path):
    """``compute.scheduler: dask`` in the benchmark harness: the jobs of a
    protocol run as tasks of train's FitPool and give the local run's rows,
    in its order, with its budget rule (a method out of its time budget on
    seed 0 is recorded as skipped on seed 1 though its task ran)."""
    import harness

    methods = ["SVC (labeled)", "CCCP-TSVM (C* = C n_l/n_u, 0.05 s budget)"]
    kw = {"methods": methods, "mlflow_log": False, "log": lambda s: None,
          "command": "pytest"}
    local = harness.run("tiny", out_dir=tmp_path / "local", **kw)["rows"]
    remote = harness.run("tiny", out_dir=tmp_path / "dask", **kw, compute={
        "scheduler": "dask", "address": client.scheduler.address})["rows"]

    def stable(r):
        return {k: r.get(k) for k in ("dataset", "seed", "method", "n_unlabeled",
                                      "status", "test_error", "params")}

    assert [r["status"] for r in local] == [
        "ok", "time budget", "ok", "skipped (time budget at n_u=300, seed 0)"]
    assert [stable(r) for r in remote] == [stable(r) for r in local]


def test_ramp_cccp_is_refused_on_dask_inputs(client):
    """The concave-convex slopes live on the client; a Dask point set ships
    its loss to the workers once, so the fit would use stale slopes."""
    X, y = _semi()
    Xd, yd = _dask(X, y, sparse=False)
    with pytest.raises(NotImplementedError, match="ramp_cccp"):
        TSGS3VM(unlabeled_loss="ramp_cccp", **_OPT).fit(Xd, yd)


@pytest.mark.slow
@pytest.mark.parametrize("method", ["newton", "lbfgs"])
def test_default_minimiser_is_the_same_bits_for_threads_and_dask(client, streamed,
                                                                 method):
    """The default minimiser (truncated Newton) and L-BFGS, named: one
    numba thread or two in memory, and the Dask fit (every level streamed
    to the workers, and held in the client), give the same coefficients bit
    for bit."""
    assert SolverOptions().primal_method == "newton"
    held = (SolverOptions() if method == "newton"
            else SolverOptions(primal_method=method))
    streams = (streamed if method == "newton"
               else SolverOptions(primal_cache_max_bytes=0, primal_method=method))
    make, data = ESTIMATORS["TSGS3VM-nystroem"]
    X, y = data(seed=5)
    for opts in (streams, held):
        fits = []
        old = numba.get_num_threads()
        try:
            for threads in (1, min(2, numba.config.NUMBA_NUM_THREADS)):
                numba.set_num_threads(threads)
                fits.append(make().set_params(solver_options=opts).fit(X, y))
        finally:
            numba.set_num_threads(old)
        fits.append(make().set_params(solver_options=opts).fit(*_dask(X, y, False)))
        assert fits[0].n_iter_ > 0
        for other in fits[1:]:
            np.testing.assert_array_equal(other.coef_, fits[0].coef_)
            np.testing.assert_array_equal(other.intercept_, fits[0].intercept_)
            assert other.n_iter_ == fits[0].n_iter_
