"""Rule plot_gap_trajectory: per model, the gap of both replacement directions (max) and of one (fwd)."""

import logging
import sys

from swapkl.figures import plot_gap_trajectory

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
out, model = snakemake.output, snakemake.wildcards.model
plot_gap_trajectory(snakemake.input.table, out.png, out.pdf, model=model, gap="max")
plot_gap_trajectory(snakemake.input.table, out.png_fwd, out.pdf_fwd, model=model, gap="fwd")
