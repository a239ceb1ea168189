"""Rule score_relevance: AccRel of every block of one checkpoint on its tasks (and LM windows)."""

import logging
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
from swapkl.data import DataSpec
from swapkl.relevance import run_relevance

p = snakemake.params
run_relevance(p.checkpoint, list(p.tasks), snakemake.output[0], lm_data=None if p.lm is None else DataSpec(**p.lm),
              label=snakemake.wildcards.model, revision_label=snakemake.wildcards.revision, dtype=p.dtype,
              batch_size=p.batch_size)
