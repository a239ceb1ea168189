"""Rule plot_convergence: rank agreement and top-pair stability against the number of prompts."""

from swapkl.figures.scale import plot_convergence
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_convergence(snakemake.input.table, snakemake.output.png, snakemake.output.pdf)
