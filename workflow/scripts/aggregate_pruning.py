"""Rule aggregate_pruning: every prune_layers output -> results/pruning.parquet and the agreement table."""

from swapkl.joblog import job_log
from swapkl.pruning.table import aggregate_pruning
from swapkl.pruning.table import AggregatePruningJob

with job_log(snakemake):
    aggregate_pruning(AggregatePruningJob(inputs=snakemake.input.pruning, out=snakemake.output.pruning,
                                          agreement_inputs=snakemake.input.agreement,
                                          agreement_out=snakemake.output.agreement, n_boot=snakemake.params.n_boot))
