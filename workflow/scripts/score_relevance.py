"""Rule score_relevance: AccRel of every block of one checkpoint (and of its pruning guides' pruned models)
on its tasks (and LM windows)."""

from swapkl.joblog import job_log
from swapkl.relevance.relevance_jobs import RelevanceJob

with job_log(snakemake):
    p = snakemake.params
    RelevanceJob(model=p.checkpoint, task_files=p.tasks, out=snakemake.output[0], lm_data=p.lm,
                 label=snakemake.wildcards.model, revision_label=snakemake.wildcards.revision, dtype=p.dtype,
                 batch_size=p.batch_size, harness_tasks=p.lm_eval_tasks, lm_sets=p.lm_sets,
                 pruning=snakemake.input.get("pruning"), pruning_guides=p.pruning_guides, placement=p.placement).run()
