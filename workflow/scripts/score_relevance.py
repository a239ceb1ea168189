"""Rule score_relevance: AccRel of every block of one checkpoint (and of its pruning guides' pruned models)
on its tasks (and LM windows)."""

from swapkl.data.windows import DataSpec
from swapkl.joblog import job_log
from swapkl.relevance.accrel import run_relevance

with job_log(snakemake):
    p = snakemake.params
    run_relevance(p.checkpoint, list(p.tasks), snakemake.output[0], lm_data=None if p.lm is None else DataSpec(**p.lm),
                  label=snakemake.wildcards.model, revision_label=snakemake.wildcards.revision, dtype=p.dtype,
                  batch_size=p.batch_size, harness_tasks=list(p.lm_eval_tasks),
                  lm_sets={name: DataSpec(**spec) for name, spec in p.lm_sets.items()},
                  pruning=snakemake.input.get("pruning"), pruning_guides=p.pruning_guides, placement=p.placement)
