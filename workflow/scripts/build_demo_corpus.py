"""Rule build_demo_corpus: train/valid/test text from the standard library's docstrings."""

from swapkl.demo.corpus import build_corpus
from swapkl.joblog import job_log

with job_log(snakemake):
    s = snakemake.params.settings
    build_corpus(snakemake.params.out_dir, seed=s["seed"], valid_fraction=s["valid_fraction"],
                 test_fraction=s["test_fraction"])
