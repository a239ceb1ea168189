"""Rule aggregate_recovery: the per-checkpoint recovery tables -> results/recovery.parquet."""

from swapkl.joblog import job_log
from swapkl.tables.combine import concat_tables

with job_log(snakemake):
    concat_tables(list(snakemake.input), snakemake.output[0])
