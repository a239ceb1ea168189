"""Rule aggregate_relevance: results/relevance.parquet from the per-checkpoint relevance files."""

from swapkl.joblog import job_log
from swapkl.tables.combine import aggregate_relevance

with job_log(snakemake):
    aggregate_relevance(list(snakemake.input), snakemake.output[0])
