"""Rule plot_pruning_agreement: rank agreement between the pruning guides' per-layer scores, one checkpoint."""

import logging
import sys

from swapkl.figures.confusion import plot_rank_confusion
from swapkl.figures.pruning import plot_agreement

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
plot_agreement(snakemake.input.table, snakemake.wildcards.model, snakemake.wildcards.revision,
               snakemake.output.png, snakemake.output.pdf)
plot_rank_confusion(snakemake.input.table, snakemake.wildcards.model, snakemake.wildcards.revision,
                    snakemake.output.confusion_png, snakemake.output.confusion_pdf)
