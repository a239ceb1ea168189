"""Rule aggregate_spans: results/spans.parquet (swapkl.studies.spans.stats)."""

from swapkl.joblog import job_log
from swapkl.studies.spans.stats import aggregate_spans

with job_log(snakemake):
    aggregate_spans(snakemake.input.spans, snakemake.input.table, snakemake.output[0],
                    n_boot=snakemake.params.n_boot, seed=snakemake.params.seed)
