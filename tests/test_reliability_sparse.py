"""Sparse input never reaches compiled code unchecked (RELIABILITY.md,
section "Sparse structure", cause A).

scipy builds a CSR matrix with O(1) checks only, and its ``indices`` /
``indptr`` can be edited afterwards; before the boundary checked them
(``_validation.check_sparse_structure``), one column index of 10**8 killed the
process with SIGSEGV inside ``CCCPTSVM``/``RampSVM``, and an index past the
width gave NaN or silently different scores elsewhere. A crash is a dead
process, so these tests run the input in a subprocess and read its exit code.

Run as a script, ``python tests/test_reliability_sparse.py N SEED`` applies
``N`` random corruptions of ``indices``/``indptr``/``data`` (CSR, CSC and COO)
to the fit and prediction of every sparse-capable estimator and prints one
JSON object: each must end in ``ValueError`` (when scipy's own full check, on
a copy, refuses the arrays) or in the result of the scipy-valid matrix.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import scipy.sparse as sp

_ENV = {**os.environ, "NUMBA_NUM_THREADS": "1"}
_BAD_CSR = "X is not a valid"


def _run(code: str, timeout: int = 300) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)],
                          capture_output=True, text=True, timeout=timeout, env=_ENV)


_SETUP = """
    import warnings
    import numpy as np, scipy.sparse as sp
    import weakkernels as wk
    warnings.simplefilter("ignore")
    X = sp.random(40, 5, density=0.5, format="csr", random_state=0)
    y = np.r_[np.zeros(5, int), np.ones(5, int), -np.ones(30, int)]
    y_sup = (np.arange(40) % 2).astype(int)
"""


@pytest.mark.parametrize(
    "estimator, call",
    [
        # column indices out of range once killed these with SIGSEGV
        ("wk.CCCPTSVM(max_cccp_iter=3)", "est.fit(Xb, y)"),
        ("wk.RampSVM(max_cccp_iter=3)", "est.fit(Xb, y_sup)"),
        ("wk.CCCPTSVM(max_cccp_iter=3)", "est.fit(X, y).decision_function(Xb)"),
    ],
    ids=["CCCPTSVM.fit", "RampSVM.fit", "CCCPTSVM.decision_function"],
)
def test_out_of_range_column_index_exits_with_value_error(estimator, call):
    proc = _run(_SETUP + f"""
    Xb = X.copy()
    Xb.indices[3] = 10**8
    est = {estimator}
    {call}
    print("accepted")
    """)
    assert proc.returncode == 1, (
        f"exit code {proc.returncode} (negative: killed by a signal)\n"
        f"{proc.stdout}\n{proc.stderr[-2000:]}"
    )
    last = proc.stderr.strip().splitlines()[-1]
    assert last.startswith("ValueError: " + _BAD_CSR), last
    assert "indices[3] = 100000000 is outside [0, 5)" in last
    assert "accepted" not in proc.stdout


def _small_csr(rows=12):
    X = sp.random(rows, 5, density=0.5, format="csr", random_state=1)
    return X


@pytest.mark.parametrize(
    "edit, match",
    [
        (lambda X: X.indices.__setitem__(0, 7), r"indices\[0\] = 7 is outside"),
        (lambda X: X.indices.__setitem__(0, -1), r"indices\[0\] = -1 is outside"),
        (lambda X: X.indptr.__setitem__(3, X.indptr[5] + 7), "indptr decreases"),
        (lambda X: setattr(X, "indptr", X.indptr[:-1]), "indptr has 12 entries"),
        (lambda X: X.indptr.__setitem__(-1, X.nnz + 5), r"indptr\[-1\]"),
        (lambda X: setattr(X, "data", X.data[:-1]), "indices but"),
    ],
    ids=["index-past-width", "negative-index", "indptr-decreasing",
         "indptr-short", "indptr-past-nnz", "data-short"],
)
def test_corrupt_csr_is_refused_before_prediction(edit, match):
    # Before: index 7 on width 5 gave [nan 0.358 -1.061]; a negative index
    # silently different scores; a decreasing indptr a C++ RuntimeError.
    import weakkernels as wk

    X = _small_csr()
    y = np.r_[0, 1, 0, 1, -np.ones(8, int)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        est = wk.TSGS3VM(max_iter=5, batch_size=4, block_size=4, random_state=0)
        est.fit(X, y)
        before = est.decision_function(X)
        Xb = X.copy()
        edit(Xb)
        with pytest.raises(ValueError, match=match):
            est.decision_function(Xb)
        with pytest.raises(ValueError, match=match):
            wk.TSGS3VM(max_iter=5, random_state=0).fit(Xb, y)
    # refused without touching the caller's matrix or the fitted model
    np.testing.assert_array_equal(est.decision_function(X), before)


def test_corrupt_csc_and_coo_are_refused_before_conversion():
    # CSC -> CSR and COO -> CSR conversion is C++ that writes at the indices.
    from weakkernels._validation import check_sparse_structure

    X = _small_csr()
    csc = X.tocsc()
    csc.indices[0] = 10**8
    with pytest.raises(ValueError, match=r"CSC .*indices\[0\] = 100000000"):
        check_sparse_structure(csc)
    coo = X.tocoo()
    coo.row[2] = 12
    with pytest.raises(ValueError, match=r"COO .*row\[2\] = 12 is outside \[0, 12\)"):
        check_sparse_structure(coo)
    bsr = sp.bsr_matrix(X.toarray()[:, :4], blocksize=(2, 2))
    bsr.indices[0] = 5
    with pytest.raises(ValueError, match=r"BSR .*indices\[0\] = 5 is outside"):
        check_sparse_structure(bsr)
    # valid matrices, even non-canonical (unsorted, duplicates), pass
    ok = sp.csr_matrix((np.ones(3), [2, 0, 2], [0, 3]), shape=(1, 4))
    check_sparse_structure(ok)
    check_sparse_structure(X.tocsc())
    check_sparse_structure(X.tocoo())


def test_csr_fuzz_ends_in_value_error_or_the_correct_result():
    """>= 500 corruptions of index/data arrays, fit and predict of every
    sparse-capable estimator, in a subprocess: no signal, no other exception,
    every invalid structure refused, every valid one scored as scipy reads it."""
    proc = subprocess.run([sys.executable, __file__, "600", "20261125"],
                          capture_output=True, text=True, timeout=900, env=_ENV)
    assert proc.returncode == 0, (
        f"fuzz process died ({proc.returncode}): {proc.stderr[-3000:]}"
    )
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    assert result["n"] == 600
    assert result["failures"] == []
    assert result["refused"] + result["correct"] == 600
    # both outcomes are exercised, on fit and predict of every estimator
    assert result["refused"] > 150 and result["correct"] > 150, result
    assert set(result["estimators"]) >= {"TSGS3VM", "TSGSU", "QSGS2AUC",
                                         "CCCPTSVM", "RampSVM"}
    assert result["fits"] >= 60, result


# ------------------------------------------------------------------ the fuzzer


def _fuzz_estimators():
    import weakkernels as wk

    rng = np.random.default_rng(0)
    y_semi = np.r_[0, 1, 0, 1, 0, 1, -np.ones(18, int)]
    y_su = np.r_[np.ones(8, int), -np.ones(16, int)]
    y_sup = (rng.random(24) < 0.5).astype(int)
    y_sup[:2] = [0, 1]
    small = {"max_iter": 5, "batch_size": 4, "block_size": 4, "random_state": 0}
    return {
        "TSGS3VM": (lambda: wk.TSGS3VM(**small), y_semi),
        "TSGSU": (lambda: wk.TSGSU(**small), y_su),
        "QSGS2AUC": (lambda: wk.QSGS2AUC(prior=0.5, **small), y_semi),
        "CCCPTSVM": (lambda: wk.CCCPTSVM(max_cccp_iter=2), y_semi),
        "RampSVM": (lambda: wk.RampSVM(max_cccp_iter=2, random_state=0), y_sup),
    }


_INDEX_VALUES = [-1, -2, -(10**8), 5, 6, 7, 10**8, 2**31 - 1, 0, 1, 2, 3, 4]


def _corrupt(X, rng):
    """A copy of CSR ``X`` in a random format with one random corruption."""
    fmt = ["csr", "csr", "csr", "csc", "coo"][int(rng.integers(5))]
    Y = X.asformat(fmt, copy=True)
    if fmt == "coo":
        arrays = ["row", "col", "data"]
    else:
        arrays = ["indices", "indices", "indptr", "indptr", "data"]
    name = arrays[int(rng.integers(len(arrays)))]
    arr = getattr(Y, name).copy()
    op = int(rng.integers(5))
    if op == 0 or arr.size == 0:  # truncate or extend by one
        arr = arr[:-1] if rng.random() < 0.5 else np.r_[arr, arr[-1:] if
                                                         arr.size else [0]]
        arr = arr.astype(getattr(Y, name).dtype)
    elif op == 1 and name != "data":  # swap two entries (e.g. unsorted row)
        i, j = rng.integers(arr.size, size=2)
        arr[[i, j]] = arr[[j, i]]
    elif name == "data":
        pool = [np.nan, np.inf, -np.inf, 0.0, 2.5, -1.0, 1e-300]
        arr[int(rng.integers(arr.size))] = pool[int(rng.integers(len(pool)))]
    else:
        k = int(rng.integers(1, 3))
        for _ in range(k):
            i = int(rng.integers(arr.size))
            if name == "indptr" and rng.random() < 0.5:
                arr[i] = int(rng.integers(0, X.nnz + 3))
            else:
                v = _INDEX_VALUES[int(rng.integers(len(_INDEX_VALUES)))]
                # an index array's dtype bounds what a user can store in it
                info = np.iinfo(arr.dtype)
                arr[i] = min(max(v, info.min), info.max)
    setattr(Y, name, arr)
    if fmt == "coo":
        Y.has_canonical_format = False
    else:
        Y.has_sorted_indices = False
        Y.has_canonical_format = False
    return fmt, name, Y


def _reference(Y):
    """The matrix scipy reads from ``Y``'s arrays, or None if scipy's full check
    (on copies) refuses them or the data is not finite (sklearn refuses it)."""
    try:
        if Y.format == "coo":
            ref = sp.coo_matrix((Y.data.copy(), (Y.row.copy(), Y.col.copy())),
                                shape=Y.shape)
        else:
            cls = sp.csr_matrix if Y.format == "csr" else sp.csc_matrix
            ref = cls((Y.data.copy(), Y.indices.copy(), Y.indptr.copy()),
                      shape=Y.shape)
            # scipy skips its full check when indptr[-1] <= 0 (indptr
            # [0, 5, 0] passes check_format): test monotonicity here as well
            if Y.indptr.size and np.any(np.diff(Y.indptr) < 0):
                return None
            ref.check_format(full_check=True)
        if not np.all(np.isfinite(Y.data)):
            return None
        ref = ref.tocsr()
        ref.sum_duplicates()
        return ref
    except (ValueError, IndexError):
        return None


def fuzz(n: int, seed: int) -> dict:
    warnings.simplefilter("ignore")
    rng = np.random.default_rng(seed)
    X = sp.random(24, 5, density=0.5, format="csr", random_state=2,
                  data_rvs=lambda k: np.random.default_rng(3).uniform(-1, 1, k))
    X.sum_duplicates()
    makers = _fuzz_estimators()
    fitted = {name: make().fit(X, y) for name, (make, y) in makers.items()}
    refused = correct = fits = 0
    failures: list[str] = []
    names = sorted(makers)
    for i in range(n):
        name = names[i % len(names)]
        make, y = makers[name]
        fmt, member, Y = _corrupt(X, rng)
        ref = _reference(Y)
        do_fit = i % 8 == 0
        fits += do_fit
        how = f"{name}.{'fit' if do_fit else 'predict'} {fmt}.{member}"
        try:
            if do_fit:
                got = make().fit(Y, y).decision_function(X)
            else:
                got = fitted[name].decision_function(Y)
        except ValueError as exc:
            if ref is None:
                refused += 1
            else:
                failures.append(f"{how}: valid matrix refused: {exc}"[:300])
            continue
        except BaseException as exc:  # noqa: BLE001 - report, do not hide
            failures.append(f"{how}: {type(exc).__name__}: {exc}"[:300])
            continue
        if ref is None:
            failures.append(f"{how}: invalid matrix accepted")
            continue
        if do_fit:
            want = make().fit(ref, y).decision_function(X)
        else:
            want = fitted[name].decision_function(ref)
        if np.allclose(got, want, rtol=1e-6, atol=1e-9):
            correct += 1
        else:
            failures.append(f"{how}: scores differ from scipy's reading")
    return {"n": n, "refused": refused, "correct": correct, "fits": fits,
            "estimators": names, "failures": failures}


if __name__ == "__main__":
    print(json.dumps(fuzz(int(sys.argv[1]), int(sys.argv[2]))))
