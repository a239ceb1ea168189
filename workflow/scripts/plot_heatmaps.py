"""Rule plot_heatmaps: replacement and interchange KL matrices of one checkpoint (results/swapkl.parquet)."""

from swapkl.figures.heatmaps import plot_heatmaps
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_heatmaps(snakemake.input.table, snakemake.output.png, snakemake.output.pdf, model=snakemake.wildcards.model,
            revision=snakemake.wildcards.revision)
