"""Rules probe_checkpoint* (one file per protocol that changes no weights, deletion's representation file, the
covariates) and probe (one weight-changing protocol): one job on one checkpoint."""

from swapkl.hub.absence import propagate
from swapkl.joblog import job_log
from swapkl.probes.probe_jobs import ProbeJob

with job_log(snakemake):
    p = snakemake.params
    if not propagate(p.checkpoint, snakemake.output):  # a seed-family member's absent revision
        ProbeJob(model=p.checkpoint, out=p.out, protocols=tuple(p.out), pairs=p.pairs, data=p.data,
                 dtype=p.dtype, batch_size=p.batch_size, repr_out=snakemake.output.get("representation"),
                 progress_path=p.progress, metadata=p.metadata, rope_scaling=p.rope_scaling,
                 logits_dtype=p.logits_dtype, kl_options=p.kl, rope=p.rope, placement=p.placement,
                 covariates_out=snakemake.output.get("covariates")).run()
