"""The demo's tasks with a training and a test split, for task-calibrated pruning (no torch: a quick job).

:mod:`swapkl.demo.task_files` writes each demo task with one (test) split; :func:`split_demo_task` writes a copy
under the same task name whose documents are split by a seeded permutation into ``train`` and ``test``, in
lm-eval's format (``training_split`` / ``test_split``), read by :mod:`swapkl.relevance.task_splits`.
"""

from __future__ import annotations

import os

import numpy as np

from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import open_input


def split_demo_task(yaml_path: str, out_dir: str, *, train_fraction: float = 0.5, seed: int = 0) -> str:
    """Write a two-split copy of a single-split demo task into ``out_dir`` (same task name; a seeded
    ``train_fraction`` of its documents as ``train``, the rest as ``test``); return the new YAML's path."""
    import yaml

    with open_input(yaml_path, "task file", "r", encoding="utf-8") as f:
        cfg = yaml.safe_load(f)
    files = (cfg.get("dataset_kwargs") or {}).get("data_files") or {}
    data = files.get(cfg.get("test_split")) if isinstance(files, dict) else None
    if not isinstance(data, str):
        raise SwapKLError(f"task file {yaml_path!r} names no JSONL file for its test split")
    with open_input(data, f"data file of {yaml_path!r}", "r", encoding="utf-8") as f:
        lines = [line for line in f if line.strip()]
    order = np.random.default_rng(seed).permutation(len(lines))
    n_train = int(round(train_fraction * len(lines)))
    if not 0 < n_train < len(lines):
        raise SwapKLError(f"task {cfg['task']!r}: {len(lines)} documents cannot be split {train_fraction} / rest")
    os.makedirs(out_dir, exist_ok=True)
    paths = {}
    for split, ids in (("train", sorted(order[:n_train])), ("test", sorted(order[n_train:]))):
        paths[split] = os.path.abspath(os.path.join(out_dir, f"{cfg['task']}_{split}.jsonl"))
        with open(paths[split], "w", encoding="utf-8") as f:
            f.writelines(lines[i] for i in ids)
    cfg["dataset_kwargs"] = {"data_files": paths}
    cfg["training_split"], cfg["test_split"] = "train", "test"
    out = os.path.join(out_dir, f"{cfg['task']}.yaml")
    with open(out, "w", encoding="utf-8") as f:
        yaml.safe_dump(cfg, f, sort_keys=False, allow_unicode=True)
    return out
