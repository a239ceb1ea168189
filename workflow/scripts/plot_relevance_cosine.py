"""Rule plot_relevance_cosine: cosine similarity (1 - BI) vs AccRel per block and task, Pearson R."""

from swapkl.figures.relevance_figure import plot_cosine_vs_relevance
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_cosine_vs_relevance(snakemake.input.relevance, snakemake.input.table, snakemake.output.png,
                             snakemake.output.pdf, model=snakemake.wildcards.model, revision=snakemake.wildcards.revision)
