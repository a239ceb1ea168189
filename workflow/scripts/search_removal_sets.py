"""Rule search_removal_sets: greedy, beam, best-first and exhaustive removal-set search on one checkpoint."""

from swapkl.data.data_spec import DataSpec
from swapkl.joblog import job_log
from swapkl.pruning.search_cost import run_optimal_search

with job_log(snakemake):
    p, w = snakemake.params, snakemake.wildcards
    run_optimal_search(p.checkpoint, DataSpec(**p.calibration), snakemake.output[0], dtype=p.dtype,
                       batch_size=p.batch_size, label=w.model, revision_label=w.revision, **p.settings)
