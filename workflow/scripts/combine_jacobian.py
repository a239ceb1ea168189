"""Rule combine_jacobian: the per-checkpoint Jacobian tables into results/jacobian.parquet."""

from swapkl.tables.combine import combine_jacobian
from swapkl.joblog import job_log

with job_log(snakemake):
    combine_jacobian(list(snakemake.input), snakemake.output[0])
