"""Content stamps of the workflow's inputs: a checkpoint or a text file whose content changed is seen, even when
its modification time was kept.

Snakemake decides what to run again from modification times. ``cp -p``, ``rsync -a`` and restoring a backup
replace a file's content and keep its old time, so a replaced ``model.safetensors`` or probe text would leave
``results/`` holding the old numbers and the old ``weights_sha256`` / ``tokens_sha256``, with "Nothing to be
done". Each checkpoint folder and text file the study reads therefore gets a stamp,
``results/.input-stamps/<hash of the path>.json``, which every job reading the input depends on beside the input
itself (:func:`with_stamps`). :func:`refresh`, run when the workflow starts, keeps each stamp's modification time
at the time the input's content last changed (rule ``stamp_input`` writes the first stamp of an input that the
workflow itself makes, such as a download or the demo's training run, dated when it is made):

* the stamp records the input's file signature (for each file: size, modification and change time, inode) and
  the sha256 of its content;
* an unchanged signature costs one ``stat`` per file and nothing else;
* a changed signature (any write changes a file's change time, which no copy tool can restore) has the content
  hashed: the same content (a copied or touched tree) keeps the stamp's time, so nothing runs again; other
  content rewrites the stamp now, so every job that read the input runs again, and the log says which input
  changed;
* a new stamp of an existing input takes the input's newest modification time, so that results already made from
  it stay current.

A version of swapkl before the stamps recorded jobs without them among their inputs: Snakemake's ``input`` rerun
trigger then runs every job again once. Where the inputs are known to be unchanged, one run with
``--rerun-triggers mtime params software-env code`` takes the results over instead.

Standard library only: the Snakefile imports it where torch is not installed.
"""

from __future__ import annotations

import hashlib
import json
import os

STAMP_DIR = os.path.join("results", ".input-stamps")
VERSION = 1


def stamp_path(path: str) -> str:
    """The stamp file of input ``path`` (relative to the working directory, or absolute)."""
    key = hashlib.sha256(os.path.normpath(path).encode()).hexdigest()[:24]
    return os.path.join(STAMP_DIR, f"{key}.json")


def with_stamps(paths) -> list[str]:
    """``paths`` followed by their stamps (a job's inputs: the stamp carries the content's time; rule
    ``stamp_input`` makes a stamp that :func:`refresh` could not, its input being made by the workflow)."""
    paths = [paths] if isinstance(paths, str) else list(paths)
    return paths + [stamp_path(p) for p in paths]


def write_stamp(path: str, stamp: str) -> None:
    """A new stamp of input ``path`` at ``stamp``, dated now (rule ``stamp_input``: the input was just made)."""
    if stamp != stamp_path(path):
        raise ValueError(f"{stamp!r} is not the stamp of {path!r}")
    _write(stamp, {"version": VERSION, "path": path, "sha256": content_sha256(path), "signature": signature(path)},
           None)


def _files(path: str) -> list[str]:
    """The regular files of input ``path`` (itself, or every file below a folder; Snakemake's own markers left
    out), relative to it, sorted."""
    if not os.path.isdir(path):
        return [""]
    found = []
    for root, dirs, names in os.walk(path):
        dirs.sort()
        for name in names:
            if name.startswith(".snakemake"):
                continue
            full = os.path.join(root, name)
            if os.path.isfile(full):
                found.append(os.path.relpath(full, path))
    return sorted(found)


def signature(path: str) -> list:
    """[relative name, size, mtime_ns, ctime_ns, inode] of each file of input ``path``."""
    out = []
    for rel in _files(path):
        st = os.stat(os.path.join(path, rel) if rel else path)
        out.append([rel, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino])
    return out


def content_sha256(path: str) -> str:
    """sha256 over the files of input ``path``: each relative name, a NUL, its bytes."""
    h = hashlib.sha256()
    for rel in _files(path):
        h.update(rel.encode() + b"\0")
        with open(os.path.join(path, rel) if rel else path, "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
    return h.hexdigest()


def _write(stamp: str, record: dict, mtime_ns: int | None) -> None:
    """Write ``record`` to ``stamp`` in one step; ``mtime_ns``: the stamp's modification time (None: now)."""
    os.makedirs(os.path.dirname(stamp), exist_ok=True)
    tmp = f"{stamp}.tmp-{os.getpid()}"
    with open(tmp, "w") as f:
        json.dump(record, f)
    if mtime_ns is not None:
        os.utime(tmp, ns=(mtime_ns, mtime_ns))
    os.replace(tmp, stamp)


def _read(stamp: str) -> dict | None:
    try:
        with open(stamp) as f:
            record = json.load(f)
    except (OSError, ValueError):
        return None
    return record if isinstance(record, dict) and record.get("version") == VERSION else None


def refresh(paths) -> list[str]:
    """Bring the stamps of the existing inputs among ``paths`` up to date (module docstring); return the inputs
    whose content changed since their stamps were written."""
    changed = []
    for path in dict.fromkeys(paths):
        if not os.path.exists(path):
            continue  # made by the workflow later (a download, the demo's training); stamped at a later start
        stamp, sig = stamp_path(path), signature(path)
        old = _read(stamp)
        if old is not None and old.get("path") != path:
            old = None  # another input's stamp (the name is a hash of the path)
        if old is not None and old.get("signature") == sig:
            continue
        digest = content_sha256(path)
        record = {"version": VERSION, "path": path, "sha256": digest, "signature": sig}
        if old is None:  # dated as the input, so that what was made from it stays current
            _write(stamp, record, max([s[2] for s in sig] + [os.stat(path).st_mtime_ns]))
        elif old.get("sha256") == digest:
            _write(stamp, record, os.stat(stamp).st_mtime_ns)  # the same content: the stamp keeps its time
        else:
            _write(stamp, record, None)
            changed.append(path)
    return changed
