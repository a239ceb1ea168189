"""Rule measure_jacobian: ||J_k||_2 of every block of one checkpoint."""

from swapkl.data.data_spec import DataSpec
from swapkl.studies.jacobian import run_jacobian
from swapkl.joblog import job_log

with job_log(snakemake):
    p = snakemake.params
    run_jacobian(p.checkpoint, snakemake.output[0], data=DataSpec(**p.data), dtype=p.dtype, metadata=p.metadata,
                 **p.settings)
