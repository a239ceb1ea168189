"""Rule plot_relevance_zscores: per-task z-scores of AccRel (task dependence of block relevance)."""

from swapkl.figures.relevance_figure import plot_relevance_zscores
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_relevance_zscores(snakemake.input.relevance, snakemake.output.png, snakemake.output.pdf,
                           model=snakemake.wildcards.model, revision=snakemake.wildcards.revision)
