"""Rule plot_training_curves: held-out and train loss vs step of every demo model."""

import logging
import sys

from swapkl.figures import plot_training_curves

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
plot_training_curves(snakemake.params.training_logs, snakemake.output.png, snakemake.output.pdf)
