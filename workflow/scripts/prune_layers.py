"""Rule prune_layers: guided and baseline block removal on one checkpoint, perplexity per budget."""

from swapkl.hub.absence import propagate
from swapkl.data.windows import DataSpec
from swapkl.joblog import job_log
from swapkl.pruning.prune import run_pruning
from swapkl.pruning.selection import SelectionOptions

with job_log(snakemake):
    p = snakemake.params
    if not propagate(p.checkpoint, snakemake.output):  # a seed-family member's absent revision
        run_pruning(p.checkpoint, list(snakemake.input.probes), snakemake.input.representation, snakemake.output.pruning,
                    budgets=p.budgets, spacing=p.spacing, eval_data=p.eval_data, calib_data=DataSpec(**p.calib_data),
                    n_random=p.n_random, seed=p.seed, dtype=p.dtype, batch_size=p.batch_size,
                    metadata=p.metadata, agreement_out=snakemake.output.agreement, selection=SelectionOptions(**p.selection),
                    angular_metric=p.angular_metric, allow_overlap=p.allow_overlap, compute_dtype=p.compute_dtype,
                    rope_scaling=p.rope_scaling, placement=p.placement)
