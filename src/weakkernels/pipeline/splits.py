"""Split builders for the three weak-supervision protocols.

* ``ssl`` -- semi-supervised (paper 000 §6, paper 003): ``n_labeled`` labeled
  points (stratified, at least one per class), a pool of unlabeled points whose
  prefixes give the nested unlabeled sizes, a labeled validation set used only by
  the tune stage, and a held-out test set.  The AUC protocol (P/N/U sets) is the
  same split: the labeled points of class 1 are P, of class 0 are N.  With
  ``transductive`` the unlabeled pool starts with the test points (paper 004's
  Table 1.5 protocol: U = the test set, then other points).
* ``official`` -- the shipped splits (g50c: paper 004 §1.6.1, SSL book): split
  ``k`` uses ``idxLabs[k]`` as labeled and ``idxUnls[k]`` as unlabeled; the test
  set is the unlabeled set itself (transductive, as in the paper).  The validation
  points are drawn from the unlabeled set, so only the tuning split should use them.
* ``pool`` -- a set with its own unlabeled rows (a ``data.local`` table): the
  ``ssl`` split with the labeled, validation and test points drawn from the
  labeled rows and the unlabeled pool from the unlabeled ones.
* ``su`` -- similar-unlabeled (paper 002 §6): ``n_pairs`` similar pairs whose
  common label is positive with probability pi^2 / (pi^2 + (1-pi)^2) (two points
  drawn from p(x, y) and kept when their labels agree), ``n_U`` unlabeled points
  drawn from the marginal, and ``ceil(n_U / 3)`` test points from the rest.

All index arrays refer to rows of the prepared dataset; every split is a pure
function of the labels and an integer seed.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.sparse import issparse

__all__ = [
    "fit_arrays",
    "official_split",
    "pool_split",
    "resolve",
    "ssl_split",
    "stratified_folds",
    "su_split",
]


def _stratified_pick(y: np.ndarray, idx: np.ndarray, k: int, rng) -> np.ndarray:
    """``k`` indices from ``idx``, class proportions kept, >= 1 per class."""
    classes, counts = np.unique(y[idx], return_counts=True)
    if k < len(classes):
        raise ValueError(f"n_labeled={k} < number of classes {len(classes)}")
    share = np.maximum(1, np.floor(k * counts / counts.sum()).astype(int))
    while share.sum() > k:
        share[np.argmax(share)] -= 1
    order = np.argsort(-counts)
    i = 0
    while share.sum() < k:  # hand the rounding remainder to the largest classes
        share[order[i % len(order)]] += 1
        i += 1
    picked = [
        rng.choice(idx[y[idx] == c], size=s, replace=False)
        for c, s in zip(classes, share, strict=True)
    ]
    return rng.permutation(np.concatenate(picked))


def ssl_split(
    y: np.ndarray,
    *,
    n_labeled: int,
    n_unlabeled: Sequence[int],
    n_val: int,
    n_test: int,
    seed: int,
    transductive: bool = False,
) -> dict[str, np.ndarray]:
    """Random semi-supervised split; unlabeled sizes are nested prefixes.

    ``transductive``: the unlabeled pool is the test points, then other
    points (paper 004's MNIST protocol, Table 1.5): a model sees, unlabeled,
    the points it is scored on -- the unlabeled rows that pay most where the
    test points' distribution differs from the training pool's (ijcnn1's two
    files; docs/benchmarks/design_notes.md, "The pipeline"). An
    unlabeled size below ``n_test`` holds that many test points. The labeled,
    validation and test points are those of the inductive split (same seed).
    """
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    n_u = max(n_unlabeled)
    n_other = max(n_u - n_test, 0) if transductive else n_u  # beyond the test
    need = n_labeled + n_other + n_val + n_test
    if need > len(y):
        raise ValueError(
            f"split needs {need} points (labeled {n_labeled} + unlabeled "
            f"{n_other}{' beyond the test points' if transductive else ''} + "
            f"val {n_val} + test {n_test}) but the dataset has {len(y)}"
        )
    all_idx = rng.permutation(len(y))
    labeled = _stratified_pick(y, all_idx, n_labeled, rng)
    rest = np.setdiff1d(all_idx, labeled, assume_unique=True)
    rest = rng.permutation(rest)
    val = rest[:n_val]
    test = rest[n_val : n_val + n_test]
    unlabeled = rest[n_val + n_test : n_val + n_test + n_other]
    if transductive:
        unlabeled = np.concatenate([test, unlabeled])[:n_u]
    return {
        "labeled": labeled,
        "unlabeled": unlabeled,
        "val": val,
        "test": test,
        "n_unlabeled": np.asarray(sorted(n_unlabeled), dtype=np.int64),
    }


def pool_split(
    y: np.ndarray,
    *,
    n_labeled: int,
    n_unlabeled: Sequence[int],
    n_val: int,
    n_test: int,
    seed: int,
    transductive: bool = False,
) -> dict[str, np.ndarray]:
    """Split of a set that brings its own unlabeled rows (``y == -1``; a
    ``data.local`` table): the labeled points, the validation and the test
    points come from its labeled rows as in :func:`ssl_split`, the unlabeled
    pool is its unlabeled rows (shuffled; the sizes are nested prefixes).

    ``transductive``: the pool starts with the test points, then the set's
    unlabeled rows.  Sizes the set cannot hold are an error naming the
    ``split.ssl`` key and the row counts.
    """
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    lab, unl = np.flatnonzero(y != -1), np.flatnonzero(y == -1)
    n_u = max(n_unlabeled)
    n_other = max(n_u - n_test, 0) if transductive else n_u
    need = n_labeled + n_val + n_test
    if need > len(lab):
        raise ValueError(
            f"split.ssl.n_labeled + n_val + n_test: {n_labeled} + {n_val} + "
            f"{n_test} = {need} labeled rows needed, the set has {len(lab)}")
    if n_other > len(unl):
        raise ValueError(
            f"split.ssl.n_unlabeled: {n_u} unlabeled rows asked"
            f"{f' ({n_other} beyond the test points)' if transductive else ''}, "
            f"the set has {len(unl)} (rows with an empty or -1 label)")
    labeled = _stratified_pick(y, rng.permutation(lab), n_labeled, rng)
    rest = rng.permutation(np.setdiff1d(lab, labeled, assume_unique=True))
    val = rest[:n_val]
    test = rest[n_val : n_val + n_test]
    unlabeled = rng.permutation(unl)[:n_other]
    if transductive:
        unlabeled = np.concatenate([test, unlabeled])[:n_u]
    return {
        "labeled": labeled,
        "unlabeled": unlabeled,
        "val": val,
        "test": test,
        "n_unlabeled": np.asarray(sorted(n_unlabeled), dtype=np.int64),
    }


def official_split(
    split_labeled: np.ndarray,
    split_unlabeled: np.ndarray,
    k: int,
    *,
    n_val: int,
    seed: int,
) -> dict[str, np.ndarray]:
    """Shipped split ``k``; test = the unlabeled points (transductive)."""
    if not 0 <= k < len(split_labeled):
        raise ValueError(f"official split {k} out of range 0..{len(split_labeled) - 1}")
    rng = np.random.default_rng(seed)
    labeled = np.asarray(split_labeled[k], dtype=np.int64)
    unlabeled = np.asarray(split_unlabeled[k], dtype=np.int64)
    val = rng.choice(unlabeled, size=min(n_val, len(unlabeled)), replace=False)
    return {
        "labeled": labeled,
        "unlabeled": unlabeled,
        "val": val,
        "test": unlabeled.copy(),
        "n_unlabeled": np.asarray([len(unlabeled)], dtype=np.int64),
    }


def su_split(
    y: np.ndarray,
    *,
    positive: int,
    n_pairs: int,
    n_unlabeled: Sequence[int],
    n_val: int,
    seed: int,
) -> dict[str, np.ndarray]:
    """Similar pairs + unlabeled + test, following paper 002 §6.

    ``pairs`` has shape ``(n_pairs, 2)``; ``unlabeled`` holds ``max(n_unlabeled)``
    points (smaller sizes are prefixes) and ``test`` ``ceil(max(n_U) / 3)`` points
    (the test set of size ``n_U`` is the prefix of length ``ceil(n_U / 3)``).
    """
    y = np.asarray(y)
    rng = np.random.default_rng(seed)
    is_pos = y == positive
    prior = float(is_pos.mean())
    n_u = max(n_unlabeled)
    n_test = math.ceil(n_u / 3)
    # Two independent draws from p(x, y) kept when the labels agree: the common
    # label is positive with probability pi^2 / (pi^2 + (1 - pi)^2).
    p_pos_pair = prior**2 / (prior**2 + (1 - prior) ** 2)
    n_pos_pairs = int(rng.binomial(n_pairs, p_pos_pair))
    pos = rng.permutation(np.flatnonzero(is_pos))
    neg = rng.permutation(np.flatnonzero(~is_pos))
    n_neg_pairs = n_pairs - n_pos_pairs
    if 2 * n_pos_pairs > len(pos) or 2 * n_neg_pairs > len(neg):
        raise ValueError("not enough points of one class for the similar pairs")
    pairs = np.concatenate(
        [pos[: 2 * n_pos_pairs].reshape(-1, 2), neg[: 2 * n_neg_pairs].reshape(-1, 2)]
    )
    pairs = pairs[rng.permutation(len(pairs))]
    rest = np.setdiff1d(np.arange(len(y)), pairs.ravel())
    need = n_u + n_test + n_val
    if need > len(rest):
        raise ValueError(f"SU split needs {need} points beyond the pairs; {len(rest)}")
    rest = rng.permutation(rest)
    return {
        "pairs": pairs,
        "unlabeled": rest[:n_u],
        "test": rest[n_u : n_u + n_test],
        "val": rest[n_u + n_test : n_u + n_test + n_val],
        "n_unlabeled": np.asarray(sorted(n_unlabeled), dtype=np.int64),
        "positive": np.asarray(positive, dtype=np.int64),
        "prior": np.asarray(prior),
    }


def stratified_folds(
    y_labeled: np.ndarray, k: int, seed: int
) -> list[tuple[np.ndarray, np.ndarray]]:
    """``k`` stratified (train, held-out) position pairs over ``y_labeled``.

    Every held-out fold keeps the class proportions (so each holds every class
    when ``k`` <= the smallest class count); a pure function of the labels and
    ``seed``, so every trial of a study is scored on the same folds -- those
    of :class:`weakkernels.model_selection.LabeledKFold` (the estimators'
    scikit-learn splitter) on the labeled rows.
    """
    from weakkernels.model_selection import LabeledKFold

    return list(LabeledKFold(int(k), random_state=int(seed)).split(None, y_labeled))


def resolve(split: dict[str, np.ndarray], n_unlabeled: int) -> dict[str, np.ndarray]:
    """The index sets for one unlabeled size (nested prefixes of the pools)."""
    if n_unlabeled > len(split["unlabeled"]):
        raise ValueError(
            f"n_unlabeled={n_unlabeled} > unlabeled pool {len(split['unlabeled'])}"
        )
    out = dict(split)
    out["unlabeled"] = split["unlabeled"][:n_unlabeled]
    if "pairs" in split:
        out["test"] = split["test"][: math.ceil(n_unlabeled / 3)]
    return out


def _stack_rows(X, first: np.ndarray, then: np.ndarray):
    """Rows ``first`` then rows ``then`` of ``X``; CSR stays CSR."""
    if issparse(X):
        return X[np.concatenate([first, then])].tocsr()
    return np.concatenate([X[first], X[then]])


def fit_arrays(
    X: np.ndarray, y: np.ndarray, split: dict[str, np.ndarray]
) -> tuple[np.ndarray, np.ndarray]:
    """``(X_fit, y_fit)`` with ``y_fit == -1`` on the unlabeled rows.

    SU splits: the similar pairs come first as consecutive rows with ``y == 1``
    (the TSGSU layout), then the unlabeled rows with ``y == -1``.
    """
    if "pairs" in split:
        s_idx = split["pairs"].ravel()
        u_idx = split["unlabeled"]
        X_fit = _stack_rows(X, s_idx, u_idx)
        y_fit = np.concatenate(
            [np.ones(len(s_idx), dtype=np.int64), -np.ones(len(u_idx), dtype=np.int64)]
        )
        return X_fit, y_fit
    l_idx, u_idx = split["labeled"], split["unlabeled"]
    X_fit = _stack_rows(X, l_idx, u_idx)
    y_fit = np.concatenate(
        [np.asarray(y[l_idx], dtype=np.int64), -np.ones(len(u_idx), dtype=np.int64)]
    )
    return X_fit, y_fit


def eval_labels(y: np.ndarray, split: dict[str, np.ndarray], idx: np.ndarray):
    """True labels for evaluation: binarized (1 = positive) for SU splits."""
    if "pairs" in split:
        return (np.asarray(y[idx]) == int(split["positive"])).astype(np.int64)
    return np.asarray(y[idx], dtype=np.int64)
