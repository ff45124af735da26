# The README's two commands are `make repro` and `make test`; .ci/run calls `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

export MLFLOW_DISABLE_TELEMETRY := true
export DO_NOT_TRACK := 1
export DVC_NO_ANALYTICS := 1
export NUMBA_CACHE_DIR := $(CURDIR)/.numba_cache
# One instruction set for numba's, OpenBLAS's and NumPy's kernels on every
# x86-64 host with AVX2 (as pipelines/python pins it for the stages): the
# host's own kernels (NumPy's AVX-512 exp/cos, say) round differently, and
# tests/test_decision_hashes.py checks models bit for bit on the pinned set.
# A value already in the environment wins.
ifneq ($(shell grep -qs '^flags.* avx2' /proc/cpuinfo && echo avx2),)
export OPENBLAS_CORETYPE ?= Haswell
export NUMBA_CPU_NAME ?= haswell
export NUMBA_CPU_FEATURES ?= +avx2,+fma
export NPY_DISABLE_CPU_FEATURES ?= X86_V4 AVX512_ICL AVX512_SPR
endif

.PHONY: venv test repro lint bench docs clean promote ui

$(STAMP): requirements.txt pyproject.toml
	@echo "setting up $(VENV) from requirements.txt (minutes)"
	@test -x $(BIN)/python || $(PY) -m venv $(VENV)
	@$(BIN)/pip install --quiet --upgrade pip
	@$(BIN)/pip install --quiet -r requirements.txt
	@$(BIN)/pip install --quiet --no-deps -e .
	@touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(BIN)/ruff check src tests pipelines benchmarks examples docs tools
	# the import layers of pyproject.toml [tool.importlinter]
	$(BIN)/lint-imports --no-cache
	# clone detector: no block of >= 6 repeated lines in src/
	$(BIN)/pylint --disable=all --enable=duplicate-code --min-similarity-lines=6 \
	  --score=n src/weakkernels
	# the Examples sections of the public docstrings, run as doctests
	$(BIN)/python -m pytest -q -p no:xdist --doctest-modules $(DOCTEST_MODULES)
	# pytest exits 5 when no test is collected: not a failure for CI.
	# One pytest worker per core (pytest-xdist); --dist loadfile keeps each test
	# file on one worker, so a module fixture (a reproduced project, a Dask
	# cluster, a tracking server) is built once, as in a serial run.
	# --no-loadscope-reorder: the files go out in tests/conftest.py's order
	# (the slow files first), not by their number of tests.
	$(BIN)/python -m pytest -q -n auto --dist loadfile --no-loadscope-reorder \
	  tests || [ $$? -eq 5 ]

# the modules whose public docstrings carry Examples (make test runs them)
DOCTEST_MODULES := src/weakkernels/tsgs3vm.py src/weakkernels/tsgsu.py \
  src/weakkernels/qsg_s2auc.py src/weakkernels/cccp_tsvm.py \
  src/weakkernels/random_features.py src/weakkernels/class_prior.py \
  src/weakkernels/_artifact.py src/weakkernels/baselines/su.py \
  src/weakkernels/baselines/auc.py src/weakkernels/_options.py \
  src/weakkernels/_selection.py

# the documentation site: docs/_build/html/index.html (offline, warnings are
# errors; the gallery's examples/plot_*.py run during the build)
docs: $(STAMP)
	MPLBACKEND=Agg $(BIN)/sphinx-build -W --keep-going -q -b html docs docs/_build/html

# the quick benchmark suite of benchmarks/harness.py (minutes, not hours)
bench: $(STAMP)
	$(BIN)/python benchmarks/harness.py --suite quick

# dvc repro, printing a header per stage and the stages' own lines
# (weakkernels.pipeline.dvc_repro drops DVC's echo of each command; DVC's
# warnings and errors stay)
repro: $(STAMP)
	@test -d .dvc || $(BIN)/dvc init --quiet
	@$(BIN)/dvc config core.analytics false
	@$(BIN)/dvc config core.check_update false
	@sh pipelines/python -m weakkernels.pipeline.params_schema params.yaml
	@$(BIN)/python -m weakkernels.pipeline.dvc_repro

# Serve a registered version by hand (the champion alias; evaluate moves it only
# on a resolved win): make promote MODEL=weakkernels-cod-rna VERSION=3
promote: $(STAMP)
	$(BIN)/python -m weakkernels.pipeline.promotion "$(MODEL)" "$(VERSION)"

# The MLflow UI on the project's store, at the experiment's runs table
ui: $(STAMP)
	sh pipelines/python pipelines/ui.py

lint: $(STAMP)
	$(BIN)/ruff check src tests pipelines benchmarks examples docs tools

clean:
	rm -rf .numba_cache .pytest_cache docs/_build docs/api/generated docs/auto_examples
