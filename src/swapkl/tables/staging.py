"""Staging folders of new checkpoint folders (``swapkl export``, ``swapkl heal``), and the removal of those that a
killed run left behind.

A new folder ``OUT`` is written into ``.OUT.XXXXXXXX.partial`` next to it and renamed to ``OUT`` when complete, so
``OUT`` never exists half-written. A run that is killed outright (``kill -9``, out of memory, power loss) cannot
remove its staging folder; the next staging in the same parent folder removes it, under three rules that keep
it from ever deleting anything swapkl did not create or that a live run still writes:

1. the entry's name has the staging pattern (``.NAME.XXXXXXXX.partial``) and it is a folder, not a link;
2. it holds the mark file :data:`MARK` (a regular file, not a link) that starts with :data:`MARK_TEXT`, which
   only :class:`Staging` writes;
3. no live process holds the mark's ``flock``: the run that stages a folder holds it from before the mark has its
   name until the folder is renamed or removed, and the kernel drops it when that process dies (also on
   file systems shared between machines whose ``flock`` is shared, as NFS's is).

A folder that fails any rule is left alone. Where the file system has no ``flock``, no mark is written: such a
staging folder is never removed automatically (as before this module).
"""

from __future__ import annotations

import fcntl
import logging
import os
import re
import shutil
import socket
import stat
import tempfile

log = logging.getLogger(__name__)

#: the mark file inside a staging folder: its lock is held by the run that writes the folder
MARK = ".swapkl-staging.lock"
MARK_TEXT = b"swapkl staging folder\n"
#: a staging folder's name: ``.`` + the output's name + ``.`` + tempfile's 8 random characters + ``.partial``
PATTERN = re.compile(r"\..+\.[A-Za-z0-9_]{8}\.partial")


class Staging:
    """The staging folder of new output folder ``out`` (in ``out``'s parent, which must exist), marked and locked;
    stale staging folders of killed runs in that parent are removed first (module docstring)."""

    def __init__(self, out: str):
        parent = os.path.dirname(os.path.abspath(out))
        remove_stale(parent)
        self.path = tempfile.mkdtemp(prefix=f".{os.path.basename(os.path.abspath(out))}.", suffix=".partial",
                                     dir=parent)
        self._fd = _mark(self.path)

    def commit(self, out: str) -> None:
        """Rename the complete staging folder to ``out`` (its mark removed first: ``out`` holds only the output)."""
        if self._fd is not None:
            os.unlink(os.path.join(self.path, MARK))
        os.rename(self.path, out)
        self._release()

    def discard(self) -> None:
        """Remove the staging folder (our own, never the user's ``out``)."""
        shutil.rmtree(self.path, ignore_errors=True)
        self._release()

    def _release(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None


def _mark(folder: str) -> int | None:
    """Write and lock the mark of the new staging ``folder``; the open descriptor holding its lock (None where the
    file system has no ``flock``). The mark is written and locked under another name, then renamed: a mark under
    its own name is always locked while its run lives."""
    draft = os.path.join(folder, MARK + ".new")
    fd = os.open(draft, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        os.unlink(draft)
        return None
    os.write(fd, MARK_TEXT + f"pid {os.getpid()} on {socket.gethostname()}\n".encode())
    os.rename(draft, os.path.join(folder, MARK))
    return fd


def remove_stale(parent: str) -> list[str]:
    """Remove the staging folders in ``parent`` that killed runs left behind (the three rules of the module
    docstring); the removed paths."""
    removed = []
    try:
        names = sorted(os.listdir(parent))
    except OSError:
        return removed
    for name in names:
        folder = os.path.join(parent, name)
        if PATTERN.fullmatch(name) and _stale(folder):
            removed.append(folder)
    return removed


def _stale(folder: str) -> bool:
    """Whether ``folder`` is a staging folder of a dead run; if so it is removed, under its lock."""
    try:
        if not stat.S_ISDIR(os.lstat(folder).st_mode):
            return False
        fd = os.open(os.path.join(folder, MARK), os.O_RDWR | os.O_NOFOLLOW)
    except OSError:  # no mark (not ours, or a run from before marks), a link, or gone meanwhile
        return False
    try:
        head = os.pread(fd, 256, 0)
        if not stat.S_ISREG(os.fstat(fd).st_mode) or not head.startswith(MARK_TEXT):
            return False
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError:  # held by a live run (or no flock here): leave it
            return False
        who = head[len(MARK_TEXT):].decode(errors="replace").strip() or "an unknown run"
        shutil.rmtree(folder, ignore_errors=True)
        log.warning("removed %s, the staging folder of a killed swapkl run (%s)", folder, who)
        return True
    finally:
        os.close(fd)
