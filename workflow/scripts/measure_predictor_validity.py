"""Rule measure_predictor_validity: single-block removal costs and their correlation with the pair scores."""

from swapkl.joblog import job_log
from swapkl.studies.predictor_validity import run_predictor_validity

with job_log(snakemake):
    p = snakemake.params
    run_predictor_validity(p.checkpoint, snakemake.input.table, snakemake.output[0], eval_data=dict(p.eval_data),
                           label=snakemake.wildcards.model, revision=p.revision, dtype=p.dtype,
                           batch_size=p.batch_size)
