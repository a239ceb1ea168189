"""Rule summarise_convergence: prompt-set convergence from the stored per-sequence sums."""

from swapkl.studies.convergence.stats import build_convergence
from swapkl.joblog import job_log

with job_log(snakemake):
    checkpoints = {(model, revision): files for model, revision, files in snakemake.params.checkpoints}
    build_convergence(checkpoints, snakemake.output[0], seed=snakemake.params.seed)
