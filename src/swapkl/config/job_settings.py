"""What each job passes to swapkl, from the validated config: its settings (canonical, so that reordering
keys in the config file does not re-run a job), their provenance hash, and the device placement."""

from __future__ import annotations

import os

from swapkl.config.input_stamps import with_stamps
from swapkl.hub.revision_names import step_of
from swapkl.study import canonical, settings_hash, without_nulls  # noqa: F401  (the workflow's settings helpers, here too)


def text_files(*specs: dict) -> list[str]:
    """Local text files a job reads (so the DAG runs whatever rule produces them first), with their content
    stamps (swapkl.config.input_stamps)."""
    return with_stamps([spec["text_file"] for spec in specs if "text_file" in spec])


def config_text_files(cfg) -> list[str]:
    """Every ``text_file`` named anywhere in a (section of the) config, in order, each once."""
    found = []
    if isinstance(cfg, dict):
        if isinstance(cfg.get("text_file"), str):
            found.append(cfg["text_file"])
        for value in cfg.values():
            found += config_text_files(value)
    elif isinstance(cfg, list):
        for value in cfg:
            found += config_text_files(value)
    return list(dict.fromkeys(found))


def probe_settings(model: dict, pairs: str) -> dict:
    """Everything in a model's config that determines one checkpoint's probe numbers (not the revision list,
    so adding a revision leaves the existing jobs' parameters unchanged, and not the bootstrap settings
    `probe`, which only the aggregates use); ``pairs``: the pair set it probes."""
    return {
        "checkpoint": {key: model[key] for key in ("source", "local", "gguf", "demo", "same_weights_as") if key in model},
        "pairs": pairs,
        "data": model["data"],
        "dtype": model["dtype"],
        "rope_scaling": model["rope_scaling"],
        **({} if model["logits_dtype"] == "float32" else {"logits_dtype": model["logits_dtype"]}),
        "kl": model["kl"],
        "batch_size": model["batch_size"],
    }


def prune_settings(model: dict, probe: dict) -> dict:
    """The pruning block's settings with the probe settings (``probe``) they build on."""
    settings = {key: value for key, value in model["prune"].items()
                if key not in ("enabled", "revisions", "export_guides")}
    if settings.get("guides") == "all":  # the default: left out, so that the hashes of earlier runs still hold
        del settings["guides"]
    settings["probe"] = probe
    return settings


def selection_options(model: dict) -> dict:
    """Keyword arguments of swapkl.pruning.selection_options.SelectionOptions for a model's pruning runs."""
    prune = model["prune"]
    keys = ("score_pairs", "tie_break", "clustered_region", "fixed_sets", "random_spacing", "random_interior")
    return {**{key: prune[key] for key in keys}, "guides": None if prune["guides"] == "all" else prune["guides"]}


def placement(model: dict) -> dict:
    """keyword arguments of swapkl.model.loading.load_model that spread a model over devices ({}: one device).
    Not part of the settings hash: a placed model gives the single-device numbers."""
    if model["device_map"] is None:
        return {}
    caps = model["max_memory"]
    return canonical({"device_map": model["device_map"],
                      **({} if caps is None else {"max_memory": {str(k): v for k, v in caps.items()}})})


def job_gpus(model: dict) -> int:
    """GPUs an engine job of the model holds: the GPU indices its max_memory names (at least 1)."""
    caps = model["max_memory"] or {}
    return max(1, sum(1 for key in caps if str(key).isdigit()))


def demo_settings(model: dict) -> dict:
    """keyword arguments of the demo model's training (arch, steps, seed, batch_size, seq_len, lr)."""
    demo = canonical(model["demo"])
    return {key: value for key, value in demo.items() if key != "save_steps"}


def save_steps(model: dict) -> list[int]:
    """The training steps a demo model checkpoints: those of its revisions and its demo.save_steps."""
    return sorted({step_of(revision) for revision in model["revisions"]} | set(model["demo"]["save_steps"]))


def gpu_job_mem_mb(model: dict, checkpoint_mb: int, attempt: int) -> int:
    """Host memory of a GPU job: a float32 copy of the weights plus headroom, more on each retry; a model placed
    with device_map streams its shards to the devices, so the weights' own size covers CPU offload."""
    copies = 1 if model["device_map"] is not None else 3
    return (4000 + copies * checkpoint_mb) * attempt


def gpu_job_minutes(minutes_per_gb: float, checkpoint_mb: int, attempt: int) -> int:
    """Runtime in minutes: a base plus a per-GB-of-weights term, doubled on each retry."""
    return int(30 + minutes_per_gb * checkpoint_mb / 1000) * 2 ** (attempt - 1)


def checkpoint_size_mb(path: str) -> int:
    """Size of a checkpoint directory's weight files in MB; 0 while it does not exist yet (Snakemake evaluates
    the resources again when the job is ready to run, once the checkpoint is there)."""
    if not os.path.isdir(path):
        return 0
    names = [n for n in os.listdir(path) if n.endswith((".safetensors", ".bin"))]
    return sum(os.path.getsize(os.path.join(path, n)) for n in names) // 1_000_000
