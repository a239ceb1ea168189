"""Rule export_pruned_models: each configured guide's pruned model at every budget, as loadable checkpoints."""

import logging
import sys

from swapkl.export import export_pruning_choices

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
export_pruning_choices(snakemake.input.pruning, snakemake.params.checkpoint, snakemake.output[0],
                       list(snakemake.params.guides), dtype=snakemake.params.dtype)
