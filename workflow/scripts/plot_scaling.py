"""Rule plot_scaling: mean gap and I/R ratio against parameters, coloured by position encoding."""

from swapkl.figures.scale import plot_scaling
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_scaling(snakemake.input.table, snakemake.output.png, snakemake.output.pdf)
