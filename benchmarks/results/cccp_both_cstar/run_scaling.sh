#!/bin/sh
# issue 13: scaling_codrna (+ SVC row) with both CCCP-TSVM C* settings, seed 0
cd "$(dirname "$0")/../../.."
export NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
exec nice -n 5 .venv/bin/python benchmarks/harness.py \
  --protocol benchmarks/results/cccp_both_cstar/scaling_codrna_svc.yaml --seeds 0 \
  --n-unlabeled 1000 2000 5000 10000 20000 50000 --methods "SVC (labeled only)" \
  "TSGS3VM (default: L-BFGS, default features, C* = C n_l/n_u)" \
  "TSGS3VM (as printed, ceil(sqrt n) features per iteration, gamma = 0.001, C* = C n_l^2/n_u^2)" \
  "FRS3VM (default: L-BFGS, default features, C* = C n_l/n_u)" \
  "CCCP-TSVM (exact kernel, C* = C n_l/n_u)" "CCCP-TSVM (exact kernel, C* = C)" \
  --no-mlflow --out-dir benchmarks/results/cccp_both_cstar
