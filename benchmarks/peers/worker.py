"""Measure one method on one prepared split, in its own process.

Called by ``benchmarks/harness.py`` (never imported by it) as::

    <python> benchmarks/peers/worker.py job.json

with the project's interpreter for our estimators and scikit-learn, or with a
peer's own venv (``benchmarks/.peer-venvs/<peer>/bin/python``) for the published
PyPI peers whose pins clash with ours.  Only NumPy and the standard library are
imported at module level, so the file runs in every venv; each method imports
what it needs inside its factory.

The job file names the split (an ``.npz`` with ``X_train``, ``y_train`` (``-1`` =
unlabeled; SU: ``1`` = similar-pair rows in consecutive pairs), ``X_test``,
``y_test`` (0/1), ``X_val``, ``y_val``), the method, its parameters and where to
write the result JSON.  Measured:

* ``compile_s`` -- for numba-backed estimators, the first fit of a tiny problem
  minus a second identical fit (JIT compilation or numba cache loading);
* ``fit_s`` / ``predict_s`` -- wall time of ``fit`` on the split (minus the
  validation curve's evaluations, which ``fit_s_incl_curve`` keeps) and of
  ``decision_function``/``predict`` on the test set (``time.perf_counter``);
  ``fit_cpu_s`` -- CPU seconds of the fit (``time.process_time``; less
  sensitive than wall time to other jobs on a shared machine);
* ``test_error`` (classification) or ``test_auc`` (AUC protocols);
* ``rss_before_fit_mb`` and ``peak_rss_mb`` -- ``ru_maxrss`` of this process
  (interpreter + libraries + data + fit);
* ``model_bytes`` -- size of the saved model file (``est.save`` for ours, a
  pickle for the others);
* ``curve`` -- ``(n_iter, fit seconds excluding the curve's own evaluations,
  validation error or AUC)`` through ``callback(est, n_iter)`` where the
  estimator offers it.

What the parameters mean
------------------------
``C`` is on the *sum* of the labeled losses for every classification row
(scikit-learn's convention: ``SVC(C)``, ``CCCPTSVM``, ``TSGS3VM``, ``FRS3VM``),
and ``C_star`` on the sum of the unlabeled ones; every S3VM row passes
``C_star`` explicitly (the catalogue entry's ``c_star``, and
``PEER_EXPLICIT_CSTAR``; ``$cstar_LU = C n_l / n_u`` is paper 004's
``U C* = L C``). The peers are mapped onto that convention by their
adapters, each with its derivation in its docstring and a numeric check in
``tests/test_peer_mappings.py``:

* QN-S3VM (``qns3vm_adapter.qns3vm_parameters``): its objective is on *means*,
  ``lam = 1 / (2 C L)`` and ``lamU = C* U / (C L)`` (``lamU = 1`` at
  ``C* = C L / U``). Before the peers were re-measured with C on the sum, the
  adapter used ``lam = 1 / (2 C)``: QN-S3VM was regularised ``L`` times more
  strongly than its neighbours.
* pywsl PNU: no exact mapping exists (Euclidean penalty on basis
  coefficients, squared loss on prior-weighted means); ``lam`` is the peer's
  own and the row names it (see ``pywsl_adapter``).
* ``rbf_sgd``: ``SGDClassifier``'s ``alpha`` multiplies ``||w||^2 / 2`` beside
  the *mean* hinge loss, so ``alpha = 1 / (C L)`` is the SVC row's objective
  on the random features; the rows pass that ``alpha`` directly (0.0005 at
  C = 10, L = 200; 0.002 at L = 50; checked by ``tests/test_peer_mappings.py``).
* SU rows (``tsgsu``, ``cuu``, ``susl``): ``lam`` is each estimator's own --
  TSGSU's multiplies ``||f||_H^2 / 2``, CUU's and SUSL's ``||alpha||^2 / 2``
  of the center coefficients; equal numbers are not equal strengths, so
  every SU row's label names its ``lam``.
"""

from __future__ import annotations

import json
import os
import pickle
import resource
import sys
import tempfile
import time

import numpy as np

# The estimators of this package are the entries of its model catalogue
# (``weakkernels.pipeline.registry.MODELS``), which says for each whether it is
# JIT-compiled (``numba``: a warm-up fit is timed as ``compile_s``, with the
# overrides ``warm``), reports a validation curve (``callback``) and needs its
# unlabeled weight stated by the protocol row (``c_star``). The rest are the
# protocols' scikit-learn baselines and the published peers (``_OWN`` below).

# peers whose unlabeled weight C_star must be given by the protocol row
PEER_EXPLICIT_CSTAR = {"qns3vm"}


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def _labeled(X, y):
    m = y != -1
    return X[m], y[m]


class _LabeledOnly:
    """Wrap a supervised estimator: fit on the labeled rows (``y != -1``)."""

    def __init__(self, est):
        self.est = est

    def fit(self, X, y):
        self.est.fit(*_labeled(X, y))
        return self

    def predict(self, X):
        return self.est.predict(X)

    def decision_function(self, X):
        return self.est.decision_function(X)


# --------------------------------------------------------------------- methods
def _svc(p, seed):
    from sklearn.svm import SVC

    return _LabeledOnly(SVC(C=p["C"], gamma=p["sigma"]))


def _self_training(p, seed):
    from sklearn.semi_supervised import SelfTrainingClassifier
    from sklearn.svm import SVC

    return SelfTrainingClassifier(
        SVC(C=p["C"], gamma=p["sigma"], probability=True, random_state=seed),
        threshold=p.get("threshold", 0.75), max_iter=p.get("max_iter", 10))


def _label_spreading(p, seed):
    from sklearn.semi_supervised import LabelSpreading

    return LabelSpreading(kernel="knn", n_neighbors=p.get("n_neighbors", 7),
                          alpha=p.get("alpha", 0.2), max_iter=100)


def _rbf_sgd(p, seed):
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.linear_model import SGDClassifier
    from sklearn.pipeline import make_pipeline

    return _RBFSGD(make_pipeline(
        RBFSampler(gamma=p["sigma"], n_components=p.get("n_components", 1000),
                   random_state=seed),
        SGDClassifier(loss="hinge", alpha=p.get("alpha", 1e-4),
                      max_iter=p.get("max_iter", 50), random_state=seed)))


def _supervised_auc(p, seed):
    from weakkernels.baselines.auc import SupervisedKernelAUC

    return SupervisedKernelAUC(**p)


def _qns3vm(p, seed):
    from qns3vm_adapter import QNS3VMAdapter

    return QNS3VMAdapter(seed=seed, **p)


def _pywsl_pnu(p, seed):
    from pywsl_adapter import PNUAdapter

    return PNUAdapter(seed=seed, **p)


# The protocols' own baselines (``rbf_sgd`` is not the catalogue's ``rff_sgd``:
# 1000 features, SGD capped at 50 epochs, C mapped onto ``alpha`` by the row)
# and the published peers, which run in their own venvs through the adapters
# beside this file.
_OWN = {"svc": _svc, "self_training": _self_training,
        "label_spreading": _label_spreading, "rbf_sgd": _rbf_sgd,
        "supervised_auc": _supervised_auc, "qns3vm": _qns3vm,
        "pywsl_pnu": _pywsl_pnu}


def catalogue_entry(method: str):
    """The model catalogue's entry for ``method``, or None for the methods of
    ``_OWN`` and unknown names. The catalogue is imported only here, for
    catalogue names: a peer's venv has no weakkernels, and a baseline's process
    does not carry our estimators' modules in its memory figures."""
    if method in _OWN:
        return None
    from weakkernels.pipeline.registry import MODELS

    spec = MODELS.get(method)
    return spec if spec is not None and spec.cls is not None else None


def make_estimator(method: str, p: dict, seed: int):
    """Return an unfitted estimator with ``fit(X, y)`` (``-1`` = unlabeled)."""
    if method in _OWN:
        if method in PEER_EXPLICIT_CSTAR:
            _require_c_star(method, p)
        return _OWN[method](p, seed)
    spec = catalogue_entry(method)
    if spec is None:
        raise ValueError(f"unknown method {method!r}")
    if spec.c_star:
        _require_c_star(method, p)
    from weakkernels.pipeline.registry import make

    return make(method, p, seed)


def _require_c_star(method, p):
    if "C_star" not in p:
        # the estimators' defaults have differed (CCCPTSVM once C* = C) and
        # changed: a row states the C* it runs with
        raise ValueError(f"{method}: the protocol row must pass C_star "
                         "explicitly (e.g. $cstar_LU = C n_l / n_u, or $C)")


class _RBFSGD(_LabeledOnly):
    """RBFSampler + SGDClassifier (hinge) on the labeled points."""


def tiny_problem(X, y, task: str):
    """A small slice of the same split, for the compile warm-up fits."""
    if task == "su":
        S = np.flatnonzero(y == 1)[:40]
        U = np.flatnonzero(y == -1)[:40]
        idx = np.concatenate([S, U])
    else:
        lab = np.flatnonzero(y != -1)
        lab = np.concatenate([lab[y[lab] == c][:10] for c in np.unique(y[lab])])
        U = np.flatnonzero(y == -1)[:40]
        idx = np.concatenate([lab, U])
    return X[idx], y[idx]


def _warm_params(spec, p):
    """Parameters of the warm-up fits: the same estimator with its catalogue
    entry's ``warm`` overrides (a few iterations; None drops a parameter)."""
    q = {**p, **spec.warm}
    return {k: v for k, v in q.items() if k not in spec.warm or v is not None}


def scores(est, X):
    if hasattr(est, "decision_function"):
        try:
            return np.asarray(est.decision_function(X), dtype=float).ravel()
        except (AttributeError, NotImplementedError):
            pass
    P = est.predict_proba(X)
    return np.asarray(P)[:, 1]


def auc(y01, s) -> float:
    """Mann-Whitney AUC with ties counted one half."""
    from scipy.stats import rankdata

    r = rankdata(s)
    pos = y01 == 1
    n1, n0 = pos.sum(), (~pos).sum()
    return float((r[pos].sum() - n1 * (n1 + 1) / 2) / (n1 * n0))


def measure(job: dict) -> dict:
    d = np.load(job["data"])
    X, y = d["X_train"], d["y_train"]
    Xt, yt = d["X_test"], d["y_test"]
    Xv, yv = d["X_val"], d["y_val"]
    method, p, seed, task = job["method"], dict(job["params"]), job["seed"], job["task"]
    out = {"rss_before_fit_mb": _rss_mb()}
    spec = catalogue_entry(method)
    if spec is not None and spec.numba:
        Xs, ys = tiny_problem(X, y, task)
        wp = _warm_params(spec, p)
        t = []
        for _ in range(2):
            t0 = time.perf_counter()
            make_estimator(method, wp, seed).fit(Xs, ys)
            t.append(time.perf_counter() - t0)
        out["compile_s"] = max(0.0, t[0] - t[1])
    else:
        out["compile_s"] = 0.0
    curve = []
    spent = [0.0]  # wall seconds spent inside the curve callback (excluded)
    spent_cpu = [0.0]  # CPU seconds spent inside it (excluded)
    t_fit0 = [0.0]
    with_curve = (spec is not None and spec.callback
                  and bool(job.get("callback_every")))
    if with_curve:

        def callback(est, n_iter):
            t0, c0 = time.perf_counter(), time.process_time()
            s = scores(est, Xv)
            val = auc(yv, s) if task == "auc" else float(
                np.mean(est.predict(Xv) != yv))
            curve.append((int(n_iter), t0 - t_fit0[0] - spent[0], val))
            spent[0] += time.perf_counter() - t0
            spent_cpu[0] += time.process_time() - c0

        p["callback"] = callback
        p["callback_every"] = int(job["callback_every"])
    est = make_estimator(method, p, seed)
    c0 = time.process_time()
    t0 = t_fit0[0] = time.perf_counter()
    est.fit(X, y)
    out["fit_s"] = time.perf_counter() - t0
    out["fit_cpu_s"] = time.process_time() - c0
    if with_curve:
        # the validation curve's own evaluations are not training time
        out["fit_s_incl_curve"] = out["fit_s"]
        out["fit_s"] -= spent[0]
        out["fit_cpu_s"] -= spent_cpu[0]
        out["curve_cpu_s"] = spent_cpu[0]
    t0 = time.perf_counter()
    if task == "auc":
        s = scores(est, Xt)
        out["predict_s"] = time.perf_counter() - t0
        out["test_auc"] = auc(yt, s)
    else:
        pred = np.asarray(est.predict(Xt)).ravel()
        out["predict_s"] = time.perf_counter() - t0
        out["test_error"] = float(np.mean(pred != yt))
    out["peak_rss_mb"] = _rss_mb()
    out["curve"] = curve
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "model")
        if hasattr(est, "save") and method != "qns3vm":
            if hasattr(est, "callback"):
                est.set_params(callback=None)
            est.save(path)
            path = path if os.path.exists(path) else _only_file(tmp)
        else:
            with open(path, "wb") as fh:
                pickle.dump(est, fh, protocol=pickle.HIGHEST_PROTOCOL)
        out["model_bytes"] = os.path.getsize(path)
    return out


def _only_file(directory):
    (name,) = os.listdir(directory)
    return os.path.join(directory, name)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    with open(argv[0]) as fh:
        job = json.load(fh)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    try:
        res = {"status": "ok", **measure(job)}
    except MemoryError:
        res = {"status": "memory budget", "error": "MemoryError"}
    except Exception as exc:  # recorded, not hidden: the table shows the error
        res = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:500]}
    with open(job["out"], "w") as fh:
        json.dump(res, fh)


if __name__ == "__main__":
    main()
