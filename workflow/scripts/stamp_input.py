"""Rule stamp_input: the content stamp of one checkpoint or text file (swapkl.config.input_stamps)."""

from swapkl.config.input_stamps import write_stamp
from swapkl.joblog import job_log

with job_log(snakemake):
    write_stamp(snakemake.input[0], snakemake.output[0])
