"""Rule aggregate_healed: per-checkpoint healed and disagreement tables -> results/healed.parquet and
results/test_agreement.parquet."""

from swapkl.joblog import job_log
from swapkl.tables.combine import concat_tables

with job_log(snakemake):
    concat_tables(list(snakemake.input.healed), snakemake.output.healed)
    concat_tables(list(snakemake.input.agreement), snakemake.output.agreement)
