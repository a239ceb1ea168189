"""Where each file of a model and revision lives: the workflow's output paths, in one place (below every package
that names a file: the stages, the study folders, the config). Pure: the standard library only."""

from __future__ import annotations

import os

DEMO_DIR = "resources/demo"
#: the demo's LAMBADA-style last-word task (rule build_demo_last_word), scored by the downstream benchmarks
DEMO_LAST_WORD_FILE = "resources/demo/tasks/demo_last_word.jsonl"
DEMO_CORPUS_FILES = ("train.txt", "valid.txt", "test.txt", "corpus.json")
DEMO_CORPUS_DIR = f"{DEMO_DIR}/corpus"
DEMO_TOKENIZER_DIR = f"{DEMO_DIR}/tokenizer"
#: the files of a training text prepared from a named source (swapkl.demo.training_text): the demo corpus's layout
#: without the test split
TRAINING_TEXT_FILES = ("train.txt", "valid.txt", "corpus.json")


def probe_file(model: str, revision: str, protocol: str) -> str:
    return f"results/probes/{model}/{revision}/{protocol}.parquet"


def progress_file(model: str, revision: str, protocol: str) -> str:
    """Resume file of a probe job: not a declared log or output, so Snakemake keeps it across attempts."""
    return f"logs/{model}/{revision}/probe_{protocol}.progress.jsonl"


def _per_checkpoint(template: str):
    """The path function ``(model, revision) -> path`` of a per-checkpoint file laid out as ``template``."""

    def path(model: str, revision: str) -> str:
        return template.format(model=model, revision=revision)

    path.template = template
    return path


pruning_file = _per_checkpoint("results/pruning/{model}/{revision}/pruning.parquet")
agreement_file = _per_checkpoint("results/pruning/{model}/{revision}/agreement.parquet")
recovery_file = _per_checkpoint("results/recovery/{model}/{revision}/recovery.parquet")
export_dir = _per_checkpoint("results/exports/{model}/{revision}")
#: the healed checkpoints of recovery after pruning (the control and each export)
healed_models_dir = _per_checkpoint("results/healed_models/{model}/{revision}")
repr_file = _per_checkpoint("results/probes/{model}/{revision}/representation.parquet")
# the stages with one table per checkpoint, each at results/<stage>/<model>/<revision>.parquet
(healed_file, test_agreement_file, relevance_file, covariate_file, downstream_file) = (
    _per_checkpoint(f"results/{stage}/{{model}}/{{revision}}.parquet")
    for stage in ("healed_probes", "test_agreement", "relevance", "covariates", "downstream"))




def checkpoint_dir(model_name: str, model: dict, revision: str) -> str:
    """The Hugging Face checkpoint directory of a model's revision (``model``: its config entry, which
    holds one of source, local, gguf, demo; a GGUF is converted into the folder a download would fill)."""
    if "source" in model or "gguf" in model:
        return f"resources/checkpoints/{model_name}/{revision}"
    if "local" in model:
        return os.path.join(model["local"], revision)
    return f"{DEMO_DIR}/models/{model_name}/{revision}"


def demo_run_dir(model_name: str) -> str:
    """The directory of a demo model's whole training run (every stepN checkpoint)."""
    return f"{DEMO_DIR}/models/{model_name}"
