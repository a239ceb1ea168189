"""Revisions that the model hub does not have, recorded explicitly instead of failing a whole study.

Some seed-family runs lack a branch on the hub (e.g. pythia-410m-seed9 has no ``step40000``). For a
seed-family member, :func:`swapkl.hub.download.download_checkpoint` records such a revision as *absent*: its
checkpoint folder holds only :data:`ABSENT_FILE` (and only when the hub answers that the revision does
not exist; a network error still fails). Every job of that checkpoint then writes, in place of each of
its outputs, a small JSON *marker* naming the missing branch (:func:`propagate`), never an empty or made-up
table. The aggregates skip marked inputs and list them in their provenance (:func:`split_absent`); the
across-seed statistics list the absent seeds. Any other reader that meets a marker is refused with one
line naming the branch (:func:`refuse_absent`, called by :func:`swapkl.tables.file_checks.open_input`), so a
marker can never be read as data.
"""

from __future__ import annotations

import json
import logging
import os
import stat

from swapkl.errors import SwapKLError

log = logging.getLogger(__name__)

#: in a checkpoint folder: the hub has no such revision (the folder holds nothing else)
ABSENT_FILE = "swapkl_absent.json"
#: the one key of a marker file; its first bytes identify a marker
MARKER_KEY = "swapkl_absent"
_MAGIC = b'{"' + MARKER_KEY.encode() + b'"'
#: a marker file is small; anything larger is never read as one
_MAX_MARKER_BYTES = 1 << 16


def record(model: str | None, model_id: str, revision: str, reason: str) -> dict:
    """What a marker says: the config's model name, the hub repository, the revision and the hub's answer."""
    return {"model": model, "model_id": model_id, "revision": revision, "reason": reason}


def describe(rec: dict) -> str:
    """One phrase naming the missing branch."""
    return f"{rec['model_id']}@{rec['revision']} does not exist on the hub"


def _read_marker_file(path: str) -> dict | None:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not (stat.S_ISREG(st.st_mode) and st.st_size <= _MAX_MARKER_BYTES):
            return None
        data = os.pread(fd, _MAX_MARKER_BYTES, 0)
    finally:
        os.close(fd)
    if not data.startswith(_MAGIC):
        return None
    try:
        rec = json.loads(data.decode("utf-8"))[MARKER_KEY]
    except (ValueError, KeyError, TypeError):
        return None
    return rec if isinstance(rec, dict) and {"model_id", "revision"} <= set(rec) else None


def read_marker(path) -> dict | None:
    """The record of ``path`` when it is an absent checkpoint folder or a marker file, else None."""
    path = os.fspath(path)
    if os.path.isdir(path):
        return _read_marker_file(os.path.join(path, ABSENT_FILE))
    return _read_marker_file(path)


def refuse_absent(path, what: str) -> None:
    """Raise one line naming the missing branch when ``path`` is a marker (it holds no data to read)."""
    rec = read_marker(path)
    if rec is not None:
        raise SwapKLError(f"{what} {os.fspath(path)!r} stands for a revision that is absent: {describe(rec)} "
                          "(recorded by the download of a seed-family member); it holds no data")


def write_marker(path, rec: dict) -> None:
    """Write the marker file ``path`` (atomically). Only nothing, or an earlier marker, may be there."""
    path = os.fspath(path)
    if os.path.lexists(path) and read_marker(path) is None:
        raise SwapKLError(f"refusing to replace {path!r} with an absent-revision marker: it is not one")
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    tmp = f"{path}.tmp-{os.getpid()}"
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({MARKER_KEY: rec}, f, sort_keys=True)
    os.replace(tmp, path)


def write_checkpoint_marker(out_dir, rec: dict) -> None:
    """Make ``out_dir`` an absent checkpoint folder: it holds :data:`ABSENT_FILE` only."""
    os.makedirs(out_dir)
    write_marker(os.path.join(out_dir, ABSENT_FILE), rec)


def propagate(checkpoint, outputs) -> bool:
    """When ``checkpoint`` is an absent checkpoint folder: write a marker at every path of ``outputs``,
    log one line naming the branch and return True (the job has nothing to compute); else False."""
    rec = read_marker(checkpoint)
    if rec is None:
        return False
    outputs = [os.fspath(p) for p in outputs]
    for path in outputs:
        write_marker(path, rec)
    log.warning("%s: recorded as absent in %s", describe(rec), ", ".join(outputs))
    return True


def split_absent(paths) -> tuple[list[str], list[dict]]:
    """(paths that hold data, the records of the markers among ``paths``, one per missing branch)."""
    present, absent = [], []
    for path in (os.fspath(p) for p in paths):
        rec = read_marker(path)
        if rec is None:
            present.append(path)
        elif rec not in absent:
            absent.append(rec)
    return present, sorted(absent, key=lambda r: (str(r.get("model")), r["revision"]))
