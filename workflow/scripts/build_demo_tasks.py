"""Rule build_demo_tasks: the demo's multiple-choice tasks (JSONL + lm-eval task YAML) from test.txt."""

from pathlib import Path

from swapkl.demo.task_files import build_demo_tasks
from swapkl.joblog import job_log

with job_log(snakemake):
    build_demo_tasks(Path(snakemake.params.corpus_dir), Path(snakemake.params.out_dir))
