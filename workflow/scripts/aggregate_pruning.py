"""Rule aggregate_pruning: every prune_layers output -> results/pruning.parquet and the agreement table."""

import logging
import sys

from swapkl.prune import aggregate_pruning

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
aggregate_pruning(list(snakemake.input.pruning), snakemake.output.pruning,
                  agreement_inputs=list(snakemake.input.agreement), agreement_out=snakemake.output.agreement)
