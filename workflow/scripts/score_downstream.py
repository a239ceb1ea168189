"""Rule score_downstream: the downstream tasks on one checkpoint, its pruning guides' pruned models and its healed
models."""

from swapkl.joblog import job_log
from swapkl.relevance.downstream import healed_folders
from swapkl.relevance.downstream_jobs import DownstreamJob

with job_log(snakemake):
    p, i = snakemake.params, snakemake.input
    DownstreamJob(model=p.checkpoint, out=snakemake.output[0], task_files=i.tasks, last_word_files=i.last_word,
                  lm_eval_tasks=p.lm_eval_tasks, limit=p.limit, pruning=i.get("pruning"), pruning_guides=p.pruning_guides,
                  healed=healed_folders(i.healed) if "healed" in i.keys() else (), label=snakemake.wildcards.model,
                  revision_label=snakemake.wildcards.revision, dtype=p.dtype, batch_size=p.batch_size,
                  placement=p.placement).run()
