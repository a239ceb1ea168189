"""Rule aggregate_downstream: the per-checkpoint downstream tables -> results/downstream.parquet."""

from swapkl.joblog import job_log
from swapkl.tables.combine import aggregate_downstream

with job_log(snakemake):
    aggregate_downstream(list(snakemake.input), snakemake.output[0])
