"""Rule plot_pruning_trajectory: I/R pruning ratio vs training step of one model, one line per budget."""

import logging
import sys

from swapkl.figures.pruning import plot_ir_trajectory

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
plot_ir_trajectory(snakemake.input.table, snakemake.wildcards.model, snakemake.output.png, snakemake.output.pdf,
                   n_boot=snakemake.params.n_boot, seed=snakemake.params.seed)
