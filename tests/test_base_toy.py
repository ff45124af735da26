"""A new random-feature solver is its point sets, its loss and its offset:
a toy subclass of :class:`weakkernels._base.RandomFeatureClassifier` (a
one-vs-rest least-squares classifier, under 60 lines) passes scikit-learn's
estimator checks with the base's fit shell, prediction and model files."""

from __future__ import annotations

import inspect

import numpy as np
from sklearn.utils.estimator_checks import check_estimator
from sklearn.utils.multiclass import check_classification_targets
from sklearn.utils.validation import validate_data

from weakkernels._base import FitData, RandomFeatureClassifier
from weakkernels._dsg import Problem


class ToyLeastSquares(RandomFeatureClassifier):
    """``1/2 mean (f(x) - y)^2 + lam/2 ||f||^2`` on +-1 targets per class."""

    _parameter_constraints = RandomFeatureClassifier.constraints(
        "lam", "block_size", "max_features", "n_passes")

    def __init__(self, *, lam=1e-2, kernel="rbf", sigma="scale", degree=2,
                 coef0=1.0, solver="lbfgs", tol=1e-5, batch_size=32,
                 block_size=16, max_features=64, n_passes=1.0, max_iter=50,
                 eta0=0.1, features="fourier", dtype="float64",
                 random_state=None, callback=None, callback_every=10,
                 solver_options=None):
        vars(self).update({k: v for k, v in locals().items() if k != "self"})

    def _fit_data(self, X, y):
        X, y = validate_data(self, X, y, accept_sparse="csr", dtype=np.float64)
        check_classification_targets(y)
        self.classes_, code = np.unique(y, return_inverse=True)
        if self.classes_.size < 2:
            raise ValueError("y has one class; two are needed.")
        Y = np.where(code[:, None] == np.arange(self.classes_.size), 1.0, -1.0)
        Y = Y[:, 1:] if self.classes_.size == 2 else Y
        return FitData(X=X, set_sizes=(X.shape[0],), n_columns=X.shape[1],
                       first=(X, None), rest=(X, np.arange(0)),
                       n_outputs=Y.shape[1], Y=Y)

    def _make_problem(self, data: FitData):
        def loss(fs, idx, sizes, w):
            r = fs[0] - (data.Y if idx[0] is None else data.Y[idx[0]])
            return 0.5 * float(np.mean(np.sum(r * r, axis=1))), [r / r.shape[0]]

        return Problem([(data.X, None)], data.n_outputs, loss, lam=self.lam,
                       intercept="free", options=data.opts), {}

    def _set_offset(self, model, b, data):
        self.intercept_ = np.asarray(b, dtype=np.float64).reshape(model.K)

    def _width(self):
        return None if self.classes_.size == 2 else self.classes_.size

    def _decision(self, X):
        f = self.spec_.decision(X, self.coef_, self.n_blocks_) + self.intercept_
        return f[:, 0] if f.shape[1] == 1 else f

    def _add_state(self, meta, arrays):
        arrays["intercept"] = self.intercept_

    def _set_own_state(self, meta, arrays):
        self.intercept_ = arrays["intercept"]


def test_the_toy_is_short():
    assert len(inspect.getsource(ToyLeastSquares).splitlines()) < 60


def test_the_toy_passes_the_estimator_checks():
    check_estimator(ToyLeastSquares(random_state=0))


def test_the_toy_round_trips_its_model_file():
    rng = np.random.default_rng(0)
    X = rng.normal(size=(80, 3))
    y = (X[:, 0] + 0.3 * rng.normal(size=80) > 0).astype(int)
    est = ToyLeastSquares(random_state=0).fit(X, y)
    assert est.score(X, y) > 0.8
    back = ToyLeastSquares.from_bytes(est.to_bytes())
    np.testing.assert_array_equal(back.decision_function(X),
                                  est.decision_function(X))
