"""Rule prune_layers: guided and baseline block removal on one checkpoint, perplexity per budget."""

import logging
import sys

from swapkl.data import DataSpec
from swapkl.prune import run_pruning
from swapkl.selection import SelectionOptions

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
p = snakemake.params
run_pruning(p.checkpoint, list(snakemake.input.probes), snakemake.input.representation, snakemake.output.pruning,
            budgets=p.budgets, spacing=p.spacing, eval_data=p.eval_data, calib_data=DataSpec(**p.calib_data),
            n_random=p.n_random, seed=p.seed, n_boot=p.n_boot, dtype=p.dtype, batch_size=p.batch_size,
            metadata=p.metadata, agreement_out=snakemake.output.agreement, selection=SelectionOptions(**p.selection),
            angular_metric=p.angular_metric, allow_overlap=p.allow_overlap)
