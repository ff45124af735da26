"""Paper 004 Figure 1.10 from the Table 1.5 result files: fit CPU time against U.

Usage::

    .venv/bin/python benchmarks/cccp_mnist_time_vs_u.py \\
        benchmarks/results/cccp_mnist/table15_L1000*.json --out time_vs_u.png

Reads the JSON files written by ``benchmarks/cccp_mnist_table15.py --out``
(rows with 1 000 labels and U > 0; a U present in several files keeps the
last), prints the least-squares slope of log(time) on log(U) (time ~ U^slope)
and the paper's fit, a degree-two polynomial in U by least squares, and plots
both with the measurements.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import numpy as np


def fit_curve(U, t):
    """(log-log slope, degree-2 least-squares coefficients) of time against U."""
    U = np.asarray(U, dtype=float)
    t = np.asarray(t, dtype=float)
    slope, _ = np.polyfit(np.log(U), np.log(t), 1)
    return float(slope), np.polyfit(U, t, 2)


def plot(U, t, slope, quad, n_labeled, out, label="CCCP-TSVM fit (CPU s)"):
    """The measured times and the paper's parabola (Figure 1.10) as a PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = np.linspace(0, max(U), 200)
    fig, ax = plt.subplots(figsize=(5, 3.5))
    ax.plot(U, t, "o", label=label)
    ax.plot(grid, np.polyval(quad, grid), "--", label="degree-2 least squares")
    ax.set_xlabel("unlabeled examples U")
    ax.set_ylabel("fit CPU seconds")
    ax.set_title(f"MNIST, {n_labeled} labels (paper 004 Fig. 1.10); "
                 f"slope {slope:.2f}", fontsize=9)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("files", nargs="+")
    ap.add_argument("--n-labeled", type=int, default=1000)
    ap.add_argument("--out", help="PNG of the curve")
    args = ap.parse_args()
    rows = {}
    for f in args.files:
        for r in json.loads(Path(f).read_text()):
            if r["n_labeled"] == args.n_labeled and r["n_unlabeled"] > 0 \
                    and "c_star_grid" not in f and "validation_error_per_C_star" \
                    not in r:
                rows[r["n_unlabeled"]] = r
    U = np.array(sorted(rows), dtype=float)
    t = np.array([rows[u]["fit_cpu_s"] for u in sorted(rows)])
    slope, quad = fit_curve(U, t)
    print("| U | fit CPU s | peak RSS MB | cache dtype |")
    print("|---|---|---|---|")
    for u in sorted(rows):
        r = rows[u]
        print(f"| {u} | {r['fit_cpu_s']} | {r['peak_rss_mb']} | "
              f"{r.get('params', {}).get('cache_dtype', 'float64')} |")
    print(f"\nlog-log slope: time ~ U^{slope:.2f}; degree-2 fit: "
          f"{quad[0]:.3g} U^2 + {quad[1]:.3g} U + {quad[2]:.3g}")
    if args.out:
        plot(U, t, slope, quad, args.n_labeled, args.out,
             label="CCCP-TSVM fit (CPU s, 1 thread)")


if __name__ == "__main__":
    main()
