"""Rule aggregate_pruning: every prune_layers output -> results/pruning.parquet and the agreement table."""

from swapkl.joblog import job_log
from swapkl.pruning.table import aggregate_pruning

with job_log(snakemake):
    aggregate_pruning(snakemake.input.pruning, snakemake.output.pruning, agreement_inputs=snakemake.input.agreement,
                      agreement_out=snakemake.output.agreement, n_boot=snakemake.params.n_boot)
