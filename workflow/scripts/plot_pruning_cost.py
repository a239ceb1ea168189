"""Rule plot_pruning_cost: delta perplexity and KL vs budget per guide, one checkpoint (results/pruning.parquet)."""

from swapkl.figures.pruning_figure import plot_delta_ppl
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_delta_ppl(snakemake.input.table, snakemake.wildcards.model, snakemake.wildcards.revision,
                   snakemake.output.png, snakemake.output.pdf)
