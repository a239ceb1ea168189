"""Rule probe_spans: the middle-span experiments of one checkpoint (swapkl.studies.spans)."""

from swapkl.joblog import job_log
from swapkl.studies.span_jobs import SpansJob

with job_log(snakemake):
    p = snakemake.params
    SpansJob(model=p.checkpoint, out=snakemake.output[0], data=p.data, dtype=p.dtype, batch_size=p.batch_size,
             metadata=p.metadata, placement=p.placement, **p.spans).run()
