"""Paper 000's sizes through our own pipeline: Optuna-tuned, n_u up to 20 000.

The target: the paper 000 protocol (200 labeled, C* rule, n_u = 20 000 on
cod-rna, ijcnn1 and w8a) with hyper-parameters tuned by *our* Optuna stage on a
validation split. This runs the DVC pipeline itself, unchanged, in a separate
git worktree whose params.yaml differs from the default in four places:

    data.datasets          [cod-rna, ijcnn1, w8a]
    split.ssl.n_unlabeled  [2000, 20000]   (tune uses the smaller, as always)
    split.ssl.n_test       5000
    models.names           [svc, tsgs3vm, tsgs3vm_sgd, frs3vm, cccp_tsvm]

Every row gets the same tuning budget (tune.n_trials, 200 validation labels).

    .venv/bin/python benchmarks/paper000_tuned.py setup <dir>   # worktree <dir>/main
        [--datasets w8a --models svc tsgs3vm ...]  # a part of the run
    R=$PWD; cd <dir>/main && WK_PYTHON=$R/.venv/bin/python \
      PYTHONPATH=$PWD/src $R/.venv/bin/dvc repro     # the worktree's code
    cd $R && .venv/bin/python benchmarks/paper000_tuned.py table <dir>/main

``table`` reads test errors from ``results/predictions/*.npz`` and fit times
from the run's MLflow store, so it works on a run whose slowest fits were
stopped (those rows then say "did not finish").
"""

from __future__ import annotations

import argparse
import collections
import glob
import os
import sqlite3
import subprocess
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
OVERRIDES = (
    ("datasets: [g50c, cod-rna]", "datasets: [cod-rna, ijcnn1, w8a]"),
    ("n_unlabeled: [500, 2000]   # nested", "n_unlabeled: [2000, 20000] # nested"),
    ("n_test: 2000", "n_test: 5000"),
)
MODELS = "[svc, tsgs3vm, tsgs3vm_sgd, frs3vm, cccp_tsvm]"


def setup(out: Path, datasets=None, models=None) -> None:
    """A worktree of HEAD at ``out/main`` with the data mirror beside it
    (``datasets`` / ``models``: lists replacing the defaults above, to split
    the run, e.g. w8a without its hour-long CCCP-TSVM fits)."""
    out.mkdir(parents=True, exist_ok=True)
    subprocess.run(["git", "-C", str(ROOT), "worktree", "add", "-q",
                    str(out / "main"), "HEAD"], check=True)
    shared = out / "shared"
    if not shared.exists():
        shared.symlink_to((ROOT.parent / "shared").resolve())
    params = out / "main" / "params.yaml"
    text = params.read_text()
    overrides = list(OVERRIDES)
    if datasets:
        overrides[0] = (OVERRIDES[0][0], f"datasets: [{', '.join(datasets)}]")
    for old, new in overrides:
        if old not in text:
            raise SystemExit(f"params.yaml no longer holds {old!r}: update OVERRIDES")
        text = text.replace(old, new)
    start = text.index("  names: [")
    end = text.index("]", start) + 1
    names = f"[{', '.join(models)}]" if models else MODELS
    text = text[:start] + f"  names: {names}" + text[end:]
    params.write_text(text)
    print(f"worktree ready: {out / 'main'}")


def table(run: Path) -> None:
    os.chdir(run)
    err = collections.defaultdict(list)
    for f in glob.glob("results/predictions/*.npz"):
        model, ds, nu, _ = Path(f).stem.split("__")
        z = np.load(f)
        wrong = np.mean(z["pred_test"] != z["y_test"])
        err[(ds, int(nu[2:]), model)].append(float(wrong))
    fit = collections.defaultdict(list)
    con = sqlite3.connect("mlflow.db")
    q = """select t1.value, t2.value, t3.value, m.value from metrics m
      join tags t1 on t1.run_uuid = m.run_uuid and t1.key = 'model'
      join tags t2 on t2.run_uuid = m.run_uuid and t2.key = 'dataset'
      join tags t3 on t3.run_uuid = m.run_uuid and t3.key = 'n_unlabeled'
      join tags t4 on t4.run_uuid = m.run_uuid and t4.key = 'mlflow.source.name'
                   and t4.value like '%train%'
      where m.key = 'fit_time_s'"""
    for model, ds, nu, v in con.execute(q):
        fit[(ds, int(nu), model)].append(v)
    import yaml

    models = yaml.safe_load(Path("params.yaml").read_text())["models"]["names"]
    for ds in sorted({k[0] for k in err}):
        for nu in sorted({k[1] for k in err if k[0] == ds}):
            ys = [np.load(f)["y_test"] for f in sorted(
                glob.glob(f"results/predictions/svc__{ds}__nu{nu}__seed*.npz"))]
            maj = float(np.mean([min(y.mean(), 1 - y.mean()) for y in ys]))
            print(f"\n**{ds}, n_u = {nu}** (majority-class test error "
                  f"{100 * maj:.2f} %)\n")
            print("| model | test error %, mean (per seed) | median fit s |")
            print("|---|---|---:|")
            rows = sorted((np.mean(err[(ds, nu, m)]), m) for m in models
                          if (ds, nu, m) in err)
            for mean, m in rows:
                flag = " ⚠ at or above chance" if mean >= maj - 1e-9 else ""
                cells = ", ".join(f"{100 * x:.2f}" for x in sorted(err[(ds, nu, m)]))
                ft = fit.get((ds, nu, m))
                t = f"{np.median(ft):.3g}" if ft else "-"
                print(f"| {m}{flag} | {100 * mean:.2f} ({cells}) | {t} |")
            for m in models:
                if (ds, nu, m) not in err:
                    print(f"| {m} | did not finish | - |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("setup")
    p.add_argument("out", type=Path)
    p.add_argument("--datasets", nargs="+")
    p.add_argument("--models", nargs="+")
    sub.add_parser("table").add_argument("run", type=Path)
    args = ap.parse_args(argv)
    if args.cmd == "setup":
        setup(args.out, args.datasets, args.models)
    else:
        table(args.run)


if __name__ == "__main__":
    main()
