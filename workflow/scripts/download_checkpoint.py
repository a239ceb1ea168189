"""Rule download_checkpoint: snapshot one hub revision into resources/checkpoints/{model}/{revision}."""

import logging
import sys

from swapkl.hub import download_checkpoint

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
download_checkpoint(snakemake.params.model_id, snakemake.wildcards.revision, snakemake.output[0],
                    retries=snakemake.params.retries)
