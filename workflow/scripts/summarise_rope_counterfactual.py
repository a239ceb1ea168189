"""Rule summarise_rope_counterfactual: each rope-off model against its rotary-on reference, with the sign test."""

from swapkl.joblog import job_log
from swapkl.studies.rope_counterfactual.stats import build_counterfactual

with job_log(snakemake):
    build_counterfactual(snakemake.input.table, snakemake.output[0], [tuple(c) for c in snakemake.params.comparisons])
