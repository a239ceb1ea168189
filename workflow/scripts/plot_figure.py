"""Every plot_* rule: draws the figures the registry gives the rule (swapkl.figures.figure_registry; the figure
families' and the study folders')."""

import swapkl.studies  # noqa: F401  (the study folders register the figures they hold)
from swapkl.figures.figure_registry import draw_job
from swapkl.joblog import job_log

with job_log(snakemake):
    draw_job(snakemake.rule, dict(snakemake.input.items()), dict(snakemake.output.items()),
             dict(snakemake.wildcards.items()), dict(snakemake.params.items()))
