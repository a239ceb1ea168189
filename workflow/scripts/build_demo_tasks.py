"""Rule build_demo_tasks: the demo's multiple-choice tasks (JSONL + lm-eval task YAML) from test.txt."""

import logging
import sys

sys.stderr = open(snakemake.log[0], "w", buffering=1)  # warnings, progress bars and tracebacks too
logging.basicConfig(stream=sys.stderr, level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
from pathlib import Path

from swapkl.demo.tasks import build_demo_tasks

build_demo_tasks(Path(snakemake.params.corpus_dir), Path(snakemake.params.out_dir))
