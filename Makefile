# Two commands run everything on a fresh machine:
#   make demo   install, then run the whole DAG on the offline demo trajectory
#   make test   install, then run the test suite
# TORCH picks the torch build: the default is the CPU wheel pinned for CI machines;
# on a CUDA machine use `make setup TORCH=torch` (PyPI's Linux wheel is the CUDA build).

PYTHON ?= python3
VENV   ?= .venv
TORCH  ?= torch==2.13.0
CORES  ?= all
# The demo uses no GPU. On a CPU the `gpu` resource only limits how many probe/prune jobs run at once, and
# a tiny demo job spends most of its time starting Python, so two run side by side with one thread each.
DEMO_GPU_SLOTS ?= 2
DEMO_FLAGS = --resources gpu=$(DEMO_GPU_SLOTS) \
	--set-threads probe_replacement=1 probe_interchange=1 probe_deletion=1 prune_layers=1
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
	$(BIN)/snakemake --cores $(CORES) --configfile config/demo.yaml --workflow-profile profiles/default $(DEMO_FLAGS)
	$(BIN)/snakemake --cores $(CORES) --configfile config/demo.yaml --report results/report.html

test: setup
	$(BIN)/pytest -q

test-fast: setup
	$(BIN)/pytest -q -m "not slow"
