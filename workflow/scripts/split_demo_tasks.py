"""Rule split_demo_tasks: the demo tasks with a training and a test half (task-calibrated pruning)."""

import os

from swapkl.demo.split_tasks import split_demo_task
from swapkl.joblog import job_log

with job_log(snakemake):
    for path in snakemake.input:
        if path.endswith(".yaml"):
            split_demo_task(path, os.path.dirname(snakemake.output[0]))
