"""Rule plot_weight_protocols: averaging and head-level interchange of one checkpoint (results/swapkl.parquet)."""

from swapkl.figures.weights import plot_weight_protocols
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_weight_protocols(snakemake.input.table, snakemake.output.png, snakemake.output.pdf,
                          model=snakemake.wildcards.model, revision=snakemake.wildcards.revision)
