"""Rule export_pruned_models: each configured guide's pruned model at every budget, as loadable checkpoints."""

from swapkl.export import export_pruning_choices
from swapkl.joblog import job_log

with job_log(snakemake):
    export_pruning_choices(snakemake.input.pruning, snakemake.params.checkpoint, snakemake.output[0],
                           list(snakemake.params.export_guides), dtype=snakemake.params.dtype)
