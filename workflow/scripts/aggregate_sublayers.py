"""Rule aggregate_sublayers: results/sublayer_gaps.parquet (swapkl.studies.sublayers.stats)."""

from swapkl.joblog import job_log
from swapkl.studies.sublayers.stats import aggregate_sublayers

with job_log(snakemake):
    aggregate_sublayers(list(snakemake.input), snakemake.output[0])
