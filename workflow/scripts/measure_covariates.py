"""Rule measure_covariates: the per-pair gap covariates of one checkpoint (swapkl.stats.covariates)."""

from swapkl.hub.absence import propagate
from swapkl.stats.covariates import run_covariates
from swapkl.data.windows import DataSpec
from swapkl.joblog import job_log

with job_log(snakemake):
    p = snakemake.params
    if not propagate(p.checkpoint, snakemake.output):  # a seed-family member's absent revision
        run_covariates(p.checkpoint, snakemake.output[0], pairs=p.pairs, data=DataSpec(**p.data), dtype=p.dtype,
                       batch_size=p.batch_size, metadata=p.metadata)
