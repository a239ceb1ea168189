"""Rule build_demo_last_word: the demo's LAMBADA-style last-word task (JSONL, field text) from test.txt."""

from pathlib import Path

from swapkl.demo.last_word_task import build_demo_last_word
from swapkl.joblog import job_log

with job_log(snakemake):
    build_demo_last_word(Path(snakemake.params.corpus_dir), Path(snakemake.output[0]))
