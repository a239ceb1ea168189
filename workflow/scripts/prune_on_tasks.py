"""Rule prune_on_tasks: one calibration set's pruned models of one checkpoint, evaluated on every task."""

from swapkl.joblog import job_log
from swapkl.relevance.task_pruning import run_task_pruning

with job_log(snakemake):
    p = snakemake.params
    run_task_pruning(p.checkpoint, snakemake.output[0], **p.job, label=snakemake.wildcards.model,
                     revision_label=snakemake.wildcards.revision, dtype=p.dtype, batch_size=p.batch_size,
                     placement=p.placement)
