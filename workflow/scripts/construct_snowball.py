"""Rule construct_snowball: the snowball model built on a demo task, one row per block."""

from swapkl.joblog import job_log
from swapkl.relevance.snowball_table import run_snowball

with job_log(snakemake):
    run_snowball(snakemake.input.task, snakemake.output[0], **snakemake.params.settings)
