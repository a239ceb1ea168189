"""Rule probe_pe_model: replacement and interchange on one trained model of the position-encoding ablation."""

from swapkl.joblog import job_log
from swapkl.probes.probe_jobs import ProbeJob

with job_log(snakemake):
    p = snakemake.params
    ProbeJob(model=p.checkpoint, out=snakemake.output[0], protocols=p.protocols, pairs=p.pairs, data=p.data,
             metadata=p.metadata).run()
