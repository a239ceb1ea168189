"""Rule aggregate_decisions: results/decisions.parquet (swapkl.tables.combine.aggregate_decisions)."""

from swapkl.joblog import job_log
from swapkl.tables.combine import aggregate_decisions

with job_log(snakemake):
    aggregate_decisions(list(snakemake.input), snakemake.output[0])
