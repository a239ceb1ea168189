"""Rule combine_optimal_search: the per-checkpoint search tables into results/optimal_search.parquet."""

from swapkl.joblog import job_log
from swapkl.tables.combine import combine_optimal_search

with job_log(snakemake):
    combine_optimal_search(list(snakemake.input), snakemake.output[0])
