"""Rule train_pe_model: train one architecture-matched model of the position-encoding ablation."""

from swapkl.demo.architectures import DemoSize
from swapkl.demo.train import train_demo_model
from swapkl.joblog import job_log

with job_log(snakemake):
    s = dict(snakemake.params.settings)
    size = DemoSize(**s.pop("size"))
    train_demo_model(s.pop("arch"), snakemake.params.corpus_dir, snakemake.input.tokenizer, snakemake.output[0],
                     size=size, threads=snakemake.threads, progress=True, **s)
