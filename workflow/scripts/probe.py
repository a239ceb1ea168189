"""Rules probe_replacement / probe_interchange / probe_deletion: one protocol on one checkpoint."""

from swapkl.data import DataSpec
from swapkl.joblog import job_log
from swapkl.probe import run_probe

with job_log(snakemake):
    p = snakemake.params
    run_probe(p.checkpoint, snakemake.output.probe, protocols=[p.protocol], pairs=p.pairs, data=DataSpec(**p.data),
              dtype=p.dtype, batch_size=p.batch_size, repr_out=snakemake.output.get("representation"),
              progress_path=p.progress, metadata=p.metadata, placement=p.placement)
