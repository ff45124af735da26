#!/bin/sh
# issue 13: the cheap CCCP-TSVM tables of the issue-5 section, both C* settings
cd "$(dirname "$0")/../../.."
export NUMBA_NUM_THREADS=1 OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1
H="nice -n 5 .venv/bin/python benchmarks/harness.py --no-mlflow --out-dir benchmarks/results/cccp_both_cstar"
$H --protocol paper004 --seeds 0 1 2 --methods "SVC (labeled only)" \
  "TSGS3VM (default: L-BFGS, default features, C* = C n_l/n_u)" \
  "CCCP-TSVM (exact kernel, C* = C n_l/n_u)" "CCCP-TSVM (exact kernel, C* = C)"
$H --protocol g50c_like --n-unlabeled 2000 10000 --seeds 0 1 2 --methods "SVC (labeled only)" \
  "TSGS3VM (default: L-BFGS, default features, C* = C n_l/n_u)" \
  "CCCP-TSVM (exact kernel, C* = C n_l/n_u)" "CCCP-TSVM (exact kernel, C* = C)"
$H --protocol paper000 --datasets "higgs 7.5k" --seeds 0 --methods "SVC (labeled only)" \
  "TSGS3VM (default: L-BFGS, default features, C* = C n_l/n_u)" \
  "CCCP-TSVM (exact kernel, C* = C n_l/n_u)" "CCCP-TSVM (exact kernel, C* = C)"
