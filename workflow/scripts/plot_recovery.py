"""Rule plot_recovery: the guides' delta PPL before and after healing."""

from swapkl.figures.recovery_figure import plot_recovery
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_recovery(snakemake.input.table, snakemake.output.png, snakemake.output.pdf)
