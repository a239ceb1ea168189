"""Downloading checkpoints from the model hub (safetensors only): resumable, retried only where that can help."""

from __future__ import annotations

import json
import logging
import os
import shutil
import socket
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
#: HTTP answers that do not change by asking again: not logged in, no access, no such repository or revision
PERMANENT_STATUS = frozenset({401, 403, 404})
#: what a user without hub access can run instead
OFFLINE_HINT = "without hub access, run the offline demo instead: make demo (snakemake --workflow-profile profiles/demo)"


def download_checkpoint(model_id: str, revision: str, out_dir: str, *, retries: int = 5, backoff: float = 2.0,
                        snapshot=None, resolve_commit=None) -> None:
    """Fetch ``model_id`` at ``revision`` into ``out_dir`` and record the resolved commit.

    Each attempt first resolves ``revision`` to a commit and then downloads that exact commit,
    so the files and the recorded commit always agree even if the branch moves meanwhile.
    The files arrive in ``out_dir + ".partial"``, which is kept when a download fails or is
    interrupted: the next attempt (in this call or a later run) resumes from what it holds
    (huggingface_hub resumes its partial files there). Only a complete download becomes ``out_dir``.
    Transient failures are retried up to ``retries`` attempts in all, waiting ``backoff * 2**(k-1)``
    seconds after the k-th failure; errors that cannot heal by retrying (an unreachable hub: no DNS
    or offline mode; 401/403/404; :data:`PERMANENT_ERRORS`) fail at once. Failures raise SwapKLError.

    ``snapshot`` replaces ``huggingface_hub.snapshot_download`` and ``resolve_commit(model_id,
    revision) -> str | None`` the hub lookup of the commit (tests inject failures through them).
    """
    if retries < 1:
        raise SwapKLError(f"retries must be >= 1, got {retries}")
    if snapshot is None:
        from huggingface_hub import snapshot_download as snapshot
    if resolve_commit is None:
        resolve_commit = hub_commit
    what = f"{model_id}@{revision}"
    tmp = out_dir.rstrip("/") + ".partial"
    # only a checkpoint that swapkl downloaded (it holds SOURCE_FILE), and only a staging folder that swapkl
    # made (it holds PARTIAL_MARK), is ever resumed into, deleted or replaced here
    for path, mark, kind in ((out_dir, SOURCE_FILE, "a checkpoint that swapkl downloaded"),
                             (tmp, PARTIAL_MARK, "a download that swapkl started")):
        if os.path.lexists(path) and not (os.path.isdir(path) and not os.path.islink(path)
                                          and os.path.isfile(os.path.join(path, mark))):
            raise SwapKLError(f"refusing to replace {path!r}: it is not {kind} (no {mark} in it)")
    created = not os.path.exists(tmp)
    if created:
        os.makedirs(tmp)
        open(os.path.join(tmp, PARTIAL_MARK), "w").close()
    else:
        log.info("resuming the download of %s from %s", what, tmp)
    try:
        for attempt in range(1, retries + 1):
            try:
                commit = resolve_commit(model_id, revision)
                snapshot(repo_id=model_id, revision=commit or revision, local_dir=tmp, allow_patterns=ALLOW_PATTERNS)
                break
            except Exception as e:  # network errors come in many types
                if _hub_unreachable(e):
                    raise SwapKLError(f"download of {what} failed: the model hub is unreachable "
                                      f"({_one_line(e)}); {OFFLINE_HINT}") from e
                if _cannot_heal(e):
                    raise SwapKLError(f"download of {what} failed, not retried: {_one_line(e)}") from e
                if attempt == retries:
                    raise SwapKLError(f"download of {what} failed after {attempt} attempts: {_one_line(e)}") from e
                wait = backoff * 2 ** (attempt - 1)
                log.warning("download of %s failed (attempt %d/%d): %s; retrying in %.1fs",
                            what, attempt, retries, _one_line(e), wait)
                time.sleep(wait)
    except BaseException:
        if created and os.path.isdir(tmp) and os.listdir(tmp) == [PARTIAL_MARK]:
            shutil.rmtree(tmp)  # nothing fetched: leave no trace; otherwise keep it to resume from
        raise
    try:
        with open(os.path.join(tmp, SOURCE_FILE), "w") as f:
            json.dump({"model_id": model_id, "revision": revision, "commit": commit}, f, indent=1, sort_keys=True)
        os.unlink(os.path.join(tmp, PARTIAL_MARK))
        shutil.rmtree(out_dir, ignore_errors=True)  # swapkl's own earlier download (checked above)
        os.replace(tmp, out_dir)
    except OSError as e:
        raise SwapKLError(f"cannot store the download of {what} in {out_dir!r}: {e.strerror}") from e
    log.info("downloaded %s (commit %s) to %s", what, commit, out_dir)


def _causes(e: BaseException):
    """``e`` and the exceptions it was raised from or while handling."""
    seen = set()
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        yield e
        e = e.__cause__ or e.__context__


def _hub_unreachable(e: Exception) -> bool:
    """No way to reach the hub from here: the host name does not resolve, or huggingface_hub is offline."""
    return any(isinstance(c, socket.gaierror) or type(c).__name__ == "OfflineModeIsEnabled" for c in _causes(e))


def _cannot_heal(e: Exception) -> bool:
    """An answer that retrying gets again: a missing repository, revision or file, or no access."""
    for c in _causes(e):
        status = getattr(getattr(c, "response", None), "status_code", None)
        if type(c).__name__ in PERMANENT_ERRORS or status in PERMANENT_STATUS:
            return True
    return False


def hub_commit(model_id: str, revision: str) -> str | None:
    """The commit sha that ``revision`` (branch, tag or sha) of ``model_id`` points to on the hub."""
    from huggingface_hub import HfApi

    return HfApi().model_info(model_id, revision=revision).sha


def _one_line(e: Exception) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else '(no message)'}"
