"""Rule summarise_relevance: results/relevance_stats.parquet (relevance against cosine / BI, task dependence)."""

from swapkl.joblog import job_log
from swapkl.relevance.relevance_stats import summarise_relevance

with job_log(snakemake):
    summarise_relevance(snakemake.input.relevance, snakemake.input.table, snakemake.output[0])
