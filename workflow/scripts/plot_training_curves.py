"""Rule plot_training_curves: held-out and train loss vs step of every demo model."""

from swapkl.figures.training import plot_training_curves
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_training_curves(snakemake.params.training_logs, snakemake.output.png, snakemake.output.pdf)
