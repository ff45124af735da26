"""Paper 004's Table 1.5 rows run by the authors' code, UniverSVM, on our split.

Usage::

    .venv/bin/python benchmarks/cccp_mnist_table15_universvm.py \\
        --n-unlabeled 5000 [--c-star 1.0] [--out results.json]

UniverSVM 1.22 (Sinz & Collobert; paper 004's footnote 5 points at its
release; built by ``benchmarks/peers/setup_sparse_peers.sh``) with ``-M 10``
(one-vs-rest over the ten digits), CCCP (``-o 1``), C = 10, gamma = 0.0128,
s = -0.1 (``-S``), C* (``-z``; default: the paper's printed C* of the row),
KKT tolerance 1e-3 and a kernel cache holding the whole matrix, on exactly the
labeled / unlabeled / validation split of ``cccp_mnist_table15.py``
(``load_split``, seed of the protocol). The 10 000 test and the 1 000
validation images go to UniverSVM as one test file; its per-class decision
values (``-D``) are read back and the argmax (its own multi-class rule) gives
the test, validation and transduced errors computed here, as for ours.
Reported: those errors, the whole process's CPU seconds and peak RSS (GNU
time), and the balancing target ``<y>_train`` UniverSVM used (it computes it
once, from the first class it trains, and reuses it for every class).
"""

from __future__ import annotations

import argparse
import json
import re
import tempfile
from pathlib import Path

import numpy as np
import yaml

from cccp_mnist_4v9 import UNIVERSVM, run_timed
from cccp_mnist_table15 import PROTOCOL, _printed_row, load_split


def read_fvals(path, n_classes):
    """The ``f{c} = [ ... ];`` rows of UniverSVM's ``-D`` file, (n, classes)."""
    rows = re.findall(r"f\{(\d+)\} = \[([^\]]*)\]", Path(path).read_text())
    F = [np.array([float(v) for v in body.split(",")]) for _, body in rows]
    if len(F) != n_classes:
        raise RuntimeError(f"{len(F)} decision rows, expected {n_classes}")
    return np.column_stack(F)


def run(n_unlabeled, c_star, tmp):
    from sklearn.datasets import dump_svmlight_file

    proto = yaml.safe_load(PROTOCOL.read_text())
    row = _printed_row(proto, n_unlabeled, proto["n_labeled"])
    c_star = row["C_star"] if c_star is None else c_star
    XL, yL, XU, n_test_u, Xte, yte, Xv, yv = load_split(
        proto, n_unlabeled, proto["n_labeled"])
    files = {k: str(tmp / f"{k}.dat") for k in ("train", "unlabeled", "test")}
    dump_svmlight_file(XL, yL, files["train"], zero_based=False)
    dump_svmlight_file(XU, np.zeros(len(XU)), files["unlabeled"], zero_based=False)
    Xt = np.vstack([Xte, Xv])
    yt = np.concatenate([yte, yv])
    dump_svmlight_file(Xt, yt, files["test"], zero_based=False)
    m = len(XL) + n_unlabeled
    cache_mb = int(np.ceil(m * m * 8 / 2**20)) + 1  # the whole matrix, as ours
    fvals = str(tmp / "fvals.txt")
    report = str(tmp / "report.txt")
    cmd = [str(UNIVERSVM), "-M", "10", "-o", "1", "-c", f"{proto['C']:g}",
           "-z", f"{c_star:.10g}", "-t", "2", "-g", f"{proto['sigma']:g}",
           "-S", f"{proto['s']:g}", "-e", "0.001", "-m", str(cache_mb),
           "-u", files["unlabeled"], "-T", files["test"], "-D", fvals,
           "-f", report, files["train"]]
    rc, out, err, wall, cpu, rss = run_timed(cmd)
    if rc:
        return {"fail": (err or out)[-800:]}
    labels = [int(v) for v in re.findall(r"Training (-?\d+)  vs\. Rest", out)]
    labels = list(dict.fromkeys(labels))  # printed twice: at start and per class
    F = read_fvals(fvals, len(labels))
    pred = np.asarray(labels)[np.argmax(F, axis=1)]
    nt = len(yte)
    t = slice(0, n_test_u)
    acc = re.findall(r"Accuracy=\s*([\d.]+)", out)
    weight = re.findall(r"<y>_train=([-\d.e]+)", Path(report).read_text())
    loops = [int(v) for v in re.findall(r"---- Loop (\d+)/", out)]
    return {
        "method": "UniverSVM 1.22",
        "n_labeled": len(yL),
        "n_unlabeled": n_unlabeled,
        "C_star": c_star,
        "paper_error": row["paper_error"],
        "test_error": float(np.mean(pred[:nt] != yte)),
        "validation_error": float(np.mean(pred[nt:] != yv)),
        "transduced_error": float(np.mean(pred[t] != yte[t])),
        "universvm_accuracy_printed": float(acc[-1]) if acc else None,
        "balancing_target": float(weight[-1]) if weight else None,
        "n_cccp_loops_printed": len(loops),
        "process_cpu_s": cpu,
        "process_wall_s": round(wall, 1),
        "peak_rss_mb": rss,
        "cmd": " ".join(Path(c).name if "/" in c else c for c in cmd),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-unlabeled", type=int, nargs="+", default=[5000])
    ap.add_argument("--c-star", type=float, help="default: the paper's printed C*")
    ap.add_argument("--out")
    args = ap.parse_args()
    if not UNIVERSVM.exists():
        raise SystemExit(f"{UNIVERSVM} missing: run "
                         "benchmarks/peers/setup_sparse_peers.sh")
    results = []
    for u in args.n_unlabeled:
        with tempfile.TemporaryDirectory() as tmp:
            results.append(run(u, args.c_star, Path(tmp)))
        print(json.dumps(results[-1]), flush=True)
        if args.out:
            Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
