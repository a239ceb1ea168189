# Two commands run everything on a fresh machine:
#   make demo   install, then run the whole DAG on the offline demo trajectory
#   make test   install, then run the test suite
# TORCH picks the torch build: the default is the CPU wheel pinned for CI machines;
# on a CUDA machine use `make setup TORCH=torch` (PyPI's Linux wheel is the CUDA build).

PYTHON ?= python3
VENV   ?= .venv
TORCH  ?= torch==2.13.0
CORES  ?= all
BIN     = $(VENV)/bin
# torch's OpenMP threads spin while waiting; passive waiting keeps 2-core machines responsive
export OMP_WAIT_POLICY ?= PASSIVE

.PHONY: setup demo test test-fast

setup: $(VENV)/.swapkl-installed

$(VENV)/.swapkl-installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet "$(TORCH)"
	$(BIN)/pip install --quiet -e '.[dev,hub]'
	touch $@

demo: setup
	$(BIN)/snakemake --workflow-profile profiles/demo --cores $(CORES)
	$(BIN)/snakemake --workflow-profile profiles/demo --report results/report.html

test: setup
	$(BIN)/pytest -q

test-fast: setup
	$(BIN)/pytest -q -m "not slow"
