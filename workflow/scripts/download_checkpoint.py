"""Rule download_checkpoint: snapshot one hub revision into resources/checkpoints/{model}/{revision}."""

from swapkl.hub.download import download_checkpoint
from swapkl.joblog import job_log

with job_log(snakemake):
    download_checkpoint(snakemake.params.source, snakemake.wildcards.revision, snakemake.output[0],
                        retries=snakemake.params.retries, member=snakemake.params.member)
