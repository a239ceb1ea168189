"""Rule summarise_scaling: results/scaling.parquet from the aggregate and the checkpoints."""

from swapkl.joblog import job_log
from swapkl.studies.scaling.stats import build_scaling

with job_log(snakemake):
    build_scaling(snakemake.input.table, dict(snakemake.params.checkpoints), snakemake.output[0])
