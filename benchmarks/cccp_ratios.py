"""Compact tables and CPU-second speed-ups against both CCCP-TSVM C* settings
from harness JSON files (markdown on stdout).

Usage: ``.venv/bin/python benchmarks/cccp_ratios.py RESULT.json ...``; BENCHMARKS.md
"CCCP-TSVM re-measured in both C* settings" quotes its output
(``benchmarks/results/cccp_both_cstar/scaling_ratios.md``)."""
import json
import statistics as st
import sys
from collections import defaultdict

CCCP = ("CCCP-TSVM (exact kernel, C* = C n_l/n_u)", "CCCP-TSVM (exact kernel, C* = C)")


def short(m):
    return m.replace("exact kernel, ", "").replace(", default features", "")


for path in sys.argv[1:]:
    d = json.load(open(path))
    cells = defaultdict(lambda: defaultdict(list))
    for r in d["rows"]:
        cells[(r["dataset"], r.get("n_unlabeled"))][r["method"]].append(r)
    print(f"## {path}\n")
    for (ds, nu), ms in cells.items():
        print(f"**{ds}, n_u = {nu}**\n")
        print("| row | test error % | fit CPU s | fit wall s "
              "| x CPU vs CCCP C*=C n_l/n_u | x CPU vs CCCP C*=C |")
        print("|---|---:|---:|---:|---:|---:|")
        med = {}
        for m, rs in ms.items():
            ok = [r for r in rs if r.get("test_error") is not None]
            if ok:
                e = [100 * r["test_error"] for r in ok]
                med[m] = (st.median(e), min(e), max(e),
                          st.median(r["fit_cpu_s"] for r in ok),
                          st.median(r["fit_s"] for r in ok), len(ok), len(rs))
            else:
                med[m] = (None, rs[0].get("status"), rs[0].get("budget_time_s"))
        for m, v in med.items():
            if v[0] is None:
                print(f"| {m} | {v[1]} ({v[2]} s) | - | - | - | - |")
                continue
            e, lo, hi, cpu, wall, k, n = v
            rng = f" [{lo:.2f}–{hi:.2f}]" if n > 1 else ""
            rat = []
            for c in CCCP:
                if m not in CCCP and c in med and med[c][0] is not None:
                    x = med[c][3] / cpu if cpu > 0 else None
                    rat.append("-" if x is None else
                               f"{x:.0f}x" if x >= 10 else f"{x:.2g}x")
                else:
                    rat.append("")
            print(f"| {m} | {e:.2f}{rng} | {cpu:.3g} | {wall:.3g} "
                  f"| {rat[0]} | {rat[1]} |")
        print()
