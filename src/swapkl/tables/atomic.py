"""Atomic writes: a failed or killed write leaves no partial file or directory, and the previous one intact.

:func:`replaced_on_success` is the one primitive for files: write to the path it yields (a fresh hidden
name next to the target), and the target is replaced by it only when the block ends without an error;
otherwise the temporary file is removed. Parquet tables, progress files, figures and the demo's files
all go through it; :func:`staged_dir` does the same for directories.
"""

from __future__ import annotations

import json
import os
import shutil
import uuid
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

from swapkl.errors import SwapKLError


def _sibling(path: Path, suffix: str) -> Path:
    """A fresh hidden name next to ``path`` (created files get the normal umask permissions)."""
    return path.with_name(f".{path.name}.{os.getpid()}.{uuid.uuid4().hex[:12]}{suffix}")


@contextmanager
def replaced_on_success(path) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; when the block succeeds it replaces ``path`` (one rename,
    so readers see the old file or the new one, never a part); when it fails it is removed."""
    tmp = _sibling(Path(path), ".tmp")
    try:
        yield tmp
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def write_text_atomic(path: Path, text: str) -> None:
    """Write ``text`` (UTF-8, ``\\n`` newlines) to ``path`` via a temporary file in the same directory."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with replaced_on_success(path) as tmp, open(tmp, "x", encoding="utf-8", newline="\n") as fh:
        fh.write(text)


def write_json_atomic(path: Path, obj) -> None:
    """Write ``obj`` as indented, key-sorted JSON, atomically."""
    write_text_atomic(path, json.dumps(obj, indent=2, sort_keys=True) + "\n")


@contextmanager
def staged_dir(final: Path) -> Iterator[Path]:
    """Yield an empty temporary directory next to ``final``; on success it replaces ``final``.

    An existing ``final`` is removed only once the new content is complete. On error the temporary
    directory is deleted and ``final`` is left as it was.
    """
    final = Path(final)
    final.parent.mkdir(parents=True, exist_ok=True)
    tmp = _sibling(final, ".tmp")
    tmp.mkdir()
    try:
        yield tmp
        if final.exists():
            old = _sibling(final, ".old")
            os.replace(final, old)
            os.replace(tmp, final)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, final)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def move_files_into(src_dir: Path, dest_dir: Path) -> list[str]:
    """Move every regular file of ``src_dir`` into ``dest_dir`` with ``os.replace``; return the names."""
    dest_dir = Path(dest_dir)
    dest_dir.mkdir(parents=True, exist_ok=True)
    names = sorted(p.name for p in Path(src_dir).iterdir() if p.is_file())
    for name in names:
        os.replace(Path(src_dir) / name, dest_dir / name)
    return names


def claim_folder(out_dir: Path, mark: str) -> None:
    """Make ``out_dir`` this step's own: create it with the hidden file ``mark`` in it.

    The demo steps replace and delete files in their folder; an existing folder with files in it but
    without ``mark`` was not made by that step, so it is refused and nothing in it is touched.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise SwapKLError(f"demo output {out_dir} exists and is not a directory")
    if out_dir.is_dir() and any(out_dir.iterdir()) and not (out_dir / mark).is_file():
        raise SwapKLError(f"refusing to write into {out_dir}: it holds files that swapkl did not write "
                          f"(no {mark}); give an empty or new folder")
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / mark).touch()
