"""Model registry: name -> (factory, search space, protocol) for every compared model.

Explicit: every entry names its estimator class, imported at the top of this
module (no lookup by string).  To add a model, import its class and add one
:class:`ModelSpec` to :data:`MODELS`.  The catalogue is the one list of the
project's estimators: besides the pipeline, the benchmark worker
(``benchmarks/peers/worker.py``) builds and warms up its entries from it, and
the tests run scikit-learn's common checks (``tests/test_common_*.py``), the
bad-input catalogue and the model-file round trips over it, each with the
settings an entry states (``check_params``, ``fast``, ``expected_failed_checks``).
The scikit-learn baselines sit beside them in every
comparison: ``svc`` (SVC on the labeled points), ``self_training``
(``SelfTrainingClassifier(SVC)``), ``label_spreading`` (``LabelSpreading`` with the
kNN kernel) and ``rff_sgd`` (``RBFSampler`` + ``SGDClassifier`` hinge loss on the
labeled points).

Kernel width is ``sigma`` everywhere (RBF ``exp(-sigma * ||x - x'||^2)``, i.e.
scikit-learn's ``gamma``); it is searched as ``sigma_rel``, a multiple of
``1 / (d Var(X))`` (scikit-learn's ``gamma="scale"``).  ``C_star`` is searched
as a multiple of the paper's default ``C * n_l / n_u`` (paper 000 §6), parameter
``c_star_scale``.
"""

from __future__ import annotations

import inspect
import math
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from sklearn.linear_model import SGDClassifier
from sklearn.semi_supervised import LabelSpreading, SelfTrainingClassifier
from sklearn.svm import SVC

from weakkernels._artifact import load as load_model
from weakkernels._options import SolverOptions
from weakkernels._selection import c_star_rule
from weakkernels.baselines.auc import PNUAUC, ExactS2AUC
from weakkernels.baselines.su import CUU, SUSL
from weakkernels.cccp_tsvm import CCCPTSVM, RampSVM
from weakkernels.qsg_s2auc import QSGS2AUC
from weakkernels.tsgs3vm import FRS3VM, TSGS3VM
from weakkernels.tsgsu import TSGSU

__all__ = [
    "FITS_FULLY_LABELED_CHECKS",
    "MODELS",
    "SPARSE_FIT_CHECKS",
    "FitContext",
    "ModelSpec",
    "ValidationMonitor",
    "build",
    "check_fixed_vs_searched",
    "is_choices",
    "load_model",
    "make",
    "objective",
    "scores",
    "start_params",
    "suggest",
]


@dataclass
class FitContext:
    """What a factory may need besides the hyper-parameters."""

    n_labeled: int
    n_unlabeled: int
    seed: int
    prior: float | None = None  # SU: the class prior; else the labeled fraction
    callback: Callable | None = None
    callback_every: int = 10
    sigma_scale: float = 1.0  # 1 / (d Var(X)): sklearn's gamma="scale"


@dataclass(frozen=True)
class ModelSpec:
    name: str
    task: str  # "ssl" (labeled + unlabeled), "auc" (P/N/U), "su" (pairs + unlabeled)
    factory: Callable[[dict, FitContext], Any]
    space: dict[str, tuple]  # param -> ("float"|"int", low, high, log)
    callback: bool = False  # supports callback(estimator, n_iter)
    labeled_only: bool = False  # fits on the labeled rows only (baselines)
    ours: bool = False  # has to_bytes()/save() and loads with weakkernels.load
    peer: bool = False  # a paper's baseline built here: saved like ours, but
    #                     a comparison, not one of the papers' methods
    defaults: dict = field(default_factory=dict)
    # Classes whose constructor defaults seed the study's first trial
    # (start_params); the first class naming a searched parameter wins.
    start_from: tuple = ()
    # What the benchmark worker and the tests read (entries with an estimator
    # class of this package; None for the scikit-learn baselines):
    cls: type | None = None  # the estimator class
    c_star: bool = False  # weighs the unlabeled losses by C_star (S3VMs): a
    #                       benchmark row must state it
    numba: bool = False  # JIT-compiled: the worker times a warm-up fit
    warm: dict = field(default_factory=dict)  # the warm-up fits' overrides
    #                                           (None drops a parameter)
    # Constructor keywords: ``fast`` for a quick fit on the tests' small data
    # (120 rows); ``check_params`` one instance each under scikit-learn's common
    # checks (few iterations), with ``expected_failed_checks`` (check -> reason).
    fast: dict = field(default_factory=dict)
    check_params: tuple[dict, ...] = ()
    expected_failed_checks: Mapping[str, str] = field(default_factory=dict)

    @property
    def data_kind(self) -> str:
        """The tests' data layout: ``"su"`` (similar pairs + unlabeled),
        ``"supervised"`` (fits on labeled rows only) or ``"semi"``
        (``y == -1`` marks the unlabeled rows; the AUC tasks too)."""
        if self.task == "su":
            return "su"
        return "supervised" if self.labeled_only else "semi"


def _svc(p: dict, ctx: FitContext):
    return SVC(C=p["C"], gamma=p["sigma"], kernel="rbf")


def _self_training(p: dict, ctx: FitContext):
    from sklearn.calibration import CalibratedClassifierCV

    # Self-training needs probabilities; SVC(probability=True) is deprecated in
    # scikit-learn 1.9 in favour of this calibrated wrapper.
    base = CalibratedClassifierCV(SVC(C=p["C"], gamma=p["sigma"]), ensemble=False)
    return SelfTrainingClassifier(base, threshold=p["threshold"], max_iter=10)


def _label_spreading(p: dict, ctx: FitContext):
    return LabelSpreading(
        kernel="knn", n_neighbors=int(p["n_neighbors"]), alpha=p["alpha"], max_iter=100
    )


def _rff_sgd(p: dict, ctx: FitContext):
    from sklearn.kernel_approximation import RBFSampler
    from sklearn.pipeline import make_pipeline

    n_comp = int(p.get("n_components") or 500)
    return make_pipeline(
        RBFSampler(gamma=p["sigma"], n_components=n_comp, random_state=ctx.seed),
        SGDClassifier(loss="hinge", alpha=p["alpha"], random_state=ctx.seed),
    )


# C* = c_star_scale * C n_l / n_u (paper 004's rule times a searched factor).
# The range reaches 1e-3, i.e. C* -> 0: paper 004 picks C* on labeled
# validation data, and a tuned S3VM must be able to fall back to its own
# supervised machine where the unlabeled term does not pay (ijcnn1;
# docs/benchmarks/design_notes.md, "The pipeline").
_C_STAR_SCALE = ("float", 1e-3, 10.0, True)


def _c_star(p: dict, ctx: FitContext) -> float:
    scaled_c = p.get("c_star_scale", 1.0) * p["C"]
    return c_star_rule(scaled_c, ctx.n_labeled, ctx.n_unlabeled)


def _ours(cls: type, *, c_star: bool = False, callback: bool = True):
    def factory(p: dict, ctx: FitContext):
        kw = {k: v for k, v in p.items() if k not in ("c_star_scale",)}
        if c_star:
            kw["C_star"] = _c_star(p, ctx)
        accepted = cls().get_params(deep=False)
        if c_star and "selection" in accepted:
            # the study chooses C* on the split's validation labels: the
            # estimator's own cross-validated choice (selection=
            # "auto" on small sets) would nest a second one in every trial
            # at k + 1 times its cost; models.fixed may still ask for it
            kw.setdefault("selection", None)
        if cls is TSGSU and kw.get("prior", "true") == "true":
            kw["prior"] = ctx.prior
        elif "prior" in accepted and kw.get("prior") is None \
                and ctx.prior is not None:
            kw["prior"] = ctx.prior  # the labeled class fraction (fit_data)
        if "random_state" in accepted:
            kw["random_state"] = ctx.seed
        if callback and ctx.callback is not None and "callback" in accepted:
            kw["callback"] = ctx.callback
            kw["callback_every"] = ctx.callback_every
        return cls(**kw)

    return factory


def _ours_spec(name: str, task: str, cls: type, space: dict, *,
               c_star: bool = False, callback: bool = True, **kw) -> ModelSpec:
    """The catalogue entry of an estimator of this package: its factory
    (:func:`_ours`), its constructor defaults as the first trial, and the
    fields the worker and the tests read (``kw``: ``numba``, ``warm``,
    ``fast``, ``check_params``, ``expected_failed_checks``, ``peer``, ...)."""
    return ModelSpec(name, task, _ours(cls, c_star=c_star, callback=callback),
                     space, callback=callback, ours=True, start_from=(cls,),
                     cls=cls, c_star=c_star, **kw)


# Below C ~ 0.1 an RBF machine on 50-200 labeled points is nearly constant and
# its sign is decided by the bias alone (an accident of the tuning split).
_C = ("float", 0.1, 1000.0, True)
# Kernel widths are searched relative to the data: sigma = sigma_rel / (d Var(X)),
# scikit-learn's gamma="scale" heuristic, so one range fits every dataset.
_SIGMA = ("float", 1e-2, 1e2, True)
_LAM = ("float", 1e-6, 1e-1, True)

# ------------------------------------------- scikit-learn's common checks ----
# Checks that fit a classifier on fully labeled y (no y == -1): every
# semi-supervised estimator here refuses that with "No unlabeled samples".
FITS_FULLY_LABELED_CHECKS = (
    "check_fit_score_takes_y",
    "check_estimators_overwrite_params",
    "check_dont_overwrite_parameters",
    "check_estimators_fit_returns_self",
    "check_readonly_memmap_input",
    "check_n_features_in_after_fitting",
    "check_positive_only_tag_during_fit",
    "check_estimators_dtypes",
    "check_dtype_object",
    "check_pipeline_consistency",
    "check_estimators_nan_inf",
    "check_estimators_pickle",
    "check_f_contiguous_array_estimator",
    "check_classifier_data_not_an_array",
    "check_classifiers_train",
    "check_supervised_y_2d",
    "check_non_transformer_estimators_n_iter",
    "check_decision_proba_consistency",
    "check_methods_sample_order_invariance",
    "check_methods_subset_invariance",
    "check_fit2d_1feature",
    "check_dict_unchanged",
    "check_fit_idempotent",
    "check_fit_check_is_fitted",
    "check_n_features_in",
    "check_fit2d_predict1d",
)
# The sparse-input checks: they run once input_tags.sparse is True and fit on
# class labels too (the sparse paths are tested in tests/test_sparse_*.py).
SPARSE_FIT_CHECKS = (
    "check_estimator_sparse_tag",
    "check_estimator_sparse_array",
    "check_estimator_sparse_matrix",
)
_NEEDS_UNLABELED = ("fits on fully labeled y; a semi-supervised estimator "
                    "refuses it ('No unlabeled samples': y == -1 must mark some)")
_STRING_LABELS = ("uses string labels; y must be numeric so that y == -1 can "
                  "mark unlabeled samples")
_SEMI_XFAIL = {
    **{name: _NEEDS_UNLABELED for name in FITS_FULLY_LABELED_CHECKS},
    **{name: _NEEDS_UNLABELED for name in SPARSE_FIT_CHECKS},
    "check_classifiers_classes": _STRING_LABELS,
}
_SU_LAYOUT = ("fits on class labels (e.g. 0/1/2); SU needs y in {1 (similar "
              "pairs), -1 (unlabeled)} and rejects them as malformed pairs")
_SU_XFAIL = {
    **{name: _SU_LAYOUT for name in FITS_FULLY_LABELED_CHECKS},
    **{name: _SU_LAYOUT for name in SPARSE_FIT_CHECKS},
    "check_classifiers_classes": _SU_LAYOUT,
    "check_fit2d_1sample": (
        "one sample cannot hold a pair and an unlabeled point; the error names "
        "what is missing ('No unlabeled points') instead of '1 sample'"),
    "check_classifiers_one_label": (
        "a single class label is not SU input; it is rejected as malformed "
        "pairs, not with the 'one class' message"),
}
# The closed-form learners (SUSL, the exact S2AUC, PNU-AUC) have no n_iter_,
# so that check never fits them and passes.
_SUSL_XFAIL = {k: v for k, v in _SU_XFAIL.items()
               if k != "check_non_transformer_estimators_n_iter"}
_EXACT_AUC_XFAIL = {k: v for k, v in _SEMI_XFAIL.items()
                    if k != "check_non_transformer_estimators_n_iter"}
_PLATT_XFAIL = {"check_classifiers_train": (
    "Platt scaling fits an offset B, so argmax(predict_proba) can differ from "
    "sign(decision_function) for points near f = 0 (as for "
    "SVC(probability=True)); predict follows the decision function")}
# Quick fits of the random-feature solvers on the tests' 120-row data.
_FAST_DSG = {"max_iter": 20, "batch_size": 16, "block_size": 8, "random_state": 3}
_WARM_DSG = {"n_passes": None, "max_iter": 3}  # a few iterations, whatever the row

MODELS: dict[str, ModelSpec] = {
    "svc": ModelSpec("svc", "ssl", _svc, {"C": _C, "sigma_rel": _SIGMA},
                     labeled_only=True, start_from=(SVC,)),
    "self_training": ModelSpec(
        "self_training", "ssl", _self_training,
        {"C": _C, "sigma_rel": _SIGMA, "threshold": ("float", 0.6, 0.99, False)},
        start_from=(SVC, SelfTrainingClassifier)),
    "label_spreading": ModelSpec(
        "label_spreading", "ssl", _label_spreading,
        {"n_neighbors": ("int", 3, 30, False), "alpha": ("float", 0.05, 0.99, False)},
        start_from=(LabelSpreading,)),
    "rff_sgd": ModelSpec(
        "rff_sgd", "ssl", _rff_sgd,
        {"sigma_rel": _SIGMA, "alpha": ("float", 1e-6, 1e-1, True)}, labeled_only=True,
        start_from=(SGDClassifier,)),
    # TSGS3VM/FRS3VM weigh the *sum* of the labeled losses by C, as SVC and
    # CCCP-TSVM do, so all three search the same C range; C* = c_star_scale *
    # C n_l / n_u as for CCCP-TSVM. The default solver (L-BFGS) has no step.
    "tsgs3vm": _ours_spec(
        "tsgs3vm", "ssl", TSGS3VM,
        {"C": _C, "c_star_scale": _C_STAR_SCALE, "sigma_rel": _SIGMA},
        c_star=True, numba=True, warm=_WARM_DSG, fast=_FAST_DSG,
        check_params=({"block_size": 8, "max_features": 64, "max_iter": 10,
                       "random_state": 0},
                      {"features": "nystroem", "max_features": 32, "max_iter": 10,
                       "random_state": 0}),
        expected_failed_checks=_SEMI_XFAIL),
    # Paper 000's Algorithm 1 as printed (solver="sgd", fixed step gamma = eta0
    # = 1/eta with 0 <= log10 eta <= 3 as Sec. 6 searches; the other settings
    # are fixed in params.yaml models.fixed), so the report shows what the
    # default solver buys.
    "tsgs3vm_sgd": _ours_spec(
        "tsgs3vm_sgd", "ssl", TSGS3VM,
        {"C": _C, "c_star_scale": _C_STAR_SCALE, "sigma_rel": _SIGMA,
         "eta0": ("float", 1e-3, 0.5, True)},
        c_star=True, numba=True, warm=_WARM_DSG,
        fast={**_FAST_DSG, "solver": "sgd"},
        check_params=({"batch_size": 16, "block_size": 8, "max_iter": 5,
                       "random_state": 0, "solver": "sgd"},),
        expected_failed_checks=_SEMI_XFAIL),
    "frs3vm": _ours_spec(
        "frs3vm", "ssl", FRS3VM,
        {"C": _C, "c_star_scale": _C_STAR_SCALE, "sigma_rel": _SIGMA},
        c_star=True, numba=True, warm=_WARM_DSG,
        fast={"max_iter": 20, "batch_size": 16, "n_components": 32,
              "random_state": 3},
        check_params=({"n_components": 16, "max_iter": 10, "random_state": 0},),
        expected_failed_checks=_SEMI_XFAIL),
    "qsgs2auc": _ours_spec(
        "qsgs2auc", "auc", QSGS2AUC,
        # the default solver (L-BFGS) has no step size to search
        {"gamma": ("float", 0.0, 1.0, False), "sigma_rel": _SIGMA, "lam": _LAM},
        numba=True, warm={**_WARM_DSG, "min_iter": 1},
        fast={**_FAST_DSG, "prior": 0.5},
        # the seed-only Fourier basis and the default's Nyström one
        check_params=({"features": "fourier", "batch_size": 16, "block_size": 8,
                       "max_iter": 10, "random_state": 0},
                      {"features": "nystroem", "max_features": 32, "max_iter": 10,
                       "random_state": 0}),
        expected_failed_checks=_SEMI_XFAIL),
    "tsgsu": _ours_spec(
        "tsgsu", "su", TSGSU, {"sigma_rel": _SIGMA, "lam": _LAM},
        numba=True, warm=_WARM_DSG, fast=_FAST_DSG,
        check_params=({"features": "fourier", "max_iter": 5, "batch_size": 20,
                       "block_size": 8, "random_state": 0},
                      {"features": "nystroem", "max_features": 32, "max_iter": 5,
                       "block_size": 8, "random_state": 0}),
        expected_failed_checks=_SU_XFAIL),
    # The exact-kernel peers of the two stochastic solvers above, on the same
    # splits with the same tuning budget: SUSL (Bao et al.'s closed-form SU
    # learner, paper 002's baseline; n_centers in params.yaml), the exact
    # minimizer of QSG-S2AUC's objective (paper 003 Eq. 8-9) and PNU-AUC
    # (Sakai et al., paper 003's baseline; its trade-off eta in [-1, 1] as
    # paper 003 searches it). Same sigma_rel / lam ranges as their
    # stochastic counterparts.
    "susl": _ours_spec(
        "susl", "su", SUSL, {"sigma_rel": _SIGMA, "lam": _LAM}, callback=False,
        peer=True, warm={"n_centers": 20},
        fast={"n_centers": 20, "random_state": 0},
        check_params=({"n_centers": 20, "random_state": 0},),
        expected_failed_checks=_SUSL_XFAIL),
    # Lu et al.'s unbiased UU learner on the SU input (paper 002's other
    # baseline), trained by minibatch SGD on center coefficients like SUSL's.
    "cuu": _ours_spec(
        "cuu", "su", CUU, {"sigma_rel": _SIGMA, "lam": _LAM}, callback=False,
        peer=True, numba=True,
        warm={"max_iter": 3, "n_centers": 20},
        fast={"max_iter": 5, "batch_size": 20, "n_centers": 20, "random_state": 0},
        check_params=({"max_iter": 5, "batch_size": 20, "n_centers": 20,
                       "random_state": 0},),
        expected_failed_checks=_SU_XFAIL),
    "s2auc_exact": _ours_spec(
        "s2auc_exact", "auc", ExactS2AUC,
        {"gamma": ("float", 0.0, 1.0, False), "sigma_rel": _SIGMA, "lam": _LAM},
        callback=False, peer=True, fast={"prior": 0.5}, check_params=({},),
        expected_failed_checks=_EXACT_AUC_XFAIL),
    "pnu_auc": _ours_spec(
        "pnu_auc", "auc", PNUAUC,
        {"eta": ("float", -1.0, 1.0, False), "sigma_rel": _SIGMA, "lam": _LAM},
        callback=False, peer=True, fast={"prior": 0.5}, check_params=({},),
        expected_failed_checks=_EXACT_AUC_XFAIL),
    "cccp_tsvm": _ours_spec(
        "cccp_tsvm", "ssl", CCCPTSVM,
        {"C": _C, "c_star_scale": _C_STAR_SCALE,
         "s": ("float", -0.9, 0.0, False), "sigma_rel": _SIGMA},
        c_star=True, callback=False, numba=True, fast={"max_cccp_iter": 5},
        check_params=({"max_cccp_iter": 5},), expected_failed_checks=_SEMI_XFAIL),
    "ramp_svm": _ours_spec(
        "ramp_svm", "ssl", RampSVM,
        {"C": _C, "s": ("float", -0.9, 0.0, False), "sigma_rel": _SIGMA},
        callback=False, labeled_only=True,  # supervised (Alg. 1.2)
        numba=True,
        fast={"max_cccp_iter": 5, "init_fraction": 0.5, "random_state": 3},
        check_params=({"max_cccp_iter": 5},), expected_failed_checks=_PLATT_XFAIL),
}


# The pipeline's own parameters at their documented rules: sigma = 1 / (d Var X)
# (scikit-learn's gamma="scale") and C* = C n_l / n_u (paper 000 Sec. 6).
_RULES = {"sigma_rel": 1.0, "c_star_scale": 1.0}


def _constructor_default(name: str, key: str, usable):
    """The default of constructor parameter ``key`` in the first class of
    ``start_from`` whose default is ``usable``, else None."""
    for cls in MODELS[name].start_from:
        param = inspect.signature(cls.__init__).parameters.get(key)
        if param is not None and usable(param.default):
            return param.default
    return None


def start_params(name: str, overrides: dict | None = None) -> dict:
    """The first configuration a study of ``name`` tries: each searched
    parameter at its rule (``sigma_rel``, ``c_star_scale`` = 1) or at the
    constructor default of the first class of ``start_from`` that has it
    (a categorical parameter too, when its default is one of the choices).

    A value that is missing, fixed by ``overrides`` or outside the (possibly
    overridden) range is left out, so the sampler draws it.  Starting every
    study from the defaults a user would try first means a 10-trial search
    never ends worse than its random draws *and* the default (paper 004 picks
    C* by the rule before any search)."""
    out = {}
    for key, ov in (overrides or {}).items():
        if is_choices(ov):  # the constructor default, when it is a choice
            value = _constructor_default(name, key,
                                         lambda v, c=ov["choices"]: v in c)
            if value is not None:
                out[key] = value
    for key, (kind, low, high, _log) in MODELS[name].space.items():
        ov = (overrides or {}).get(key)
        if ov is not None and not isinstance(ov, list | tuple):
            continue  # fixed, or a categorical choice (above)
        if ov is not None:
            low, high = ov[0], ov[1]
        value = _RULES.get(key)
        if value is None:
            value = _constructor_default(name, key,
                                         lambda v: isinstance(v, int | float))
        if value is None or isinstance(value, bool) or not low <= value <= high:
            continue
        out[key] = int(value) if kind == "int" else float(value)
    return out


def check_models(names) -> None:
    """Raise, naming the known models, when a requested model is not in the
    registry."""
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        raise KeyError(f"unknown model(s) {unknown}; known: {sorted(MODELS)}")


def is_choices(value) -> bool:
    """A categorical search override, ``{"choices": [v1, v2, ...]}``."""
    return isinstance(value, Mapping) and set(value) == {"choices"}


def suggest(trial, name: str, overrides: dict | None = None) -> dict:
    """Sample the search space of ``name`` with an Optuna trial.

    ``overrides`` (from ``params.yaml``) may replace a range with
    ``[low, high]`` / ``[low, high, log]``, fix a value with a scalar, or
    search a constructor parameter among ``{"choices": [...]}`` (Optuna's
    ``suggest_categorical``; e.g. TSGS3VM's ``unlabeled_loss``).
    """
    out = {}
    space = MODELS[name].space
    for key, ov in (overrides or {}).items():
        if key not in space and is_choices(ov):
            out[key] = trial.suggest_categorical(key, list(ov["choices"]))
    for key, (kind, low, high, log) in space.items():
        ov = (overrides or {}).get(key)
        if is_choices(ov):
            out[key] = trial.suggest_categorical(key, list(ov["choices"]))
            continue
        if ov is not None and not isinstance(ov, list | tuple):
            out[key] = ov
            continue
        if ov is not None:
            low, high = ov[0], ov[1]
            log = bool(ov[2]) if len(ov) > 2 else log
        if kind == "int":
            out[key] = trial.suggest_int(key, int(low), int(high), log=log)
        else:
            out[key] = trial.suggest_float(key, float(low), float(high), log=log)
    return out


def check_fixed_vs_searched(name: str, fixed: dict, overrides: dict | None = None,
                            *, where: str = "") -> None:
    """Refuse a setting both fixed (``models.fixed``) and searched by ``tune``.

    :func:`build` lays the tuned values over the fixed ones, so a fixed value of
    a searched parameter would be silently ignored.  A parameter of the search
    space is fixed in one place only: a scalar ``tune.space.<model>.<param>``.
    ``sigma`` counts as searched when ``sigma_rel`` is (the tuned width replaces
    it).  ``overrides`` (``tune.space.<model>``) is accepted for the message.
    """
    searched = set(MODELS[name].space) | set(overrides or {})
    if "sigma_rel" in searched:
        searched.add("sigma")
    clash = sorted(set(fixed or {}) & searched)
    if clash:
        at = f" (dataset {where})" if where else ""
        raise ValueError(
            f"models.fixed / fixed_by_dataset set {clash} for {name}{at}, but they "
            f"are tune parameters and the tuned value would win; remove them from "
            f"models.fixed (to fix one, set tune.space.{name}.<param>: <value>)")


def build(name: str, params: dict, fixed: dict, ctx: FitContext):
    """Instantiate model ``name`` with tuned ``params`` over ``fixed`` settings."""
    spec = MODELS[name]
    merged = {**spec.defaults, **(fixed or {}), **params}
    if "sigma_rel" in merged:
        merged["sigma"] = float(merged.pop("sigma_rel")) * ctx.sigma_scale
    return spec.factory(merged, ctx)


def make(name: str, params: dict, seed: int):
    """The estimator of catalogue entry ``name`` with its constructor parameters
    as given (``sigma``, ``C_star``: no search-space rule applies) and
    ``random_state=seed`` where the class takes one: a benchmark row's model."""
    cls = MODELS[name].cls
    if cls is None:
        raise ValueError(f"{name}: the catalogue entry names no estimator class")
    if isinstance(params.get("solver_options"), dict):  # as a protocol file writes it
        params = {**params,
                  "solver_options": SolverOptions.from_dict(params["solver_options"])}
    if "random_state" in inspect.signature(cls).parameters:
        return cls(random_state=seed, **params)
    return cls(**params)


def scores(est, X: np.ndarray) -> np.ndarray:
    """Continuous score for the positive class (class 1) of a binary model."""
    if hasattr(est, "decision_function"):
        s = np.asarray(est.decision_function(X))
        if s.ndim == 2 and s.shape[1] == 2:
            s = s[:, 1]
        if s.ndim == 1:
            return s.astype(np.float64)
    proba = np.asarray(est.predict_proba(X))
    return proba[:, -1].astype(np.float64)


def objective(task: str, y_true: np.ndarray, y_pred: np.ndarray, s: np.ndarray):
    """Validation loss minimised by the tune stage: 1 - AUC for ``auc``, else
    the error rate plus ``(1 - AUC) / (2 n)`` for binary labels.

    The second term only breaks ties: it is below half of one error (1/n), so
    it never reorders two configurations whose error rates differ. Without it,
    50 labels (g50c) leave most trials tied at one or two errors and the study
    keeps the first of them, whatever its margin."""
    from sklearn.metrics import roc_auc_score

    y_true = np.asarray(y_true)
    auc_ok = (len(np.unique(y_true)) == 2 and s is not None
              and np.ndim(s) == 1 and np.all(np.isfinite(s)))
    if task == "auc":
        return float(1.0 - roc_auc_score(y_true, s)) if auc_ok else 1.0
    err = float(np.mean(np.asarray(y_pred) != y_true))
    if auc_ok:
        err += (1.0 - float(roc_auc_score(y_true, s))) / (2.0 * y_true.size)
    return err


class ValidationMonitor:
    """``callback(estimator, n_iter)`` that scores the model on a validation set.

    ``on_value(n_iter, loss, elapsed)`` receives the validation loss and the
    training time so far *excluding* the time spent in this callback, so fit
    times measured around a monitored fit can subtract :attr:`overhead`.
    """

    def __init__(self, task, X_val, y_val, on_value=None):
        self.task, self.X_val, self.y_val = task, X_val, y_val
        self.on_value = on_value
        self.overhead = 0.0
        self.history: list[tuple[int, float, float]] = []
        self._t0 = time.perf_counter()

    def start(self) -> None:
        self.overhead = 0.0
        self.history = []
        self._t0 = time.perf_counter()

    def __call__(self, est, n_iter: int) -> None:
        t = time.perf_counter()
        s = scores(est, self.X_val)
        pred = est.predict(self.X_val)
        loss = objective(self.task, self.y_val, pred, s)
        if not math.isfinite(loss):
            loss = 1.0
        elapsed = t - self._t0 - self.overhead
        self.history.append((int(n_iter), loss, elapsed))
        try:
            if self.on_value is not None:
                self.on_value(int(n_iter), loss, elapsed)  # may raise TrialPruned
        finally:
            self.overhead += time.perf_counter() - t
