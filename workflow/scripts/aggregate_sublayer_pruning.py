"""Rule aggregate_sublayer_pruning: results/sublayer_pruning.parquet (swapkl.studies.sublayers.stats)."""

from swapkl.joblog import job_log
from swapkl.studies.sublayers.stats import aggregate_sublayer_pruning

with job_log(snakemake):
    aggregate_sublayer_pruning(list(snakemake.input), snakemake.output[0])
