"""Rule plot_weight_protocols: averaging and head-level interchange of one checkpoint (results/swapkl.parquet)."""

import logging
import sys

from swapkl.figures import plot_weight_protocols

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
plot_weight_protocols(snakemake.input.table, snakemake.output.png, snakemake.output.pdf,
                      model=snakemake.wildcards.model, revision=snakemake.wildcards.revision)
