"""Rule plot_relevance_confusion: rank confusion matrix of AccRel against cosine (BI), one panel per task."""

from swapkl.figures.relevance_figure import plot_relevance_confusion
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_relevance_confusion(snakemake.input.stats, snakemake.output.png, snakemake.output.pdf,
                             model=snakemake.wildcards.model, revision=snakemake.wildcards.revision)
