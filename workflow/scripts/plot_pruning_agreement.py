"""Rule plot_pruning_agreement: rank agreement between the pruning guides' per-layer scores, one checkpoint."""

from swapkl.figures.confusion import plot_rank_confusion
from swapkl.figures.pruning_figure import plot_agreement
from swapkl.joblog import job_log

with job_log(snakemake):
    plot_agreement(snakemake.input.table, snakemake.wildcards.model, snakemake.wildcards.revision,
                   snakemake.output.png, snakemake.output.pdf)
    plot_rank_confusion(snakemake.input.table, snakemake.wildcards.model, snakemake.wildcards.revision,
                        snakemake.output.confusion_png, snakemake.output.confusion_pdf)
