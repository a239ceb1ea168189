"""Rule aggregate_task_pruning: results/seed003_pruning.parquet and the paper's tables derived from it."""

from swapkl.joblog import job_log
from swapkl.relevance.task_tables import aggregate_task_pruning

with job_log(snakemake):
    aggregate_task_pruning(list(snakemake.input), snakemake.output.table, summary=snakemake.output.summary)
