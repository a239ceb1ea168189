"""Rule plot_ratio_by_distance: I/R ratio by pair distance, one figure per model (results/swapkl.parquet)."""

from swapkl.figures import plot_ratio_by_distance
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_ratio_by_distance(snakemake.input.table, snakemake.output.png, snakemake.output.pdf, model=snakemake.wildcards.model)
