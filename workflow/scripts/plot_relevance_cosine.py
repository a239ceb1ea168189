"""Rule plot_relevance_cosine: cosine similarity (1 - BI) vs AccRel per block and task, Pearson R."""

import logging
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
from swapkl.figures.relevance import plot_cosine_vs_relevance

plot_cosine_vs_relevance(snakemake.input.relevance, snakemake.input.table, snakemake.output.png,
                         snakemake.output.pdf, model=snakemake.wildcards.model, revision=snakemake.wildcards.revision)
