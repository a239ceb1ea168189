"""Advisory locks on output paths, so that two runs never write (or delete) the same live state.

A run holds an exclusive ``flock`` on a small lock file per output path (its ``--out``, its progress file,
...) for as long as it works. A second run given one of those paths finds the lock held and is refused at
once, naming the path and the first run's process id. The lock files live in a per-user folder under the
system's temporary directory, named by a hash of the resolved output path, so nothing is written next to
the user's files; the kernel drops a lock when its process dies, so a killed run never blocks the next one.
Locks are advisory: they bind swapkl runs on one machine (and file systems whose ``flock`` is shared).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import os
import tempfile
from collections.abc import Iterable, Iterator

from swapkl.errors import SwapKLError


def lock_dir() -> str:
    return os.path.join(tempfile.gettempdir(), f"swapkl-locks-{os.getuid()}")


def lock_file(path: str) -> str:
    """The lock file of output ``path`` (resolved, so a symbolic link and its target share one lock)."""
    key = hashlib.sha256(os.path.realpath(os.path.abspath(path)).encode()).hexdigest()[:32]
    return os.path.join(lock_dir(), key + ".lock")


def _acquire(path: str, flag: str) -> int:
    """An open descriptor holding the exclusive lock of ``path``; refuses when another run holds it."""
    os.makedirs(lock_dir(), mode=0o700, exist_ok=True)
    name = lock_file(path)
    while True:
        fd = os.open(name, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise SwapKLError(f"{flag} {path!r} is in use by another swapkl run (pid {holder}); wait for it to "
                              "finish or give another path") from None
        try:  # the holder may have removed the file between our open and our lock: lock the current one
            same = os.path.samestat(os.fstat(fd), os.stat(name))
        except FileNotFoundError:
            same = False
        if same:
            os.ftruncate(fd, 0)
            os.pwrite(fd, str(os.getpid()).encode(), 0)
            return fd
        os.close(fd)


@contextlib.contextmanager
def held(paths: Iterable[tuple[str, str]]) -> Iterator[None]:
    """Hold the locks of ``paths`` ((option name, path) pairs) while the block runs; all or none."""
    fds: list[tuple[int, str]] = []
    try:
        for flag, path in paths:
            if lock_file(path) not in {name for _, name in fds}:
                fds.append((_acquire(path, flag), lock_file(path)))
        yield
    finally:
        for fd, name in reversed(fds):
            with contextlib.suppress(OSError):
                os.unlink(name)  # still under our lock: a waiting run re-checks the inode and takes a fresh file
            os.close(fd)
