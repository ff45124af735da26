"""The base class of the random-feature estimators: one fit shell over
:func:`weakkernels._dsg.fit_expansion`.

TSGS3VM / FRS3VM (:mod:`weakkernels.tsgs3vm`), TSGSU (:mod:`weakkernels.
tsgsu`) and QSGS2AUC (:mod:`weakkernels.qsg_s2auc`) minimise different
objectives over the same kind of model, an expansion of seeded random (or
Nyström) features. :class:`RandomFeatureClassifier` owns what they share, as
scikit-learn's ``BaseSGD`` does for its linear models: the parameter
constraints of the shared parameters (declared once, here and in
:data:`weakkernels._dsg.DSG_CONSTRAINTS`), ``fit`` as one straight line
(validate -> layout -> plan -> seed -> kernel width -> basis -> problem ->
solve -> fitted state -> checks -> calibration), ``decision_function`` /
``predict``, the model-file state and the tags. A subclass supplies its
point sets (:meth:`~RandomFeatureClassifier._fit_data`), its loss
(:meth:`~RandomFeatureClassifier._make_problem`) and, where it differs from
the default, its feature layout (:meth:`~RandomFeatureClassifier._layout`).
"""

from __future__ import annotations

from functools import partial
from numbers import Real
from types import SimpleNamespace

import numpy as np
from sklearn.base import BaseEstimator, ClassifierMixin, _fit_context
from sklearn.utils._param_validation import Interval
from sklearn.utils.validation import check_is_fitted

from weakkernels._artifact import ArtifactMixin
from weakkernels._constraints import LAM
from weakkernels._dask import dask_inputs, is_dask_collection, map_rows
from weakkernels._dsg import (
    BASIS_CONSTRAINTS,
    DSG_CONSTRAINTS,
    EXPANSION_CONSTRAINTS,
    Expansion,
    FunctionalModel,
    Problem,
    callback_monitor,
    default_blocks,
    expansion_basis,
    expansion_state,
    fit_expansion,
    iteration_budget,
    set_expansion_state,
)
from weakkernels._options import options_of
from weakkernels._plan import check_plan, plan_fit
from weakkernels._threads import one_blas_thread
from weakkernels._validation import check_divergence, validate_predict
from weakkernels.kernels import resolve_sigma
from weakkernels.random_features import NystromSpec, seed_from_random_state

# Parameters that several (not all) estimators of the family take: a subclass
# picks them by name (RandomFeatureClassifier.constraints), so each is
# declared here once.
SHARED_CONSTRAINTS = {
    **EXPANSION_CONSTRAINTS,  # block_size, max_features
    # the weight of lam/2 ||f||_H^2 (TSGSU, QSG-S2AUC)
    "lam": LAM,
    # solver="sgd": passes over the unlabeled rows (the S3VMs, QSG-S2AUC)
    "n_passes": [Interval(Real, 0, None, closed="neither")],
}


class FitData(SimpleNamespace):
    """One fit's validated rows and point sets, made by
    :meth:`RandomFeatureClassifier._fit_data` and read by the other hooks.

    Every fit sets ``X`` (the validated rows), ``set_sizes`` (rows of each
    point set of the loss, the unlabeled set last), ``n_columns``, and
    ``first`` / ``rest`` (the ``(rows, index)`` the Nyström landmarks are
    drawn from, first and then); optional: ``n_outputs`` (1),
    ``label_counts`` (labels per class of a multiclass fit, for the plan's
    messages), ``n_labeled`` (rows with one-vs-rest targets). The shell adds
    ``opts``, ``n_iter``, ``seed``, ``spec`` and ``max_blocks``; a subclass
    adds what its loss needs (targets, index arrays)."""

    def __init__(self, **fields):
        super().__init__(**{"n_outputs": 1, "label_counts": None,
                            "n_labeled": 0, **fields})


class RandomFeatureClassifier(ArtifactMixin, ClassifierMixin, BaseEstimator):
    """Base of the classifiers trained by :func:`weakkernels._dsg.fit_expansion`.

    Subclass hooks: :meth:`_fit_data` (validate ``X, y``, set ``classes_``,
    return the point sets), :meth:`_make_problem` (the loss), and where the
    defaults do not fit :meth:`_layout`, :meth:`_n_iter`, :meth:`_prepare`,
    :meth:`_set_offset`, :meth:`_decision`, :meth:`_check_solution`,
    :meth:`_finish` and the model-file hooks :meth:`_add_state` /
    :meth:`_set_own_state`. Subclasses declare ``_parameter_constraints``
    with :meth:`constraints`.
    """

    # the constraints every estimator of the family shares
    _parameter_constraints = {**DSG_CONSTRAINTS, **BASIS_CONSTRAINTS}
    # the parameter of the feature budget, named by the pre-fit plan's refusal
    _size_param = "max_features"
    # what check_divergence tells the user to lower
    _divergence_hint = "eta0 (step size)"
    # decision_function keeps float32 rows (the estimator computes in float32)
    _keep_float32 = False

    @classmethod
    def constraints(cls, *shared: str, **own) -> dict:
        """``_parameter_constraints`` of a subclass: the family's, the
        :data:`SHARED_CONSTRAINTS` named in ``shared``, and its ``own``
        (which may override one, saying why where it does)."""
        return {**RandomFeatureClassifier._parameter_constraints,
                **{name: SHARED_CONSTRAINTS[name] for name in shared}, **own}

    # -- hooks ---------------------------------------------------------------
    def _fit_data(self, X, y) -> FitData:
        """Validate ``X, y``, set ``classes_`` and return the point sets."""
        raise NotImplementedError

    def _make_problem(self, data: FitData) -> tuple[Problem, dict]:
        """The :class:`weakkernels._dsg.Problem` (point sets and loss) and the
        keywords of :func:`fit_expansion` it needs (``step``, ``anneal``)."""
        raise NotImplementedError

    def _layout(self, n_rows: int, set_sizes, d: int) -> tuple[int, int]:
        """``(block_size, max_blocks)`` for ``n_rows`` training rows of ``d``
        columns in sets of ``set_sizes``."""
        B = int(self.block_size)
        return B, default_blocks(self.solver, set_sizes, self.max_features, B, d,
                                 options_of(self))

    def _features_given(self) -> bool:
        """Whether the user fixed the feature count (else the default rule)."""
        return self.max_features is not None

    def _n_iter(self, data: FitData) -> int:
        """``n_iter`` of :func:`fit_expansion` (SGD steps, or L-BFGS
        iterations per stage)."""
        return iteration_budget(self.solver, self.max_iter, self.n_passes,
                                data.set_sizes[-1], self.batch_size,
                                getattr(self, "min_iter", 1), opts=data.opts)

    def _prepare(self, data: FitData) -> None:
        """What the loss needs once the seed and ``sigma_`` are known."""

    def _set_offset(self, model: FunctionalModel, b, data: FitData) -> None:
        """The fitted offset of the current expansion (intercept, threshold)."""

    def _check_solution(self, result: Expansion, data: FitData) -> None:
        """Checks that read the solver's features (before they are released)."""

    def _finish(self, result: Expansion, data: FitData) -> None:
        """Checks of the fitted model and calibration of ``predict_proba``."""

    def _decision(self, X):
        """:meth:`decision_function` on validated rows."""
        raise NotImplementedError

    def _add_state(self, meta: dict, arrays: dict) -> None:
        """The subclass's part of the model file."""

    def _set_own_state(self, meta: dict, arrays: dict) -> None:
        """Inverse of :meth:`_add_state`."""

    # -- fit -----------------------------------------------------------------
    @_fit_context(prefer_skip_nested_validation=True)
    def fit(self, X, y):
        """Fit on the training rows ``X`` and their labels ``y`` (the layout
        of ``y`` is the estimator's: see its docstring).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)
            Sparse input (CSR, CSC, COO) is used as CSR and never densified:
            the random-feature projections of its rows are computed from the
            stored entries (:func:`weakkernels.random_features.csr_project`).
        y : array-like of shape (n_samples,)
            ``-1`` marks an unlabeled sample (scikit-learn's semi-supervised
            convention).

        Returns
        -------
        self : object
        """
        X, y = dask_inputs(X, y)  # a dask X: rows stay on the workers
        data = self._fit_data(X, y)
        data.opts = options_of(self)
        B, max_blocks = self._layout(sum(data.set_sizes), data.set_sizes,
                                     data.n_columns)
        data.n_iter = self._n_iter(data)
        # bytes and steps from the shapes, refused before anything is allocated
        self.fit_plan_ = check_plan(self, plan_fit(
            self, n_rows=sum(data.set_sizes), n_features_in=data.n_columns,
            n_outputs=data.n_outputs, block_size=B, max_blocks=max_blocks,
            n_iter=data.n_iter, features_given=self._features_given(),
            batch_rows=len(data.set_sizes) * self.batch_size,
            n_labeled=data.n_labeled, size_param=self._size_param),
            data.label_counts)
        self.seed_ = data.seed = seed_from_random_state(self.random_state)
        self.sigma_ = resolve_sigma(self.sigma, data.X)
        self._prepare(data)
        data.spec, B, data.max_blocks, self.features_ = expansion_basis(
            self.features, solver=self.solver, kernel=self.kernel,
            sigma=self.sigma_, degree=self.degree, coef0=self.coef0,
            first=data.first, rest=data.rest,
            m=B * max_blocks if self._features_given() else None,
            block_size=B, max_blocks=max_blocks, dtype=np.dtype(self.dtype),
            seed=data.seed, opts=data.opts)
        problem, solve = self._make_problem(data)
        monitor = callback_monitor(self, partial(self._expose, data))
        result = self._solve(problem, data, monitor=monitor,
                             monitor_every=self.callback_every, **solve)
        self.n_iter_ = result.n_iter
        self.objective_curve_ = result.objective_curve
        with one_blas_thread():
            self._set_model_state(result.model, result.intercept, data)
        self._check_solution(result, data)
        result.model.release()
        self._finish(result, data)
        return self

    def _solve(self, problem: Problem, data: FitData, **kwargs) -> Expansion:
        """:func:`fit_expansion` of ``problem`` on the fit's basis."""
        return fit_expansion(
            problem, spec=data.spec, solver=self.solver,
            max_blocks=data.max_blocks, n_iter=data.n_iter,
            batch_size=self.batch_size, tol=float(self.tol), seed=data.seed,
            **kwargs)

    def _expose(self, data: FitData, model: FunctionalModel, b) -> None:
        """The callback's view of the fit: the current model as fitted state."""
        self._set_model_state(model, b, data)

    def _set_model_state(self, model: FunctionalModel, b, data: FitData) -> None:
        """Expose the current expansion as fitted attributes (usable mid-fit)."""
        self.spec_ = model.spec
        self.n_blocks_ = model.n_blocks
        self.coef_ = model.coefficients()
        check_divergence(self.coef_, self._divergence_hint)
        self.n_features_model_ = model.n_features
        self._set_offset(model, b, data)

    # -- prediction ----------------------------------------------------------
    def _width(self):
        """Columns of the decision values (None: one value per row)."""
        return None

    def decision_function(self, X):
        """Decision values of the expansion, its features regenerated from the
        seeds (Nyström models: from the stored landmarks). ``X`` may be dense
        or scipy.sparse (CSR, CSC, COO).

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,), or (n_samples, n_classes) for a
        one-vs-rest model
        """
        check_is_fitted(self)
        if is_dask_collection(X):
            return map_rows(self.decision_function, X, self._width())
        X = validate_predict(self, X, keep_float32=self._keep_float32,
                             accept_sparse=True)
        return self._decision(X)

    def predict(self, X):
        """Class labels: the sign of one decision value, the arg max of
        one-vs-rest ones.

        Parameters
        ----------
        X : array-like or scipy.sparse matrix of shape (n_samples, n_features)

        Returns
        -------
        ndarray of shape (n_samples,), values of ``classes_``
        """
        if is_dask_collection(X):
            return map_rows(self.predict, X, None)
        f = self.decision_function(X)
        if f.ndim == 1:
            return self.classes_[(f > 0).astype(int)]
        return self.classes_[np.argmax(f, axis=1)]

    # -- model files ---------------------------------------------------------
    def _artifact_state(self):
        meta, arrays = expansion_state(self)
        meta.update(seed=self.seed_, n_features_in=self.n_features_in_)
        arrays.update(classes=self.classes_)
        self._add_state(meta, arrays)
        return meta, arrays

    def _set_artifact_state(self, meta, arrays):
        set_expansion_state(self, meta, arrays)
        self.features_ = ("nystroem" if isinstance(self.spec_, NystromSpec)
                          else "fourier")
        self.seed_ = int(meta["seed"])
        self.n_features_in_ = int(meta["n_features_in"])
        self.classes_ = arrays["classes"]
        self._set_own_state(meta, arrays)

    def __sklearn_tags__(self):
        tags = super().__sklearn_tags__()
        tags.input_tags.sparse = True
        return tags
