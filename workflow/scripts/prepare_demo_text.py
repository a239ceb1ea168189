"""Rule prepare_demo_text: train/valid/test text from the standard library's docstrings, then a byte-level BPE
on its train split."""

from swapkl.demo.corpus import build_corpus
from swapkl.demo.tokenizer import train_demo_tokenizer
from swapkl.joblog import job_log

with job_log(snakemake):
    corpus, tokenizer = snakemake.params.settings["corpus"], snakemake.params.settings["tokenizer"]
    build_corpus(snakemake.params.corpus_dir, seed=corpus["seed"], valid_fraction=corpus["valid_fraction"],
                 test_fraction=corpus["test_fraction"])
    train_demo_tokenizer(snakemake.params.corpus_dir, snakemake.output.tokenizer,
                         vocab_size=tokenizer["vocab_size"], min_frequency=tokenizer["min_frequency"])
