"""Downloading checkpoints from the model hub (safetensors only): resumable, retried only where that can help."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
import socket
import time

from swapkl.hub.absence import ABSENT_FILE, write_checkpoint_marker
from swapkl.hub.absence import describe as describe_absent
from swapkl.hub.absence import record as absent_record
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
                        snapshot=None, resolve_commit=None, shard_hashes=None, member: str | None = None) -> None:
    """Fetch ``model_id`` at ``revision`` into ``out_dir`` and record the resolved commit.

    Each attempt first resolves ``revision`` to a commit and then downloads that exact commit,
    so the files and the recorded commit always agree even if the branch moves meanwhile.
    The files arrive in ``out_dir + ".partial"``, which is kept when a download fails or is
    interrupted: the next attempt (in this call or a later run) resumes from what it holds
    (huggingface_hub resumes its partial files there). Only a complete download becomes ``out_dir``.
    Transient failures are retried up to ``retries`` attempts in all, waiting ``backoff * 2**(k-1)``
    seconds after the k-th failure; errors that cannot heal by retrying (an unreachable hub: no DNS
    or offline mode; 401/403/404; :data:`PERMANENT_ERRORS`) fail at once. Failures raise SwapKLError.

    Before fetching, the sha256 of every weight shard is read from the hub's file metadata for that
    commit. When another revision of the same model already downloaded next to ``out_dir`` has exactly
    those shards, the revision is a duplicate branch (pythia's step0/step1, the pythia-2.8b branches that
    serve ``main``): its files are linked from that download instead of fetched again, and
    ``duplicate_of`` names it in ``swapkl_source.json``. After a download every shard is hashed and must
    match the hub's sha256. The commit, the shard hashes and ``duplicate_of`` are recorded in
    ``swapkl_source.json``; the commit goes into the provenance of every result of the checkpoint.

    ``member``: the config's name of a seed-family member. When the hub answers that ``revision`` does not
    exist (and only then: an unreachable hub or any other error still fails), ``out_dir`` becomes an
    absent checkpoint folder (:mod:`swapkl.hub.absence`) and the call returns; the member's jobs pass the
    absence on and the across-seed statistics list it.

    ``snapshot`` replaces ``huggingface_hub.snapshot_download``, ``resolve_commit(model_id, revision) ->
    str | None`` the hub lookup of the commit and ``shard_hashes(model_id, commit) -> {file: sha256}`` that
    of the shards' hashes (tests inject failures through them; with an injected ``resolve_commit`` and no
    ``shard_hashes`` no hashes are known).
    """
    if retries < 1:
        raise SwapKLError(f"retries must be >= 1, got {retries}")
    if snapshot is None:
        from huggingface_hub import snapshot_download as snapshot
    if shard_hashes is None:
        shard_hashes = hub_shard_hashes if resolve_commit is None else (lambda m, c: {})
    if resolve_commit is None:
        resolve_commit = hub_commit
    what = f"{model_id}@{revision}"
    tmp = out_dir.rstrip("/") + ".partial"
    created = _staging_folder(out_dir, tmp, what)
    try:
        for attempt in range(1, retries + 1):
            try:
                commit = resolve_commit(model_id, revision)
                shards = shard_hashes(model_id, commit or revision)
                twin = _fetch(model_id, commit or revision, out_dir, tmp, shards, snapshot, what)
                break
            except Exception as e:  # network errors come in many types
                if isinstance(e, SwapKLError) and attempt == retries:
                    raise  # a shard that arrived corrupt, said in its own words
                if _hub_unreachable(e):
                    raise SwapKLError(f"download of {what} failed: the model hub is unreachable "
                                      f"({_one_line(e)}); {OFFLINE_HINT}") from e
                if member is not None and _revision_missing(e):
                    _record_absent(out_dir, absent_record(member, model_id, revision, _one_line(e)), tmp, created)
                    return
                if _revision_missing(e):
                    raise SwapKLError(f"download of {what} failed: the hub has no branch, tag or commit "
                                      f"{revision!r} in {model_id}; correct or remove that revision in the "
                                      "model's `revisions`") from e
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
    _store(tmp, out_dir, what, {"model_id": model_id, "revision": revision, "commit": commit, "shards": shards,
                                "duplicate_of": None if twin is None else os.path.basename(twin)})
    log.info("downloaded %s (commit %s) to %s", what, commit, out_dir)


def _staging_folder(out_dir: str, tmp: str, what: str) -> bool:
    """Make (or resume from) the staging folder ``tmp`` of ``out_dir``; whether it was made now.

    Only a checkpoint that swapkl downloaded (it holds SOURCE_FILE), and only a staging folder that swapkl made
    (it holds PARTIAL_MARK), is ever resumed into, deleted or replaced here."""
    for path, marks, kind in ((out_dir, (SOURCE_FILE, ABSENT_FILE), "a checkpoint that swapkl downloaded"),
                              (tmp, (PARTIAL_MARK,), "a download that swapkl started")):
        if os.path.lexists(path) and not (os.path.isdir(path) and not os.path.islink(path)
                                          and any(os.path.isfile(os.path.join(path, m)) for m in marks)):
            mark = marks[0]
            raise SwapKLError(f"refusing to replace {path!r}: it is not {kind} (no {mark} in it)")
    created = not os.path.exists(tmp)
    if created:
        os.makedirs(tmp)
        open(os.path.join(tmp, PARTIAL_MARK), "w").close()
    else:
        log.info("resuming the download of %s from %s", what, tmp)
    return created


def _store(tmp: str, out_dir: str, what: str, source: dict) -> None:
    """Write the download record ``source`` into the complete staging folder ``tmp`` and make it ``out_dir``."""
    try:
        with open(os.path.join(tmp, SOURCE_FILE), "w") as f:
            json.dump(source, f, indent=1, sort_keys=True)
        os.unlink(os.path.join(tmp, PARTIAL_MARK))
        shutil.rmtree(out_dir, ignore_errors=True)  # swapkl's own earlier download (checked before fetching)
        os.replace(tmp, out_dir)
    except OSError as e:
        raise SwapKLError(f"cannot store the download of {what} in {out_dir!r}: {e.strerror}") from e


def _fetch(model_id: str, commit: str, out_dir: str, tmp: str, shards: dict, snapshot, what: str) -> str | None:
    """Fetch ``commit`` into ``tmp``, linking the shards from an earlier download with the same shards (the
    returned folder) instead of fetching them again; then verify every shard against the hub's sha256."""
    twin = _downloaded_twin(out_dir, shards)
    if twin is not None:  # the shards are linked; the small files (config, tokenizer) are fetched
        _link_shards(twin, tmp, shards)
        log.warning("%s serves the same weight shards (hub sha256) as %s: linked, not downloaded again; "
                    "recorded as duplicate_of %s", what, twin, os.path.basename(twin))
    snapshot(repo_id=model_id, revision=commit, local_dir=tmp,
             allow_patterns=ALLOW_PATTERNS if twin is None else [p for p in ALLOW_PATTERNS if p != "*.safetensors"])
    _verify_shards(tmp, shards, what)
    return twin


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


def _revision_missing(e: Exception) -> bool:
    """The hub's answer that the repository exists but the revision does not."""
    for c in _causes(e):
        headers = getattr(getattr(c, "response", None), "headers", None) or {}
        if type(c).__name__ == "RevisionNotFoundError" or headers.get("X-Error-Code") == "RevisionNotFound":
            return True
    return False


def _record_absent(out_dir: str, rec: dict, tmp: str, created: bool) -> None:
    """``out_dir`` becomes an absent checkpoint folder (replacing swapkl's own earlier one, checked above)."""
    if created and os.path.isdir(tmp) and os.listdir(tmp) == [PARTIAL_MARK]:
        shutil.rmtree(tmp)
    shutil.rmtree(out_dir, ignore_errors=True)
    write_checkpoint_marker(out_dir, rec)
    log.warning("%s: recorded as absent in %s (a seed-family member: its jobs pass the absence on)",
                describe_absent(rec), out_dir)


def hub_commit(model_id: str, revision: str) -> str | None:
    """The commit sha that ``revision`` (branch, tag or sha) of ``model_id`` points to on the hub."""
    from huggingface_hub import HfApi

    return HfApi().model_info(model_id, revision=revision).sha


def hub_shard_hashes(model_id: str, commit: str) -> dict[str, str]:
    """{file name: sha256} of the safetensors shards of ``model_id`` at ``commit``, from the hub's file
    metadata (the LFS pointers), without downloading them."""
    from huggingface_hub import HfApi

    info = HfApi().model_info(model_id, revision=commit, files_metadata=True)
    return {f.rfilename: f.lfs.sha256 for f in info.siblings or []
            if f.rfilename.endswith(".safetensors") and getattr(f, "lfs", None) is not None and f.lfs.sha256}


def _downloaded_twin(out_dir: str, shards: dict[str, str]) -> str | None:
    """A finished download of another revision of the same model (a sibling folder of ``out_dir``) whose
    recorded shard hashes are exactly ``shards``; None when there is none or the hashes are unknown."""
    if not shards:
        return None
    parent, own = os.path.dirname(os.path.abspath(out_dir)), os.path.basename(os.path.abspath(out_dir))
    for name in sorted(os.listdir(parent)) if os.path.isdir(parent) else []:
        source = os.path.join(parent, name, SOURCE_FILE)
        if name == own or not os.path.isfile(source):
            continue
        try:
            with open(source) as f:
                recorded = json.load(f).get("shards")
        except (OSError, ValueError, AttributeError):
            continue
        if recorded == shards:
            return os.path.join(parent, name)
    return None


def _link_shards(src: str, dst: str, shards: dict[str, str]) -> None:
    """Hard-link (or copy, across file systems) the weight shards ``shards`` of ``src`` into ``dst``."""
    for name in sorted(shards):
        target = os.path.join(dst, name)
        if os.path.lexists(target):
            os.unlink(target)
        try:
            os.link(os.path.join(src, name), target)
        except OSError:
            shutil.copy2(os.path.join(src, name), target)


def _verify_shards(folder: str, shards: dict[str, str], what: str) -> None:
    """Every shard the hub lists must be there with the hub's sha256; a corrupt one is removed (refetched
    by the next attempt) and the download fails."""
    for name, want in sorted(shards.items()):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            raise SwapKLError(f"download of {what}: the hub lists the weight shard {name}, which did not arrive")
        h = hashlib.sha256()
        with open(path, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
        if h.hexdigest() != want:
            os.unlink(path)
            raise SwapKLError(f"download of {what}: weight shard {name} has sha256 {h.hexdigest()[:12]}..., the "
                              f"hub lists {want[:12]}...; the file was removed, run again to fetch it anew")


def _one_line(e: Exception) -> str:
    lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
    return f"{type(e).__name__}: {lines[0] if lines else '(no message)'}"
