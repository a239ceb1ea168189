"""Every rule that runs one job of a stage: params.job (the job's settings, built from the config by
swapkl.config.rule_jobs) and params.files (where the rule keeps its files)."""

from swapkl.config.rule_jobs import run_rule_job
from swapkl.joblog import job_log

with job_log(snakemake):
    run_rule_job(snakemake.params.job, snakemake.params.files, snakemake.output)
