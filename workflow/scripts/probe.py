"""Rules probe_replacement / probe_interchange / probe_deletion: one protocol on one checkpoint."""

import logging
import sys

from swapkl.data import DataSpec
from swapkl.probe import run_probe

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
p = snakemake.params
run_probe(p.checkpoint, snakemake.output.probe, protocols=[p.protocol], pairs=p.pairs, data=DataSpec(**p.data),
          dtype=p.dtype, batch_size=p.batch_size, n_boot=p.n_boot, seed=p.seed,
          repr_out=snakemake.output.get("representation"), progress_path=p.progress, metadata=p.metadata)
