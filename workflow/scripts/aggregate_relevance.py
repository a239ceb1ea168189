"""Rule aggregate_relevance: results/relevance.parquet from the per-checkpoint relevance files."""

import logging
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
from swapkl.relevance import aggregate_relevance

aggregate_relevance(list(snakemake.input), snakemake.output[0])
