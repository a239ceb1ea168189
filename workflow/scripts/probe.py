"""Rules probe (one per protocol of swapkl.probes.protocols) and probe_deletion: one protocol on one checkpoint."""

from swapkl.hub.absence import propagate
from swapkl.data.windows import DataSpec
from swapkl.joblog import job_log
from swapkl.model.kl import KLOptions
from swapkl.probes.probe import run_probe

with job_log(snakemake):
    p = snakemake.params
    if not propagate(p.checkpoint, snakemake.output):  # a seed-family member's absent revision
        run_probe(p.checkpoint, snakemake.output.probe, protocols=[p.protocol], pairs=p.pairs, data=DataSpec(**p.data),
                  dtype=p.dtype, batch_size=p.batch_size, repr_out=snakemake.output.get("representation"),
                  progress_path=p.progress, metadata=p.metadata, rope_scaling=p.rope_scaling,
                  kl_options=KLOptions(**p.kl), rope=p.rope, placement=p.placement)
