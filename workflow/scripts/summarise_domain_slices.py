"""Rule summarise_domain_slices: rank correlation of the pruning cost on two corpora."""

from swapkl.studies.domain_slices.stats import build_domain_slices
from swapkl.joblog import job_log

with job_log(snakemake):
    build_domain_slices(snakemake.input.table, snakemake.output[0], [tuple(s) for s in snakemake.params.slices])
