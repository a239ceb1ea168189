"""Downloading checkpoints from the model hub (safetensors only), with retries and backoff."""

from __future__ import annotations

import json
import logging
import os
import shutil
import time

from swapkl.errors import SwapKLError

log = logging.getLogger(__name__)

SOURCE_FILE = "swapkl_source.json"
#: files fetched from the hub: weights as safetensors only, never pickles
ALLOW_PATTERNS = ["*.json", "*.safetensors", "tokenizer*", "*.model", "*.txt"]


def download_checkpoint(model_id: str, revision: str, out_dir: str, *, retries: int = 5, backoff: float = 2.0,
                        snapshot=None) -> None:
    """Fetch ``model_id`` at ``revision`` into ``out_dir`` and record the resolved commit.

    Transient failures are retried ``retries`` times with exponential backoff; a download
    that keeps failing raises SwapKLError and leaves no ``out_dir`` behind. ``snapshot``
    replaces ``huggingface_hub.snapshot_download`` (tests inject failures through it).
    """
    if snapshot is None:
        from huggingface_hub import snapshot_download as snapshot
    tmp = out_dir.rstrip("/") + ".partial"
    last: Exception | None = None
    done = False
    for attempt in range(1, retries + 1):
        shutil.rmtree(tmp, ignore_errors=True)
        try:
            snapshot(repo_id=model_id, revision=revision, local_dir=tmp, allow_patterns=ALLOW_PATTERNS)
            done = True
            break
        except Exception as e:  # network errors come in many types
            last = e
            if _is_permanent(e):
                break
            if attempt < retries:
                wait = backoff * 2 ** (attempt - 1)
                log.warning("download of %s@%s failed (attempt %d/%d): %s; retrying in %.1fs",
                            model_id, revision, attempt, retries, e, wait)
                time.sleep(wait)
    if not done:
        shutil.rmtree(tmp, ignore_errors=True)
        raise SwapKLError(f"download of {model_id}@{revision} failed after {attempt} attempt(s): {last}")
    commit = _resolve_commit(model_id, revision)
    with open(os.path.join(tmp, SOURCE_FILE), "w") as f:
        json.dump({"model_id": model_id, "revision": revision, "commit": commit}, f, indent=1, sort_keys=True)
    shutil.rmtree(out_dir, ignore_errors=True)
    os.replace(tmp, out_dir)


def _is_permanent(e: Exception) -> bool:
    name = type(e).__name__
    return name in {"RepositoryNotFoundError", "RevisionNotFoundError", "GatedRepoError", "EntryNotFoundError"}


def _resolve_commit(model_id: str, revision: str) -> str | None:
    try:
        from huggingface_hub import HfApi

        return HfApi().model_info(model_id, revision=revision).sha
    except Exception:
        return None
