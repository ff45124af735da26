"""Sparse input for the exact-kernel estimators: CCCPTSVM and RampSVM.

The sparse path computes kernel rows from CSR rows in numba
(:func:`weakkernels._smo._csr_kernel_row`); it must agree with the dense path,
keep the support vectors sparse and survive save/load.
"""

from __future__ import annotations

import numpy as np
import pytest
import scipy.sparse as sp

from weakkernels._smo import (
    KernelProblem,
    _csr_kernel_row,
    csr_points,
    decision_values,
)
from weakkernels.cccp_tsvm import CCCPTSVM, RampSVM
from weakkernels.kernels import KERNEL_CODES, kernel_matrix

KERNELS = ("rbf", "linear", "poly", "laplacian")


def _sparse_problem(n=140, d=30, density=0.15, n_labeled=20, seed=0):
    """Bag-of-words-like data: nonnegative, mostly zero, one all-zero row."""
    rng = np.random.default_rng(seed)
    X = rng.random((n, d)) * (rng.random((n, d)) < density)
    w = rng.normal(size=d)
    y = (X @ w > np.median(X @ w)).astype(int)
    X[7] = 0.0  # an empty document
    y_semi = np.full(n, -1)
    lab = np.concatenate([np.flatnonzero(y == c)[: n_labeled // 2] for c in (0, 1)])
    y_semi[lab] = y[lab]
    return X, y_semi, y


def _estimators(kernel):
    common = dict(C=3.0, kernel=kernel, sigma=0.7, degree=2, tol=1e-10)
    return [
        CCCPTSVM(**common),
        RampSVM(**common, init_fraction=0.5, random_state=0),
    ]


def _fit(est, X, y_semi, y):
    return est.fit(X, y_semi if isinstance(est, CCCPTSVM) else y)


# --------------------------------------------------------------------------
# the numba kernel row against NumPy
# --------------------------------------------------------------------------


def _naive_row(X, p, kernel, sigma, degree, coef0):
    D = X.toarray()
    return kernel_matrix(D[p : p + 1], D, kernel, sigma, degree, coef0)[0]


@pytest.mark.parametrize("kernel", KERNELS)
def test_csr_kernel_row_matches_numpy(kernel):
    X, _, _ = _sparse_problem(n=60, d=25)
    Xs = sp.csr_matrix(X)
    (indptr, indices, data, l1, colptr, rowidx, colval, _), sqnorm = csr_points(Xs)
    code = KERNEL_CODES[kernel]
    out = np.full(X.shape[0], np.nan)
    for p in (0, 7, 31):  # row 7 is all zero
        a, b = indptr[p], indptr[p + 1]
        _csr_kernel_row(indices[a:b], data[a:b], sqnorm[p], l1[p], colptr, rowidx,
                        colval, sqnorm, l1, code, 0.7, 3, 0.5, out)
        np.testing.assert_allclose(out, _naive_row(Xs, p, kernel, 0.7, 3, 0.5),
                                   rtol=1e-12, atol=1e-14)


def test_csr_kernel_row_of_an_outside_vector_with_negative_values():
    """Decision rows: a vector that is not a row of X, negative entries."""
    rng = np.random.default_rng(4)
    X = sp.random(30, 12, density=0.3, random_state=5, format="csr")
    X.data -= 0.5
    v = rng.normal(size=12) * (rng.random(12) < 0.5)
    (_, _, _, l1, colptr, rowidx, colval, _), sqnorm = csr_points(X)
    nz = np.flatnonzero(v)
    for kernel in KERNELS:
        out = np.empty(30)
        _csr_kernel_row(nz, v[nz], v @ v, np.abs(v).sum(), colptr, rowidx, colval,
                        sqnorm, l1, KERNEL_CODES[kernel], 0.7, 3, 0.5, out)
        ref = kernel_matrix(v[None], X.toarray(), kernel, 0.7, 3, 0.5)[0]
        np.testing.assert_allclose(out, ref, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("kernel", KERNELS)
def test_kernel_problem_rows_sparse_equal_dense(kernel):
    X, _, _ = _sparse_problem(n=50, d=20)
    idx = np.arange(10, 50)
    dense = KernelProblem(X, KERNEL_CODES[kernel], 0.7, 2, 1.0, 1.0, idx)
    sparse = KernelProblem(sp.csr_matrix(X), KERNEL_CODES[kernel], 0.7, 2, 1.0,
                           1.0, idx)
    assert sp.issparse(sparse.X)
    np.testing.assert_allclose(sparse.k0, dense.k0, rtol=1e-12)
    for p in (0, 7, 49, 50):  # 50: the balancing example x_0 (Eq. 1.15)
        np.testing.assert_allclose(sparse.row(p), dense.row(p), rtol=1e-12,
                                   atol=1e-14)


def test_kernel_problem_rows_permutation_reads_sparse_in_place():
    """Base point p = row rows[p]: the same rows as a reordered copy."""
    X, _, _ = _sparse_problem(n=50, d=20)
    order = np.random.default_rng(2).permutation(50)
    Xs = sp.csr_matrix(X)
    ref = KernelProblem(X[order], 0, 0.7, 2, 1.0, 1.0, np.arange(20, 50))
    kp = KernelProblem(Xs, 0, 0.7, 2, 1.0, 1.0, np.arange(20, 50), order)
    assert np.shares_memory(kp.points[2], Xs.data)  # no copy of the rows
    for p in (0, 13, 49, 50):
        np.testing.assert_allclose(kp.row(p), ref.row(p), rtol=1e-12, atol=1e-14)
    with pytest.raises(ValueError, match="permutation"):
        KernelProblem(Xs, 0, 0.7, 2, 1.0, 1.0, None, np.zeros(50, int))


def test_decision_values_mixed_layouts():
    X, _, _ = _sparse_problem(n=40, d=15)
    rng = np.random.default_rng(1)
    coef = rng.normal(size=(2, 12))
    b = np.array([0.3, -0.1])
    ref = decision_values(X, X[:12], coef, b, 0, 0.7, 2, 1.0)
    for Z, SV in [(sp.csr_matrix(X), X[:12]), (X, sp.csr_matrix(X[:12])),
                  (sp.csc_matrix(X), sp.coo_matrix(X[:12]))]:
        np.testing.assert_allclose(decision_values(Z, SV, coef, b, 0, 0.7, 2, 1.0),
                                   ref, rtol=1e-12)


# --------------------------------------------------------------------------
# estimators: dense/sparse agreement, formats, save/load
# --------------------------------------------------------------------------


@pytest.mark.parametrize("kernel", ["rbf", "linear"])
@pytest.mark.parametrize("which", [0, 1], ids=["CCCPTSVM", "RampSVM"])
def test_dense_sparse_agreement(kernel, which):
    X, y_semi, y = _sparse_problem()
    dense = _fit(_estimators(kernel)[which], X, y_semi, y)
    sparse = _fit(_estimators(kernel)[which], sp.csr_matrix(X), y_semi, y)
    assert sp.isspmatrix_csr(sparse.support_vectors_) or (
        sp.issparse(sparse.support_vectors_)
        and sparse.support_vectors_.format == "csr"
    )
    np.testing.assert_array_equal(sparse.support_, dense.support_)
    f_dense = dense.decision_function(X)
    # rtol 1e-8 of the decision scale (f crosses zero, so relative per entry
    # is meaningless there)
    scale = np.max(np.abs(f_dense))
    for Z in (sp.csr_matrix(X), sp.csc_matrix(X), X):
        np.testing.assert_allclose(sparse.decision_function(Z), f_dense, rtol=0,
                                   atol=1e-8 * scale)
    np.testing.assert_array_equal(sparse.predict(sp.csc_matrix(X)),
                                  dense.predict(X))
    # a dense model predicts sparse rows too
    np.testing.assert_allclose(dense.decision_function(sp.csr_matrix(X)), f_dense,
                               rtol=0, atol=1e-12 * scale)


@pytest.mark.parametrize("fmt", ["csr", "csc", "coo"])
def test_fit_accepts_csr_csc_coo_identically(fmt):
    X, y_semi, _ = _sparse_problem()
    ref = CCCPTSVM(C=3.0, sigma=0.7).fit(sp.csr_matrix(X), y_semi)
    est = CCCPTSVM(C=3.0, sigma=0.7).fit(sp.csr_matrix(X).asformat(fmt), y_semi)
    np.testing.assert_array_equal(est.decision_function(X),
                                  ref.decision_function(X))


def test_duplicate_and_unsorted_indices():
    """scipy allows duplicate and unsorted column indices in a valid CSR matrix;
    they are summed and sorted at the boundary, so the model is the one of the
    canonical matrix."""
    X, y_semi, _ = _sparse_problem(n=60, d=10)
    C = sp.csr_matrix(X)
    # split every stored value v into v/2 + v/2 and reverse each row's order
    rows, cols, vals = [], [], []
    for r in range(C.shape[0]):
        a, b = C.indptr[r], C.indptr[r + 1]
        for t in range(b - 1, a - 1, -1):
            rows += [r, r]
            cols += [C.indices[t], C.indices[t]]
            vals += [C.data[t] / 2, C.data[t] / 2]
    indptr = np.concatenate([[0], np.cumsum(np.bincount(rows, minlength=60))])
    messy = sp.csr_matrix((np.array(vals), np.array(cols), indptr), shape=C.shape)
    assert not messy.has_canonical_format
    ref = CCCPTSVM(C=3.0, sigma=0.7).fit(C, y_semi)
    est = CCCPTSVM(C=3.0, sigma=0.7).fit(messy, y_semi)
    np.testing.assert_allclose(est.decision_function(messy),
                               ref.decision_function(C), rtol=0, atol=1e-12)
    assert est.support_vectors_.has_canonical_format


def test_all_zero_rows():
    X, y_semi, _ = _sparse_problem()
    X[[3, 50, 90]] = 0.0
    est = CCCPTSVM(C=3.0, sigma=0.7, tol=1e-10).fit(sp.csr_matrix(X), y_semi)
    ref = CCCPTSVM(C=3.0, sigma=0.7, tol=1e-10).fit(X, y_semi)
    zero = sp.csr_matrix((2, X.shape[1]))
    f = est.decision_function(zero)
    assert np.all(np.isfinite(f)) and f[0] == f[1]
    np.testing.assert_allclose(f, ref.decision_function(np.zeros((2, X.shape[1]))),
                               rtol=0, atol=1e-8)


@pytest.mark.parametrize("which", [0, 1], ids=["CCCPTSVM", "RampSVM"])
def test_sparse_model_save_load(tmp_path, which):
    X, y_semi, y = _sparse_problem()
    est = _fit(_estimators("rbf")[which], sp.csr_matrix(X), y_semi, y)
    path = tmp_path / "model.wk"
    est.save(path)
    again = type(est).load(path)
    assert sp.issparse(again.support_vectors_)
    assert (again.support_vectors_ != est.support_vectors_).nnz == 0
    Z = sp.csr_matrix(X)
    np.testing.assert_array_equal(again.decision_function(Z),
                                  est.decision_function(Z))
    np.testing.assert_array_equal(again.predict(X), est.predict(X))


def test_sparse_model_file_is_sparse_and_dense_files_unchanged():
    import io
    import zipfile

    X, y_semi, _ = _sparse_problem()
    sparse = CCCPTSVM(C=3.0, sigma=0.7).fit(sp.csr_matrix(X), y_semi)
    dense = CCCPTSVM(C=3.0, sigma=0.7).fit(X, y_semi)
    names_s = set(zipfile.ZipFile(io.BytesIO(sparse.to_bytes())).namelist())
    names_d = set(zipfile.ZipFile(io.BytesIO(dense.to_bytes())).namelist())
    assert "support_vectors.npy" in names_d
    assert "support_vectors.npy" not in names_s
    assert {"support_vectors_indptr.npy", "support_vectors_indices.npy",
            "support_vectors_data.npy"} <= names_s


def test_corrupt_sparse_model_file_is_refused():
    import io
    import zipfile

    from weakkernels._artifact import ModelFormatError

    X, y_semi, _ = _sparse_problem()
    est = CCCPTSVM(C=3.0, sigma=0.7).fit(sp.csr_matrix(X), y_semi)
    src = zipfile.ZipFile(io.BytesIO(est.to_bytes()))
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as dst:
        for name in src.namelist():
            raw = src.read(name)
            if name == "support_vectors_indices.npy":
                arr = np.load(io.BytesIO(raw))
                arr[0] = X.shape[1] + 5  # column out of range
                out = io.BytesIO()
                np.save(out, arr)
                raw = out.getvalue()
            dst.writestr(name, raw)
    with pytest.raises(ModelFormatError):
        CCCPTSVM.from_bytes(buf.getvalue())


def test_sparse_predict_wrong_feature_count():
    X, y_semi, _ = _sparse_problem()
    est = CCCPTSVM(C=3.0, sigma=0.7).fit(sp.csr_matrix(X), y_semi)
    with pytest.raises(ValueError, match="features"):
        est.decision_function(sp.csr_matrix(X[:, :-1]))
