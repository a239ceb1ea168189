"""Rule plot_test_agreement: the disagreement map of one checkpoint."""

from swapkl.figures.test_agreement import plot_test_agreement
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_test_agreement(snakemake.input.table, snakemake.output.png, snakemake.output.pdf)
