#!/bin/sh
# issue 13: ijcnn1 at n_u = 20 000 (paper 000 protocol), the CCCP-TSVM rows alone
# with a 1500 s budget (copy of paper000.yaml, only the CCCP budgets changed);
# only the C* = C n_l/n_u row (the session ran out of time for C* = C)
cd "$(dirname "$0")/../../.."
export NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
exec nice -n 5 .venv/bin/python benchmarks/harness.py \
  --protocol benchmarks/results/cccp_both_cstar/paper000_cccp1500s.yaml --datasets ijcnn1 \
  --n-unlabeled 20000 --seeds 0 --methods "SVC (labeled only)" \
  "TSGS3VM (default: L-BFGS, default features, C* = C n_l/n_u)" \
  "CCCP-TSVM (exact kernel, C* = C n_l/n_u)" \
  --no-mlflow --out-dir benchmarks/results/cccp_both_cstar
