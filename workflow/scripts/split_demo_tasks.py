"""Rule split_demo_tasks: one demo task with a training and a test half (task-calibrated pruning)."""

import os

from swapkl.joblog import job_log
from swapkl.demo.split_tasks import split_demo_task

with job_log(snakemake):
    split_demo_task(snakemake.input[0], os.path.dirname(snakemake.output[0]))
