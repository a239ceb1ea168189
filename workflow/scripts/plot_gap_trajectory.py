"""Rule plot_gap_trajectory: one figure per model from results/swapkl.parquet."""

import logging
import sys

from swapkl.figures import plot_gap_trajectory

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
plot_gap_trajectory(snakemake.input.table, snakemake.output.png, snakemake.output.pdf, model=snakemake.wildcards.model)
