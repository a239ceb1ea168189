"""Rule plot_relevance_zscores: per-task z-scores of AccRel (task dependence of block relevance)."""

import logging
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
from swapkl.figures.relevance import plot_relevance_zscores

plot_relevance_zscores(snakemake.input.relevance, snakemake.output.png, snakemake.output.pdf,
                       model=snakemake.wildcards.model, revision=snakemake.wildcards.revision)
