"""Rule plot_pruning_agreement: rank agreement between the pruning guides' per-layer scores, one checkpoint."""

from swapkl.figures.pruning import plot_agreement
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_agreement(snakemake.input.table, snakemake.wildcards.model, snakemake.wildcards.revision,
                   snakemake.output.png, snakemake.output.pdf)
