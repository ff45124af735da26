"""How far apart are ijcnn1's row sources? A domain classifier's test AUC.

``scale_accuracy.py``'s ijcnn1 split takes its labels and unlabeled rows from
the training file, its test rows from the first 20 000 rows of ``ijcnn1.tst``
and (``ijcnn1_tstu``) its unlabeled rows from the rest of ``ijcnn1.tst``. For
each pair of sources, 20 000 seeded rows of each (fewer if a source is
smaller), features scaled as the benchmark scales them, are labeled by their
source; scikit-learn's ``HistGradientBoostingClassifier`` is fitted on a
seeded half and scored (ROC AUC) on the other. AUC 0.5: the sources cannot
be told apart (the control: two disjoint random halves of the training
file); near 1: they are different distributions.

Usage::

    python benchmarks/ijcnn1_shift.py --out benchmarks/results/ijcnn1_shift.json
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np

from _bases import revision


def domain_auc(A, B, seed: int, n: int = 20000) -> float:
    """Test AUC of a classifier telling rows of ``A`` from rows of ``B``."""
    from sklearn.ensemble import HistGradientBoostingClassifier
    from sklearn.metrics import roc_auc_score

    rng = np.random.default_rng(seed)
    a = A[rng.permutation(A.shape[0])[:n]]
    b = B[rng.permutation(B.shape[0])[:n]]
    X = np.vstack([a, b])
    y = np.r_[np.zeros(len(a)), np.ones(len(b))]
    perm = rng.permutation(y.size)
    tr, te = perm[: y.size // 2], perm[y.size // 2:]
    clf = HistGradientBoostingClassifier(random_state=seed).fit(X[tr], y[tr])
    return float(roc_auc_score(y[te], clf.predict_proba(X[te])[:, 1]))


def main(argv=None) -> int:
    import scale_accuracy as sa

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--out", type=Path, required=True)
    a = ap.parse_args(argv)
    Xp, _, Xt, _, _, _, _ = sa.load("ijcnn1")
    Xo = sa.load_other("ijcnn1_tstu")
    half = np.random.default_rng(a.seed).permutation(Xp.shape[0])
    pairs = {
        "training file: two disjoint random halves (control)":
            (Xp[half[: half.size // 2]], Xp[half[half.size // 2:]]),
        "training file vs test rows": (Xp, Xt),
        "training file vs the rest of ijcnn1.tst (ijcnn1_tstu's unlabeled rows)":
            (Xp, Xo),
        "test rows vs the rest of ijcnn1.tst": (Xt, Xo),
    }
    rows = [{"sources": k, "auc": domain_auc(A, B, a.seed), "seed": a.seed,
             "rev": revision()} for k, (A, B) in pairs.items()]
    for r in rows:
        print(f"{r['sources']}: AUC {r['auc']:.4f}")
    a.out.write_text(json.dumps(rows, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
