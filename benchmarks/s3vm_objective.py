"""Which machine has the lower S3VM objective: why g241n's default is at chance.

On the SSL-book set g241n the default ``TSGS3VM(C=10)`` is at chance
(BENCHMARKS.md, SSL-book page) while its own ``C_star=0`` machine and
``unlabeled_loss="ramp_cccp"`` are not. This asks whether that is the solver
(a poor local minimum) or the objective (its minimum is at chance).

For each split and C, three machines are fitted on the same rows with the
same seed, hence the same Nystrom landmarks and the same feature space: the
default, ``C_star=0`` and ``unlabeled_loss="ramp_cccp"``. Each is scored by
the *default's* objective, paper 000 Eq. (1) with the estimator's losses
(:func:`weakkernels.tsgs3vm.labeled_loss`, :func:`~weakkernels.tsgs3vm.unlabeled_loss`):

    1/2 ||v||^2 + C sum_L loss(y f) + C* sum_U da(f),  C* = C n_l / n_u,

at the machine's own outputs ``f`` (``decision_function``, so after any bias
move of the balance) and coefficients ``v`` (``coef_``). Also written: each
machine's test error and the fraction of unlabeled rows whose predicted class
differs from the ``C_star=0`` machine's.

    .venv/bin/python benchmarks/s3vm_objective.py \\
        --datasets sslbook-g241n sslbook-g241c --C 10 100 --official-splits 12 \\
        --out benchmarks/results/s3vm_objective.csv
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT / "benchmarks"))

from s3vm_defaults import splits  # noqa: E402
from weakkernels import TSGS3VM  # noqa: E402
from weakkernels.tsgs3vm import labeled_loss, unlabeled_loss  # noqa: E402

MACHINES = {"default": {}, "C_star=0": {"C_star": 0.0},
            "ramp_cccp": {"unlabeled_loss": "ramp_cccp"}}


def default_objective(ref, m, XL, yl, XU):
    """``(total, regulariser, labeled term, unlabeled term)`` of ``ref``'s
    objective (its C, C*_, losses) at machine ``m``."""
    y = np.where(yl == ref.classes_[1], 1.0, -1.0)
    reg = 0.5 * float(np.sum(m.coef_ ** 2))
    lab = ref.C * float(labeled_loss(ref.loss, y * m.decision_function(XL)).sum())
    unl = ref.C_star_ * float(unlabeled_loss(ref.unlabeled_loss_,
                                             m.decision_function(XU), ref.s).sum())
    return reg + lab + unl, reg, lab, unl


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out",
                    default=str(ROOT / "benchmarks/results/s3vm_objective.csv"))
    ap.add_argument("--datasets", nargs="+", default=["sslbook-g241n"])
    ap.add_argument("--C", nargs="+", type=float, default=[10.0, 100.0])
    ap.add_argument("--official-splits", type=int, default=12)
    args = ap.parse_args(argv)
    print("command:", " ".join([Path(sys.argv[0]).name] + sys.argv[1:]))
    rows = []
    for name in args.datasets:
        for split, XL, yl, XU, XT, yt in splits(name, n_official=args.official_splits):
            X = np.vstack([XL, XU])
            y = np.r_[yl, np.full(len(XU), -1)]
            for C in args.C:
                fitted = {k: TSGS3VM(C=C, random_state=0, **kw).fit(X, y)
                          for k, kw in MACHINES.items()}
                ref, c0 = fitted["default"], fitted["C_star=0"].predict(XU)
                for k, m in fitted.items():
                    obj = default_objective(ref, m, XL, yl, XU)
                    rows.append((name, split, C, k, 1 - m.score(XT, yt), *obj,
                                 float(np.mean(m.predict(XU) != c0))))
            print(name, split, "done", flush=True)
    import pandas as pd

    df = pd.DataFrame(rows, columns=[
        "dataset", "split", "C", "machine", "test_error", "objective",
        "regulariser", "labeled_term", "unlabeled_term", "disagree_c0"])
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    df.round(4).to_csv(out, index=False)
    print(df.pivot_table(index=["dataset", "C"], columns="machine",
                         values=["test_error", "objective"]).round(3).to_markdown())
    # how often the default's own machine has the lowest objective of the three
    low = df.loc[df.groupby(["dataset", "split", "C"]).objective.idxmin()]
    print(low.groupby(["dataset", "C"]).machine.value_counts().to_markdown())


if __name__ == "__main__":
    main()
