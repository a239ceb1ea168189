"""Rule plot_gap_trajectory: one figure per model from results/swapkl.parquet."""

from swapkl.figures import plot_gap_trajectory
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_gap_trajectory(snakemake.input.table, snakemake.output.png, snakemake.output.pdf, model=snakemake.wildcards.model)
