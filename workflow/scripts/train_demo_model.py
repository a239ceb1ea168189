"""Rule train_demo_model: train one tiny model, saving step{N}/ checkpoints and training_log.csv."""

from swapkl.demo.architectures import DemoSize
from swapkl.demo.train import train_demo_model
from swapkl.joblog import job_log

with job_log(snakemake):
    s = snakemake.params.settings
    train_demo_model(s["arch"], snakemake.params.corpus_dir, snakemake.input.tokenizer, snakemake.output[0],
                     steps=s["steps"], save_steps=snakemake.params.save_steps, seed=s["seed"],
                     batch_size=s["batch_size"], seq_len=s["seq_len"], lr=s["lr"], threads=snakemake.threads,
                     size=DemoSize(num_layers=s["num_layers"], hidden_size=s["hidden_size"],
                                  intermediate_size=s["intermediate_size"]),
                     progress=True)
