"""Rule aggregate_results: all probe Parquets -> results/swapkl.parquet."""

import logging
import sys

from swapkl.aggregate import aggregate

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
aggregate(list(snakemake.input.probes), list(snakemake.input.representation), snakemake.output[0],
          pair_sets=snakemake.params.pair_sets, n_boot=snakemake.params.n_boot, seed=snakemake.params.seed)
