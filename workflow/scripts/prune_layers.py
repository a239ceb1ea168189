"""Rule prune_layers: guided and baseline block removal on one checkpoint, perplexity per budget."""

from swapkl.hub.absence import propagate
from swapkl.joblog import job_log
from swapkl.pruning.prune_jobs import PruneJob

with job_log(snakemake):
    p = snakemake.params
    if not propagate(p.checkpoint, snakemake.output):  # a seed-family member's absent revision
        PruneJob(model=p.checkpoint, probe_files=snakemake.input.probes, repr_file=snakemake.input.representation,
                 out=snakemake.output.pruning, budgets=p.budgets, spacing=p.spacing, eval_data=p.eval_data,
                 calib_data=p.calib_data, n_random=p.n_random, seed=p.seed, dtype=p.dtype, batch_size=p.batch_size,
                 metadata=p.metadata, agreement_out=snakemake.output.agreement, selection=p.selection,
                 angular_metric=p.angular_metric, allow_overlap=p.allow_overlap, compute_dtype=p.compute_dtype,
                 rope_scaling=p.rope_scaling, logits_dtype=p.logits_dtype, placement=p.placement).run()
