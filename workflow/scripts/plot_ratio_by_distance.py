"""Rule plot_ratio_by_distance: I/R ratio by pair distance, one figure per model (results/swapkl.parquet)."""

import logging
import sys

from swapkl.figures import plot_ratio_by_distance

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
out, model = snakemake.output, snakemake.wildcards.model
plot_ratio_by_distance(snakemake.input.table, out.png, out.pdf, model=model, gap="max")
plot_ratio_by_distance(snakemake.input.table, out.png_fwd, out.pdf_fwd, model=model, gap="fwd")
