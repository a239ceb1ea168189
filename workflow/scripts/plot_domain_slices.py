"""Rule plot_domain_slices: pruning cost on the reference text against the second corpus."""

from swapkl.figures.scale import plot_domain_slices
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_domain_slices(snakemake.input.table, snakemake.output.png, snakemake.output.pdf)
