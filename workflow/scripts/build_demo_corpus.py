"""Rule build_demo_corpus: train/valid/test text from the standard library's docstrings."""

import logging
import sys

from swapkl.demo.corpus import build_corpus

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
s = snakemake.params.settings
build_corpus(snakemake.params.out_dir, seed=s["seed"], valid_fraction=s["valid_fraction"],
             test_fraction=s["test_fraction"])
