"""Rule summarise_rope_counterfactual: a rope-off model against its rotary-on reference, with the sign test."""

from swapkl.joblog import job_log
from swapkl.studies.rope_counterfactual import build_counterfactual

with job_log(snakemake):
    p = snakemake.params
    build_counterfactual(snakemake.input.table, snakemake.output[0], model_on=p.reference,
                         model_off=snakemake.wildcards.model, revision=p.revision, pairs=p.pairs)
