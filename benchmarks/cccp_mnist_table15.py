"""Paper 004's Table 1.5 (MNIST, 1 000 labels, CCCP-TSVM one-vs-rest) as one command.

Usage::

    NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 \\
    .venv/bin/python benchmarks/cccp_mnist_table15.py [--n-unlabeled 0 2000 5000]
        [--param cache_dtype=float32] [--out results.json]

The protocol (data, labels, C, sigma, s, C* per U and the paper's errors) is
``benchmarks/protocols/cccp_mnist/table15.yaml``; the data come from the data
mirror beside the clone (``_cccp_common.DATA``). Every U runs in a fresh
subprocess so that its peak RSS (``ru_maxrss``) is its own; one warm-up fit
compiles the numba kernels before the timed fit (CPU seconds,
``time.process_time``). Reported per U: the test error on all 10 000 test
images, the error on the transduced test images (the first min(U, 10 000))
beside the hinge SVM's on the same images, fit CPU and wall seconds, peak RSS,
the kernel cache's rows and hit rate. Results are printed as a markdown table
and written to ``--out`` (JSON).
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import yaml

from _cccp_common import DATA, HINGE_S, parse_param

HERE = Path(__file__).resolve().parent
PROTOCOL = HERE / "protocols" / "cccp_mnist" / "table15.yaml"


def load_split(proto, n_unlabeled, n_labeled):
    """Labeled, unlabeled and test arrays of the Table 1.5 protocol."""
    with np.load(DATA / proto["data"]) as d:
        Xtr = d["x_train"].reshape(60000, -1) / proto["pixel_scale"]
        ytr = d["y_train"]
        Xte = d["x_test"].reshape(10000, -1) / proto["pixel_scale"]
        yte = d["y_test"]
    rng = np.random.default_rng(proto["seed"])
    lab = np.sort(rng.choice(ytr.size, n_labeled, replace=False))
    rest = np.setdiff1d(np.arange(ytr.size), lab)
    # the paper's validation set (1 000 training images, C* chosen on it):
    # the last unlabeled training images, so the unlabeled pool is unchanged
    val = rest[-proto["n_validation"]:]
    rest = rest[: -proto["n_validation"]]
    n_test_u = min(n_unlabeled, Xte.shape[0])
    Xu = np.vstack([Xte[:n_test_u], Xtr[rest[: n_unlabeled - n_test_u]]])
    return Xtr[lab], ytr[lab], Xu, n_test_u, Xte, yte, Xtr[val], ytr[val]


def child(n_unlabeled, n_labeled, extra, c_star_grid=None):
    from weakkernels import CCCPTSVM, RampSVM

    proto = yaml.safe_load(PROTOCOL.read_text())
    row = next(r for r in proto["rows"] if r["n_unlabeled"] == n_unlabeled
               and r.get("n_labeled", proto["n_labeled"]) == n_labeled)
    XL, yL, XU, n_test_u, Xte, yte, Xv, yv = load_split(proto, n_unlabeled,
                                                        n_labeled)
    C, sigma, s = proto["C"], proto["sigma"], proto["s"]
    svm = RampSVM(C=C, sigma=sigma, s=HINGE_S)
    # warm-up on 300 points: compiles the numba kernels before any timing
    RampSVM(C=C, sigma=sigma, s=HINGE_S).fit(XL[:300], yL[:300])
    if n_unlabeled:
        warm_y = np.concatenate([yL[:200], np.full(100, -1)])
        CCCPTSVM(**{**dict(C=C, sigma=sigma, s=s, C_star=1.0), **extra,
                    "max_cccp_iter": 2}).fit(
            np.vstack([XL[:200], XU[:100]]), warm_y)
    t0 = time.process_time()
    w0 = time.perf_counter()
    if n_unlabeled == 0:
        est = svm.fit(XL, yL)
    else:
        params = dict(C=C, C_star=row["C_star"], sigma=sigma, s=s)
        params.update(extra)  # --param overrides the protocol (e.g. C_star)
        Xf = np.vstack([XL, XU])
        yf = np.concatenate([yL, np.full(len(XU), -1)])
        val_errors = {}
        est = None
        for c_star in c_star_grid or [params["C_star"]]:
            fit = CCCPTSVM(**{**params, "C_star": c_star}).fit(Xf, yf)
            val_errors[c_star] = float(np.mean(fit.predict(Xv) != yv))
            if est is None or val_errors[c_star] < min(
                    v for k, v in val_errors.items() if k != c_star):
                est = fit
    cpu = time.process_time() - t0
    wall = time.perf_counter() - w0
    pred = est.predict(Xte)
    out = {
        "n_labeled": n_labeled,
        "n_unlabeled": n_unlabeled,
        "C_star": getattr(est, "C_star_", None),
        "test_error": float(np.mean(pred != yte)),
        "paper_error": row["paper_error"],
        "fit_cpu_s": round(cpu, 2),
        "fit_wall_s": round(wall, 2),
        "peak_rss_mb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
                             / 1024, 1),
        "n_cccp_iter": np.asarray(getattr(est, "n_iter_", [])).tolist(),
        "validation_error": float(np.mean(est.predict(Xv) != yv)),
        "params": extra,
    }
    if n_unlabeled:
        if c_star_grid:
            out["validation_error_per_C_star"] = val_errors
        svm.fit(XL, yL)
        t = slice(0, n_test_u)
        out["transduced_error"] = float(np.mean(pred[t] != yte[t]))
        out["svm_error_on_transduced"] = float(np.mean(svm.predict(Xte[t]) != yte[t]))
        for attr in ("cache_rows_", "cache_hit_rate_", "kernel_rows_computed_"):
            out[attr] = getattr(est, attr, None)
    print("RESULT " + json.dumps(out), flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n-unlabeled", type=int, nargs="+",
                    default=[0, 2000, 5000, 10000])
    ap.add_argument("--n-labeled", type=int, default=None,
                    help="1000 (the protocol's default) or 100")
    ap.add_argument("--param", action="append", default=[],
                    help="extra CCCPTSVM parameter key=value (JSON value)")
    ap.add_argument("--c-star-grid", type=float, nargs="+",
                    help="fit every C* and keep the one of least validation "
                         "error (the paper's selection; fit CPU is the sum)")
    ap.add_argument("--out")
    ap.add_argument("--child", type=int, help=argparse.SUPPRESS)
    args = ap.parse_args()
    proto = yaml.safe_load(PROTOCOL.read_text())
    n_labeled = args.n_labeled or proto["n_labeled"]
    extra = dict(parse_param(p) for p in args.param)
    if args.child is not None:
        child(args.child, n_labeled, extra, args.c_star_grid)
        return
    results = []
    for u in args.n_unlabeled:
        cmd = [sys.executable, __file__, "--child", str(u), "--n-labeled",
               str(n_labeled)] + [f"--param={p}" for p in args.param]
        if args.c_star_grid:
            cmd += ["--c-star-grid"] + [str(c) for c in args.c_star_grid]
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        line = [ln for ln in res.stdout.splitlines() if ln.startswith("RESULT ")]
        if not line:
            print(res.stderr[-3000:], file=sys.stderr)
            continue
        results.append(json.loads(line[-1][7:]))
        print(json.dumps(results[-1]), flush=True)
    print(f"\n{n_labeled} labels")
    print("\n| U | C* | paper | ours | transduced: ours / SVM | fit CPU s "
          "| peak RSS MB "
          "| cache hit rate |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        trans = (f"{100 * r['transduced_error']:.2f} / "
                 f"{100 * r['svm_error_on_transduced']:.2f} %"
                 if "transduced_error" in r else "-")
        hit = r.get("cache_hit_rate_")
        print(f"| {r['n_unlabeled']} | {r['C_star'] or '-'} | "
              f"{100 * r['paper_error']:.2f} % | {100 * r['test_error']:.2f} % | "
              f"{trans} | {r['fit_cpu_s']} | {r['peak_rss_mb']} | "
              f"{'-' if hit is None else f'{hit:.4f}'} |")
    if args.out:
        Path(args.out).write_text(json.dumps(results, indent=1) + "\n")


if __name__ == "__main__":
    main()
