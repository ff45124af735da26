#!/bin/sh
# issue 13: paper 000 protocol on w8a (w6a pool), n_u = 20 000; seeds as arguments (default 0)
cd "$(dirname "$0")/../../.."
export NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
SEEDS="${*:-0}"
exec nice -n 5 .venv/bin/python benchmarks/harness.py --protocol paper000 \
  --datasets "w8a (w6a pool)" --n-unlabeled 20000 --seeds $SEEDS --methods \
  "SVC (labeled only)" \
  "TSGS3VM (as printed, ceil(sqrt n) features in total, gamma = 0.001, C* = C n_l^2/n_u^2)" \
  "TSGS3VM (as printed, ceil(sqrt n) features per iteration, gamma = 0.001, C* = C n_l^2/n_u^2)" \
  "TSGS3VM (default: L-BFGS, default features, C* = C n_l/n_u)" \
  "TSGS3VM (default: L-BFGS, default features, C* = C n_l/n_u, sigma = scale)" \
  "TSGS3VM (L-BFGS, default features, C* = C n_l^2/n_u^2)" \
  "FRS3VM (as printed, ceil(sqrt n) features, 10 passes, gamma = 0.001, C* = C n_l^2/n_u^2)" \
  "FRS3VM (default: L-BFGS, default features, C* = C n_l/n_u)" \
  "CCCP-TSVM (exact kernel, C* = C n_l/n_u)" "CCCP-TSVM (exact kernel, C* = C)" \
  --no-mlflow --out-dir benchmarks/results/cccp_both_cstar
