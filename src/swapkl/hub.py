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
PARTIAL_MARK = ".swapkl-partial"  # in the staging folder of a download while it runs
#: files fetched from the hub: weights as safetensors only, never pickles
ALLOW_PATTERNS = ["*.json", "*.safetensors", "tokenizer*", "*.model", "*.txt"]
#: errors that retrying cannot fix (matched by class name, so huggingface_hub stays an optional import)
PERMANENT_ERRORS = frozenset({"RepositoryNotFoundError", "RevisionNotFoundError", "GatedRepoError",
                              "EntryNotFoundError", "LocalEntryNotFoundError"})


def download_checkpoint(model_id: str, revision: str, out_dir: str, *, retries: int = 5, backoff: float = 2.0,
                        snapshot=None, resolve_commit=None) -> None:
    """Fetch ``model_id`` at ``revision`` into ``out_dir`` and record the resolved commit.

    Each attempt first resolves ``revision`` to a commit and then downloads that exact commit,
    so the files and the recorded commit always agree even if the branch moves meanwhile.
    Transient failures are retried up to ``retries`` attempts in all, waiting
    ``backoff * 2**(k-1)`` seconds after the k-th failure; errors that cannot go away
    (:data:`PERMANENT_ERRORS`) are not retried. A download that fails raises SwapKLError and
    leaves no ``out_dir`` (nor a partial one) behind.

    ``snapshot`` replaces ``huggingface_hub.snapshot_download`` and ``resolve_commit(model_id,
    revision) -> str | None`` the hub lookup of the commit (tests inject failures through them).
    """
    if retries < 1:
        raise SwapKLError(f"retries must be >= 1, got {retries}")
    if snapshot is None:
        from huggingface_hub import snapshot_download as snapshot
    if resolve_commit is None:
        resolve_commit = hub_commit
    tmp = out_dir.rstrip("/") + ".partial"
    # only a checkpoint that swapkl downloaded (it holds SOURCE_FILE), and only a staging folder that swapkl
    # made (it holds PARTIAL_MARK), is ever deleted or replaced here
    for path, mark, what in ((out_dir, SOURCE_FILE, "a checkpoint that swapkl downloaded"),
                             (tmp, PARTIAL_MARK, "a download that swapkl started")):
        if os.path.lexists(path) and not (os.path.isdir(path) and not os.path.islink(path)
                                          and os.path.isfile(os.path.join(path, mark))):
            raise SwapKLError(f"refusing to replace {path!r}: it is not {what} (no {mark} in it)")
    done = False
    try:
        for attempt in range(1, retries + 1):
            shutil.rmtree(tmp, ignore_errors=True)
            os.makedirs(tmp)
            open(os.path.join(tmp, PARTIAL_MARK), "w").close()
            try:
                commit = resolve_commit(model_id, revision)
                snapshot(repo_id=model_id, revision=commit or revision, local_dir=tmp, allow_patterns=ALLOW_PATTERNS)
                break
            except Exception as e:  # network errors come in many types
                if type(e).__name__ in PERMANENT_ERRORS:
                    raise SwapKLError(f"download of {model_id}@{revision} failed, not retried: {_one_line(e)}") from e
                if attempt == retries:
                    raise SwapKLError(f"download of {model_id}@{revision} failed after {attempt} attempts: "
                                      f"{_one_line(e)}") from e
                wait = backoff * 2 ** (attempt - 1)
                log.warning("download of %s@%s failed (attempt %d/%d): %s; retrying in %.1fs",
                            model_id, revision, attempt, retries, _one_line(e), wait)
                time.sleep(wait)
        try:
            with open(os.path.join(tmp, SOURCE_FILE), "w") as f:
                json.dump({"model_id": model_id, "revision": revision, "commit": commit}, f, indent=1, sort_keys=True)
            os.unlink(os.path.join(tmp, PARTIAL_MARK))
            shutil.rmtree(out_dir, ignore_errors=True)
            os.replace(tmp, out_dir)
        except OSError as e:
            raise SwapKLError(f"cannot store the download of {model_id}@{revision} in {out_dir!r}: {e.strerror}") from e
        done = True
    finally:
        if not done:
            shutil.rmtree(tmp, ignore_errors=True)
    log.info("downloaded %s@%s (commit %s) to %s", model_id, revision, commit, out_dir)


def hub_commit(model_id: str, revision: str) -> str | None:
    """The commit sha that ``revision`` (branch, tag or sha) of ``model_id`` points to on the hub."""
    from huggingface_hub import HfApi

    return HfApi().model_info(model_id, revision=revision).sha


def _one_line(e: Exception) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else '(no message)'}"
