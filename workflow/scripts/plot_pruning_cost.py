"""Rule plot_pruning_cost: delta perplexity and KL vs budget per guide, one checkpoint (results/pruning.parquet)."""

import logging
import sys

from swapkl.figures.pruning import plot_delta_ppl

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
plot_delta_ppl(snakemake.input.table, snakemake.wildcards.model, snakemake.wildcards.revision,
               snakemake.output.png, snakemake.output.pdf)
