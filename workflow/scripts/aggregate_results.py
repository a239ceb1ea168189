"""Rule aggregate_results: all probe Parquets -> results/swapkl.parquet."""

from swapkl.joblog import job_log
from swapkl.probes.aggregate import aggregate
from swapkl.probes.aggregate import AggregateJob

with job_log(snakemake):
    aggregate(AggregateJob(probe_files=snakemake.input.probes, repr_files=snakemake.input.representation,
                           out=snakemake.output[0],
                           pair_sets=snakemake.params.pair_sets, n_boot=snakemake.params.n_boot,
                           seed=snakemake.params.seed))
