"""Every plot_* rule: draws the figures the registry gives the rule (swapkl.figures.figure_registry)."""

from swapkl.figures.figure_registry import draw_job
from swapkl.joblog import job_log

with job_log(snakemake):
    draw_job(snakemake.rule, dict(snakemake.input.items()), dict(snakemake.output.items()),
             dict(snakemake.wildcards.items()), dict(snakemake.params.items()))
