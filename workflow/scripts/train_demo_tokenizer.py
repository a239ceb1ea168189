"""Rule train_demo_tokenizer: byte-level BPE on the demo corpus's train split."""

import logging
import sys

from swapkl.demo.tokenizer import train_demo_tokenizer

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
s = snakemake.params.settings
train_demo_tokenizer(snakemake.params.corpus_dir, snakemake.output[0], vocab_size=s["vocab_size"],
                     min_frequency=s["min_frequency"])
