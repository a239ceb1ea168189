"""A gathering rule's script: the per-checkpoint tables of its input into its one output, each input's provenance
kept (rules combine_jacobian and aggregate_recovery)."""

from swapkl.tables.combine import concat_tables
from swapkl.joblog import job_log

with job_log(snakemake):
    concat_tables(list(snakemake.input), snakemake.output[0])
