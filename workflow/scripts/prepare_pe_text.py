"""Rule prepare_pe_text: the position-encoding ablation's training text and tokenizer from a named source."""

from swapkl.demo.training_text import TrainingText, prepare_training_text
from swapkl.joblog import job_log

with job_log(snakemake):
    prepare_training_text(TrainingText(**snakemake.params.source), snakemake.params.out_dir,
                          snakemake.output.tokenizer)
