"""Rule train_demo_model: train one tiny model, saving step{N}/ checkpoints and training_log.csv."""

import logging
import sys

from swapkl.demo.architectures import DemoSize
from swapkl.demo.train import train_demo_model

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
s = snakemake.params.settings
train_demo_model(s["arch"], snakemake.params.corpus_dir, snakemake.input.tokenizer, snakemake.output[0],
                 steps=s["steps"], save_steps=snakemake.params.save_steps, seed=s["seed"],
                 batch_size=s["batch_size"], seq_len=s["seq_len"], lr=s["lr"], threads=snakemake.threads,
                 size=DemoSize(num_layers=s["num_layers"]),
                 progress=False)
