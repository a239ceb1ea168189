"""Rule plot_deletion_vs_bi: deletion KL vs ShortGPT block influence of one checkpoint (results/swapkl.parquet)."""

from swapkl.figures.deletion import plot_deletion_vs_bi
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_deletion_vs_bi(snakemake.input.table, snakemake.output.png, snakemake.output.pdf,
                        model=snakemake.wildcards.model, revision=snakemake.wildcards.revision)
