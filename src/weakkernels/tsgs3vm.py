"""TSGS3VM and FRS3VM: semi-supervised SVM by triply stochastic functional gradients.

Geng, Gu, Li, Shi, Zheng, Huang, *Scalable Semi-Supervised SVM via Triply
Stochastic Gradients*, IJCAI 2019 (paper 000; arXiv copy with appendix: 001).

Objective, paper 000 Eq. (1)::

    R(f) = 1/2 ||f||_H^2 + C/n_l sum_{(x,y) in L} l(f(x), y) + C* E_{x~P} u(f(x))

with the hinge loss ``l`` on labeled points and a non-convex symmetric loss ``u``
on unlabeled points (Table 2). Each iteration samples a labeled minibatch, an
unlabeled minibatch and a block of random features -- three sources of
randomness, Eq. (5)-(6) -- and applies the update rule Eq. (7) (Algorithm 1);
prediction regenerates the features from their seeds (Algorithm 2).

Two options from the S3VM literature are added (see the class docstring): the
balancing constraint of Collobert et al. (paper 004 Eq. 1.13; by default on
outputs clipped to the margin, ``balance="clipped"``, for a binary problem;
as printed, ``"mean"``, with the symmetric hinge, for one-vs-rest) and an
annealing of C*. Both are on by default because they win on the benchmarks
(docs/fidelity.md, paper 000's departures); ``balance="none", anneal=0`` is the
algorithm exactly as printed.
"""

from __future__ import annotations

import dataclasses
import math
import warnings
from functools import partial
from numbers import Integral, Real

import numpy as np
from sklearn.model_selection import StratifiedKFold, train_test_split
from sklearn.utils._param_validation import Interval, StrOptions

from weakkernels._artifact import register
from weakkernels._base import FitData, RandomFeatureClassifier
from weakkernels._calibration import fit_platt, platt_proba
from weakkernels._constraints import C_STAR, RAMP_S, C
from weakkernels._dask import is_dask_collection, map_rows
from weakkernels._dsg import (
    SCHEDULES,
    FunctionalModel,
    Problem,
    check_sgd_curve,
    default_blocks,
    seeded_sample,
    step_size,
)
from weakkernels._options import options_of
from weakkernels._s3vm_docs import fill_doc
from weakkernels._s3vm_losses import (
    _ANCHORS,
    _BALANCE,
    FLAT_LABELED,
    FLAT_UNLABELED,
    LABELED_LOSSES,
    UNLABELED_LOSSES,
    balancing_bias,
    check_sgd_outputs,
    labeled_loss,
    labeled_loss_curvature,
    labeled_loss_grad,
    ramp_cccp_convex,
    ramp_cccp_slope,
    resolve_auto,
    unlabeled_loss,
    unlabeled_loss_curvature,
    unlabeled_loss_grad,
)

# public here as before the split (tests, docs/fidelity.md)
from weakkernels._s3vm_losses import hinge_grad as hinge_grad
from weakkernels._selection import (
    AUTO_CV_MAX_ROWS,
    SELECTIONS,
    c_star_rule,
    one_se_stage,
    resolve_selection,
)
from weakkernels._validation import (
    LabeledScoreMixin,
    check_fitted_model,
    check_unlabeled_predictions,
    validate_semi_supervised,
)
from weakkernels.random_features import as_compute_rows


def _held_out_errors(Y: np.ndarray, f: np.ndarray, rows) -> np.ndarray:
    """0/1 errors of the outputs ``f`` (m, K) on the held-out rows ``rows``
    (None: all) of targets ``Y`` (+1/-1, (n, K)), decided as ``predict``
    does: the sign of one output, the arg max of one-vs-rest outputs."""
    Y = Y if rows is None else Y[rows]
    if Y.shape[1] == 1:
        return ((f[:, 0] > 0) != (Y[:, 0] > 0)).astype(np.float64)
    return (np.argmax(f, axis=1) != np.argmax(Y, axis=1)).astype(np.float64)


def _balance_name(balance):
    """``balance`` with the deprecated booleans named: True is ``"mean"``,
    False ``"none"`` (a FutureWarning says so; removed in 0.3)."""
    if not isinstance(balance, (bool, np.bool_)):
        return balance
    name = "mean" if balance else "none"
    warnings.warn(f'balance={bool(balance)} is deprecated and will be removed in '
                  f'0.3: pass balance="{name}", its name.', FutureWarning,
                  stacklevel=4)
    return name


# the S3VMs' own parameters (the shared ones: weakkernels._base)
_S3VM_CONSTRAINTS = {
    "C": C,
    "C_star": C_STAR,
    "loss": [StrOptions(set(LABELED_LOSSES))],
    "unlabeled_loss": [StrOptions({*UNLABELED_LOSSES, "auto"})],
    "s": RAMP_S,
    "learning_rate": [StrOptions(set(SCHEDULES))],
    "balance": [StrOptions({"auto", "mean", "quantile", "none", "supervised",
                            "clipped"}),
                    "boolean"],
    "anneal": [Interval(Real, 0, 1, closed="left")],
    "selection": [StrOptions(set(SELECTIONS)), None],
    # an int (folds) and None (no choice): deprecated, see resolve_selection
    "validation_fraction": [Interval(Real, 0, 1, closed="neither"),
                            Interval(Integral, 2, None, closed="left"),
                            StrOptions({"auto"}), None],
    "cv": [Interval(Integral, 2, None, closed="left")],
}


class _S3VMBase(LabeledScoreMixin, RandomFeatureClassifier):
    """Shared fit/predict of TSGS3VM and FRS3VM (they differ in the feature
    layout): paper 000 Eq. (1) on labeled (``y`` a class) and unlabeled
    (``y == -1``) rows."""

    _divergence_hint = "eta0 (step size) or C"
    _keep_float32 = True

    # -- fit hooks (RandomFeatureClassifier) --------------------------------
    def _fit_data(self, X, y) -> FitData:
        X, y, labeled, classes = validate_semi_supervised(
            self, X, y, keep_float32=True, accept_sparse=True
        )
        self.classes_ = classes
        # Only the (few) labeled rows are copied; unlabeled rows are gathered
        # from X by index, so X may be a memory-mapped file larger than RAM
        # (out-of-core training).
        idx_u = np.flatnonzero(~labeled)
        XL = as_compute_rows(X[labeled], np.dtype(self.dtype))
        yl = y[labeled]
        return FitData(
            X=X, set_sizes=(XL.shape[0], idx_u.size), n_columns=X.shape[1],
            first=(X, np.flatnonzero(labeled)), rest=(X, idx_u),
            n_outputs=1 if classes.size == 2 else classes.size,
            label_counts=np.unique(yl, return_counts=True)[1],
            n_labeled=XL.shape[0], XL=XL, yl=yl, idx_u=idx_u)

    def _prepare(self, data: FitData) -> None:
        """The targets, the resolved defaults and C*."""
        K, yl, classes = data.n_outputs, data.yl, self.classes_
        # +1/-1 targets per output: binary uses classes_[1] as the positive
        # class, multiclass is one-vs-rest over shared features and shared
        # unlabeled data.
        if K == 1:
            data.Y = np.where(yl == classes[1], 1.0, -1.0)[:, None]
        else:
            data.Y = np.where(yl[:, None] == classes[None, :], 1.0, -1.0)
        # Balancing constraint (paper 004 Eq. 1.13): mean f on U = mean y on L.
        data.r = data.Y.mean(axis=0)
        self.unlabeled_loss_ = resolve_auto("unlabeled_loss", self.unlabeled_loss, K)
        self.balance_ = resolve_auto("balance", _balance_name(self.balance), K)
        n_l, n_u = data.set_sizes
        # Paper 004's rule C* = C L / U (per-point weights): the unlabeled term
        # as a whole weighs as much as the labeled one.
        C_star = (c_star_rule(float(self.C), n_l, n_u) if self.C_star is None
                  else float(self.C_star))
        self.C_star_ = C_star
        # (C* = 0 leaves nothing to choose: every candidate is a multiple)
        self.selection_, value = resolve_selection(
            self.selection, self.validation_fraction, self.cv, yl, self.solver,
            data.X.shape[0]) if C_star > 0 else (None, None)
        data.distributed = hasattr(data.X, "primal_set")  # a Dask input
        if (self.selection_ == "cv" and data.distributed
                and data.X.shape[0] <= AUTO_CV_MAX_ROWS):
            # a Dask input small enough to cross-validate is fitted on the
            # client, as the same rows in memory are (the same model bit for
            # bit): the ramp_cccp candidate re-linearises its slopes there,
            # which tasks that received the loss once would not follow
            X = data.X[slice(None)]
            data.X, data.first, data.rest = X, (X, data.first[1]), (X, data.rest[1])
        self.validation_fraction_ = value if self.selection_ == "holdout" else None
        self.n_folds_ = value if self.selection_ == "cv" else None

    def _check_s3vm_params(self, data: FitData) -> None:
        """Refuse the parameter combinations the solver cannot run."""
        sgd = self.solver == "sgd"
        schedule = SCHEDULES[self.learning_rate]
        if sgd and self.balance_ == "supervised":
            raise ValueError(
                'balance="supervised" needs solver="lbfgs" (it anchors the '
                "constraint on the first, supervised annealing stage)."
            )
        if (sgd and step_size(schedule, float(self.eta0), 0, data.n_iter) >= 1.0
                and schedule != 1):
            raise ValueError(
                f"eta0={self.eta0} gives a step >= 1 with learning_rate="
                f"{self.learning_rate!r} and T={data.n_iter} iterations; the "
                "update (1 - step) f would flip f. Lower eta0."
            )
        cccp = self.unlabeled_loss_ == "ramp_cccp"
        if sgd and cccp:
            raise ValueError('unlabeled_loss="ramp_cccp" needs solver="lbfgs" '
                             "(its concave-convex steps are L-BFGS solves).")
        if cccp and data.distributed:
            # a Dask point set ships its loss to the workers once: the slopes
            # the solver re-linearises would not follow
            raise NotImplementedError(
                'unlabeled_loss="ramp_cccp" is not available on Dask inputs.')

    def _make_problem(self, data: FitData):
        self._check_s3vm_params(data)
        n_u, K = data.set_sizes[1], data.n_outputs
        data.uname = uname = self.unlabeled_loss_
        # a cross-validated choice (selection_ = "cv") with the binary
        # default loss: ramp_cccp at the rule is one more candidate, the loss
        # that follows CCCP-TSVM on cluster-structured sets (g241n)
        cv = self.selection_ == "cv"
        # (not on Dask rows: see _prepare)
        ramp_candidate = (cv and K == 1 and self.unlabeled_loss == "auto"
                          and not hasattr(data.X, "primal_set"))
        # ramp_cccp: the slope of the linearised concave part per unlabeled
        # row and output, set by the solver at each concave-convex step
        data.slope = (np.zeros((n_u, K))
                      if uname == "ramp_cccp" or ramp_candidate else None)
        # cross-validation (small problems): the held features of the
        # unlabeled rows, built once for every fold and for the final fit
        data.feature_cache = {} if cv else None
        uname, C_star = self._select(data, self.C_star_, uname, ramp_candidate)
        if C_star == 0 and self.solver == "lbfgs":
            # no unlabeled term, so nothing to balance: the supervised machine
            # (S4VM's safe reference, the inductive SVM) with a free bias
            self.balance_ = "none"
        return (self._problem(data, data.XL, data.Y, C_star, uname=uname),
                self._solve_keywords(uname))

    def _solve_keywords(self, uname: str) -> dict:
        """The step and annealing keywords of :func:`fit_expansion`."""
        schedule, eta0 = SCHEDULES[self.learning_rate], float(self.eta0)
        return dict(
            step=lambda t, T: step_size(schedule, eta0, t, T),
            # the concave-convex steps are their own continuation from their
            # start (the supervised machine, or the constant mean_L y with
            # balance="mean"): the C*-fraction stages cost accuracy on g241n
            # (docs/benchmarks/design_notes.md, "The estimators' defaults")
            anneal=0.0 if uname == "ramp_cccp" else float(self.anneal))

    def _fit_candidate(self, data: FitData, problem: Problem, uname: str):
        """One fit of the model selection (no monitor)."""
        return self._solve(problem, data, **self._solve_keywords(uname))

    def _majorize(self, data: FitData, f, rows):
        """Re-linearise the concave part at the outputs ``f`` of the unlabeled
        ``rows``; the fraction of slopes (in [-1, 1]) that moved by more than
        0.02 (a hundredth of their range)."""
        slope = data.slope
        rows = np.arange(data.set_sizes[1]) if rows is None else rows
        new = ramp_cccp_slope(f, self.s)
        moved = float(np.mean(np.abs(new - slope[rows]) > 0.02))
        slope[rows] = new
        return moved

    def _problem(self, data: FitData, XL, Y, C_star, held=None, uname=None,
                 opts=None):
        """Eq. (1) on the labeled rows ``XL`` (targets ``Y``) and every
        unlabeled row, with the unlabeled loss ``uname`` (None: the resolved
        ``unlabeled_loss_`` before any model selection); ``held``: rows and
        targets of held-out labels that only score the annealing stages
        (:class:`Problem`'s ``select``); ``opts``: its solver options (None:
        the fit's)."""
        uname = data.uname if uname is None else uname
        n_l, n_u = XL.shape[0], data.set_sizes[1]
        cccp = uname == "ramp_cccp"
        C, lname, slope = float(self.C), self.loss, data.slope
        sgd = self.solver == "sgd"
        balance, r = _BALANCE[self.balance_], data.r

        def pointwise(s, f, rows, m, w):
            """Eq. (1) with C and C* on sums (scikit-learn's SVC
            convention): set ``s``'s part at the outputs ``f`` of its
            ``rows`` (of ``m`` drawn), so that the sum over a sample
            estimates the full sum."""
            if s == 0:
                YL = Y[rows]
                k = C * n_l / m
                margin = YL * f
                return (k * labeled_loss(lname, margin).sum(),
                        k * labeled_loss_grad(lname, margin) * YL)
            k = C_star * w * n_u / m
            if cccp:
                # the convex majorant of paper 004 Eq. 1.12 at the last
                # linearisation: convex part + slope * f (the objective
                # up to a constant that does not depend on f)
                val, grad = ramp_cccp_convex(f)
                b = slope[rows]
                return k * (val.sum() + float(np.sum(b * f))), k * (grad + b)
            return (k * unlabeled_loss(uname, f, self.s).sum(),
                    k * unlabeled_loss_grad(uname, f, self.s))

        def curvature(s, f, rows, m, w):
            """The generalised second derivative of ``pointwise``."""
            if s == 0:
                return C * n_l / m * labeled_loss_curvature(lname, Y[rows] * f)
            k = C_star * w * n_u / m
            return k * unlabeled_loss_curvature(uname, f, self.s)

        def loss(fs, idx, sizes, w):
            parts = [pointwise(s, f, np.arange(f.shape[0]) if i is None else i,
                               f.shape[0], w)
                     for s, (f, i) in enumerate(zip(fs, idx, strict=True))]
            return sum(p[0] for p in parts), [p[1] for p in parts]

        return Problem(
            [(XL, None), (data.X, data.idx_u)] + ([(held[0], None)] if held else []),
            data.n_outputs, loss, lam=1.0,
            intercept="balance" if balance else ("none" if sgd else "free"),
            balance=lambda gU: balancing_bias(balance, gU, r),
            balance_target=_ANCHORS[balance](r) if balance in _ANCHORS
            and not sgd else r,
            uses=lambda w: [True, w * C_star > 0] + [False] * bool(held),
            pointwise=pointwise, curvature=curvature, outputs_on=1,
            flat=lambda s, w: (lname in FLAT_LABELED if s == 0
                               else uname in FLAT_UNLABELED),
            majorize=partial(self._majorize, data) if cccp else None,
            select=(2, partial(_held_out_errors, held[1])) if held else None,
            options=opts or data.opts, feature_cache=data.feature_cache,
        )

    def _select(self, data: FitData, C_star: float, uname: str,
                ramp_candidate: bool):
        """Paper 004's choice of C* on labeled validation rows
        (``selection_``): by k-fold cross-validation or on one held-out
        part. Returns the unlabeled loss and the C* kept (the given ones
        without a choice)."""
        seed, slope = data.seed, data.slope
        XL, Y, yl, n_l = data.XL, data.Y, data.yl, data.set_sizes[0]
        cccp = uname == "ramp_cccp"

        def fit(problem, uname=uname):
            return self._fit_candidate(data, problem, uname)

        opts = data.opts
        if opts.selection_newton_max_iter is not None:  # a cap of their own
            opts = dataclasses.replace(
                opts, newton_max_iter=opts.selection_newton_max_iter,
                newton_finish=False)

        def problem_for(XL, Y, C_star, held=None, uname=uname):
            return self._problem(data, XL, Y, C_star, held, uname, opts)

        if self.selection_ == "cv":
            # paper 004's choice of C* on labeled validation rows, by k-fold
            # cross-validation where the labels are too few to hold a part
            # out: every candidate fitted without each fold and scored on
            # it; the errors pooled over the folds (each label scored once,
            # by machines that did not see it) decide by the one-SE rule
            # against the supervised machine (C* = 0), as the held-out
            # choice does: the unlabeled term is kept where its gain is
            # resolved, at every size (docs/benchmarks/solvers.md)
            folds = StratifiedKFold(self.n_folds_, shuffle=True,
                                    random_state=seed % 2**32)
            pooled = {}
            for tr, va in folds.split(np.zeros((n_l, 1)), yl):
                held = (XL[va], Y[va])
                runs = [(uname, fit(problem_for(XL[tr], Y[tr], C_star, held)))]
                if ramp_candidate:
                    slope[:] = 0.0  # each run starts from its own linearisation
                    runs.append(("ramp_cccp", fit(problem_for(
                        XL[tr], Y[tr], C_star, held, "ramp_cccp"), "ramp_cccp")))
                for loss, run in runs:
                    for w, err in run.stage_scores:
                        if loss == uname or w > 0:  # one supervised candidate
                            pooled.setdefault((loss, w), []).append(err)
            cands = list(pooled)
            keep = cands[one_se_stage([np.concatenate(pooled[c]) for c in cands],
                                      ref=cands.index((uname, 0.0)))]
            self.validation_errors_ = np.array(
                [(C_star * w, np.concatenate(pooled[(loss, w)]).mean())
                 for loss, w in cands])
            self.validation_losses_ = tuple(loss for loss, _ in cands)
            uname = self.unlabeled_loss_ = keep[0]
            C_star = self.C_star_ = C_star * keep[1]
            if slope is not None:
                slope[:] = 0.0
        elif self.selection_ == "holdout":
            # paper 004's choice of C* on labeled validation rows: the
            # stages fitted without a seeded, stratified part of the labels,
            # carried up to the largest held sample level and scored there
            # on it; then the fit on every label at the C* kept
            tr, va = (np.sort(i) for i in train_test_split(
                np.arange(n_l), test_size=self.validation_fraction_, stratify=yl,
                random_state=seed % 2**32))
            chosen = fit(problem_for(XL[tr], Y[tr], C_star, (XL[va], Y[va])))
            self.validation_errors_ = np.array(
                [(C_star * w, err) for w, err in chosen.stage_errors])
            self.validation_losses_ = (uname,) * len(chosen.stage_errors)
            C_star = self.C_star_ = C_star * chosen.weight
            if cccp:
                slope[:] = 0.0  # the fit starts from its own linearisation
        return uname, C_star

    def _set_offset(self, model: FunctionalModel, b, data: FitData) -> None:
        balance = _BALANCE[self.balance_]
        # solver="lbfgs" holds the mean and clipped constraints on all its
        # unlabeled rows (the bias it returns); SGD's per-minibatch bias and
        # the quantile rule are set here, on a fixed sample.
        if balance == 2 or (balance in (1, 4) and self.solver == "sgd"):
            # Final bias from a fixed sample of unlabeled points.
            idx_u = data.idx_u
            rows = idx_u[seeded_sample(idx_u.size, 4096, data.seed)]
            XB = as_compute_rows(data.X[rows], model.spec.dtype)
            self.intercept_ = balancing_bias(balance, model.evaluate(XB), data.r)
        else:
            self.intercept_ = np.array(b, dtype=np.float64).reshape(model.K)

    def _check_solution(self, result, data: FitData) -> None:
        if data.feature_cache is not None:
            data.feature_cache.clear()  # the final fit's features, no longer read
        if result.balance_outputs is not None and _BALANCE[self.balance_] != 2:
            # the outputs on every unlabeled row, as the machine predicts them
            # ("quantile" moves the bias after the solve: not these outputs)
            check_unlabeled_predictions(self, result.balance_outputs, data.Y)

    def _finish(self, result, data: FitData) -> None:
        """The fitted-model checks, then Platt scaling on the labeled points:
        the only ones with known labels."""
        XL, Y, K = data.XL, data.Y, data.n_outputs
        # XL was validated with X: not again (a DataFrame's feature names are
        # not on the ndarray, and re-validating warned on every fit).
        fL = self._decision(XL)
        # non-finite -> ValueError naming the kernel; constant -> warning
        check_fitted_model(self, np.r_[self.coef_.ravel(), self.intercept_], fL)
        diverged = False
        if self.solver == "sgd" and self.kernel in ("rbf", "laplacian"):
            # Fourier features. J(0), Eq. (1) at f = 0, bounds every
            # minimiser: ||f||_H^2 <= 2 J(0)
            n_l, n_u = data.set_sizes
            j0 = (float(self.C) * n_l
                  * float(labeled_loss(self.loss, np.zeros(1))[0])
                  + self.C_star_ * n_u * float(unlabeled_loss(
                      self.unlabeled_loss_, np.zeros(1), self.s)[0]))
            diverged = check_sgd_outputs(self, fL, j0)
        if not diverged:  # one warning a fit
            # the loss along the run: any kernel (the bound above needs the
            # Fourier features' k(x, x) <= 2), and a rise of the loss below it
            check_sgd_curve(self, result)
        fL = fL[:, None] if fL.ndim == 1 else fL
        self.platt_ = np.array(
            [fit_platt(fL[:, k], (Y[:, k] > 0).astype(float)) for k in range(K)]
        )

    # -- prediction --------------------------------------------------------
    def _width(self):
        """Columns of the decision values (None: one value per row)."""
        return None if self.classes_.size == 2 else self.classes_.size

    def _decision(self, X):
        """:meth:`decision_function` on validated rows: ``f(x) + b``, shape
        (n,) for binary, (n, n_classes) for one-vs-rest."""
        f = self.spec_.decision(X, self.coef_, self.n_blocks_) + self.intercept_
        return f[:, 0] if f.shape[1] == 1 else f

    def predict_proba(self, X):
        """Class probabilities by Platt scaling fitted on the labeled points;
        one-vs-rest probabilities are normalized to sum to one."""
        if is_dask_collection(X):
            return map_rows(self.predict_proba, X, self.classes_.size)
        f = self.decision_function(X)
        f = f[:, None] if f.ndim == 1 else f
        P = np.column_stack(
            [platt_proba(f[:, k], *self.platt_[k]) for k in range(f.shape[1])]
        )
        if P.shape[1] == 1:
            return np.column_stack([1.0 - P[:, 0], P[:, 0]])
        P = np.clip(P, 1e-12, None)
        return P / P.sum(axis=1, keepdims=True)

    # -- model files -------------------------------------------------------
    def _add_state(self, meta, arrays):
        meta.update(C_star=self.C_star_, unlabeled_loss=self.unlabeled_loss_,
                    balance=self.balance_)
        arrays.update(intercept=np.asarray(self.intercept_, dtype=np.float64),
                      platt=self.platt_)

    def _set_own_state(self, meta, arrays):
        self.C_star_ = float(meta["C_star"])
        self.intercept_ = arrays["intercept"]
        self.platt_ = arrays["platt"]
        # files written before "auto" existed: the parameters were what ran
        self.unlabeled_loss_ = meta.get("unlabeled_loss", self.unlabeled_loss)
        self.balance_ = meta.get("balance", self.balance)


@register
@fill_doc
class TSGS3VM(_S3VMBase):
    """Semi-supervised SVM on seeded random features (paper 000).

    Minimises paper 000 Eq. (1) (with ``C`` on sums, see below) over an
    expansion of random features generated from ``(seed, block)``; the model
    stores only seeds and coefficients and prediction regenerates the features
    (Algorithm 2). ``solver="sgd"`` is the triply stochastic Algorithm 1: every
    iteration samples ``batch_size`` labeled and unlabeled points and a fresh
    block of ``block_size`` features and applies Eq. (7). The default
    ``solver="lbfgs"`` solves the same objective on ``max_features`` seeded
    features deterministically; it gets the exact-kernel SVM's accuracy where
    Algorithm 1 needs orders of magnitude more steps (the documentation's
    benchmark pages; docs/fidelity.md, paper 000's departure 1).

    The paper's algorithm as printed is ``TSGS3VM(solver="sgd", loss="hinge",
    unlabeled_loss="shg", balance="none", anneal=0, learning_rate="fixed",
    eta0=1/eta, C=C_paper/n_l)`` (with ``C_star`` set explicitly).

    Unlabeled samples are marked ``y == -1`` in ``fit(X, y)``.

    Parameters
    ----------
    {shared}
    block_size : int, default=32
        Random features per block (``solver="sgd"``: added per iteration).
    max_features : int or None, default=None
        Feature budget. ``solver="lbfgs"``: the expansion's size (None: the
        rule of :func:`weakkernels._dsg.primal_features`, 1024 to ~5 000,
        growing as ~16 sqrt(n); with Nyström features
        :func:`weakkernels._dsg.nystroem_size`).
        ``solver="sgd"``: once reached, no new blocks are added and steps
        update existing blocks cyclically (None: unbounded, as the paper).

    Attributes
    ----------
    {attributes}

    See Also
    --------
    FRS3VM : the same objective on one fixed block of random features.
    weakkernels.CCCPTSVM : the exact-kernel transductive SVM of paper 004.
    weakkernels.model_selection.LabeledKFold : cross-validation folds over
        the labeled rows only.

    References
    ----------
    .. [1] Geng, X., Gu, B., Li, X., Shi, W., Zheng, G., Huang, H. Scalable
       semi-supervised SVM via triply stochastic gradients. IJCAI 2019.
    .. [2] Collobert, R., Sinz, F., Weston, J., Bottou, L. Large scale
       transductive SVMs. JMLR 7, 2006 (the ``C* = C n_l / n_u`` rule and the
       balancing constraint).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_moons
    >>> from weakkernels import TSGS3VM
    >>> X, y = make_moons(n_samples=300, noise=0.1, random_state=0)
    >>> y_semi = np.full(300, -1)            # -1 marks unlabeled rows
    >>> y_semi[:20] = y[:20]
    >>> clf = TSGS3VM(C=10, selection=None, random_state=0).fit(X, y_semi)
    >>> clf.classes_
    array([0, 1])
    >>> bool(clf.score(X[20:], y[20:]) > 0.8)
    True
    """

    _parameter_constraints = RandomFeatureClassifier.constraints(
        "n_passes", "block_size", "max_features", **_S3VM_CONSTRAINTS)

    def __init__(
        self,
        *,
        C=1.0,
        C_star=None,
        kernel="rbf",
        sigma="scale",
        degree=2,
        coef0=1.0,
        loss="squared_hinge",
        unlabeled_loss="auto",
        s=-0.3,
        solver="lbfgs",
        tol=1e-5,
        batch_size=256,
        block_size=32,
        n_passes=1.0,
        max_iter=None,
        learning_rate="decay",
        eta0=1.0,
        balance="auto",
        anneal=0.5,
        selection="auto",
        validation_fraction="auto",
        cv=5,
        features="auto",
        max_features=None,
        dtype="float32",
        random_state=None,
        callback=None,
        callback_every=10,
        solver_options=None,
    ):
        self.C = C
        self.C_star = C_star
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.loss = loss
        self.unlabeled_loss = unlabeled_loss
        self.s = s
        self.solver = solver
        self.tol = tol
        self.batch_size = batch_size
        self.block_size = block_size
        self.n_passes = n_passes
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.balance = balance
        self.anneal = anneal
        self.selection = selection
        self.validation_fraction = validation_fraction
        self.cv = cv
        self.features = features
        self.max_features = max_features
        self.dtype = dtype
        self.random_state = random_state
        self.callback = callback
        self.callback_every = callback_every
        self.solver_options = solver_options


@register
@fill_doc
class FRS3VM(_S3VMBase):
    """The same S3VM objective on one fixed block of ``n_components`` random
    features: paper 000's FRS3VM baseline.

    With ``solver="sgd"`` (the paper's baseline) every step is a stochastic
    gradient step in the primal of the fixed features, against TSGS3VM's fresh
    block per step. With the default ``solver="lbfgs"`` both estimators solve
    the same problem on a fixed expansion; they differ only in how the seeded
    features are laid out (one block of ``n_components`` here).

    The paper's baseline as printed is ``FRS3VM(solver="sgd", loss="hinge",
    unlabeled_loss="shg", balance="none", anneal=0, n_components="sqrt",
    n_passes=10)``.

    Unlabeled samples are marked ``y == -1`` in ``fit(X, y)``.

    Parameters
    ----------
    {shared}
    n_components : int, "sqrt" or None, default=None
        Number of random features; ``"sqrt"`` is the paper's
        ``ceil(sqrt(n))``, None the L-BFGS default of TSGS3VM's
        ``max_features`` (:func:`weakkernels._dsg.primal_features`).

    Attributes
    ----------
    {attributes}

    See Also
    --------
    TSGS3VM : the same objective, Nyström features by default.
    weakkernels.CCCPTSVM : the exact-kernel transductive SVM of paper 004.
    weakkernels.model_selection.LabeledKFold : cross-validation folds over
        the labeled rows only.

    References
    ----------
    .. [1] Geng, X., Gu, B., Li, X., Shi, W., Zheng, G., Huang, H. Scalable
       semi-supervised SVM via triply stochastic gradients. IJCAI 2019.
    .. [2] Collobert, R., Sinz, F., Weston, J., Bottou, L. Large scale
       transductive SVMs. JMLR 7, 2006 (the ``C* = C n_l / n_u`` rule and the
       balancing constraint).

    Examples
    --------
    >>> import numpy as np
    >>> from sklearn.datasets import make_moons
    >>> from weakkernels import FRS3VM
    >>> X, y = make_moons(n_samples=300, noise=0.1, random_state=0)
    >>> y_semi = np.full(300, -1)            # -1 marks unlabeled rows
    >>> y_semi[:20] = y[:20]
    >>> clf = FRS3VM(C=10, selection=None, random_state=0).fit(X, y_semi)
    >>> clf.classes_
    array([0, 1])
    >>> bool(clf.score(X[20:], y[20:]) > 0.8)
    True
    """

    _parameter_constraints = RandomFeatureClassifier.constraints(
        "n_passes", **_S3VM_CONSTRAINTS,
        n_components=[Interval(Integral, 1, None, closed="left"),
                      StrOptions({"sqrt"}), None])

    def __init__(
        self,
        *,
        C=1.0,
        C_star=None,
        kernel="rbf",
        sigma="scale",
        degree=2,
        coef0=1.0,
        loss="squared_hinge",
        unlabeled_loss="auto",
        s=-0.3,
        solver="lbfgs",
        tol=1e-5,
        batch_size=256,
        n_components=None,
        n_passes=10.0,
        max_iter=None,
        learning_rate="decay",
        eta0=1.0,
        balance="auto",
        anneal=0.5,
        selection="auto",
        validation_fraction="auto",
        cv=5,
        features="fourier",
        dtype="float32",
        random_state=None,
        callback=None,
        callback_every=10,
        solver_options=None,
    ):
        self.C = C
        self.C_star = C_star
        self.kernel = kernel
        self.sigma = sigma
        self.degree = degree
        self.coef0 = coef0
        self.loss = loss
        self.unlabeled_loss = unlabeled_loss
        self.s = s
        self.solver = solver
        self.tol = tol
        self.batch_size = batch_size
        self.n_components = n_components
        self.n_passes = n_passes
        self.max_iter = max_iter
        self.learning_rate = learning_rate
        self.eta0 = eta0
        self.balance = balance
        self.anneal = anneal
        self.selection = selection
        self.validation_fraction = validation_fraction
        self.cv = cv
        self.features = features
        self.dtype = dtype
        self.random_state = random_state
        self.callback = callback
        self.callback_every = callback_every
        self.solver_options = solver_options

    _size_param = "n_components"

    def _features_given(self):
        return self.n_components is not None

    def _layout(self, n_rows, set_sizes, d):
        if self.n_components == "sqrt":
            D = math.ceil(math.sqrt(n_rows))
        else:
            D = self.n_components or default_blocks("lbfgs", set_sizes, None, 1, d,
                                                    options_of(self))
        # One block holding all features, revisited every step.
        return int(D), 1
