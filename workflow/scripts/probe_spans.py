"""Rule probe_spans: the middle-span experiments of one checkpoint (swapkl.studies.spans)."""

from swapkl.data.windows import DataSpec
from swapkl.joblog import job_log
from swapkl.studies.spans import run_spans

with job_log(snakemake):
    p = snakemake.params
    run_spans(p.checkpoint, snakemake.output[0], data=DataSpec(**p.data), dtype=p.dtype, batch_size=p.batch_size,
              metadata=p.metadata, placement=p.placement, **p.spans)
