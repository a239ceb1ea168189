"""Rule train_demo_tokenizer: byte-level BPE on the demo corpus's train split."""

from swapkl.demo.tokenizer import train_demo_tokenizer
from swapkl.joblog import job_log

with job_log(snakemake):
    s = snakemake.params.settings
    train_demo_tokenizer(snakemake.params.corpus_dir, snakemake.output[0], vocab_size=s["vocab_size"],
                         min_frequency=s["min_frequency"])
