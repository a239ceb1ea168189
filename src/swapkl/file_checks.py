"""What swapkl may read and what it may replace.

* Inputs must be regular files (after following symbolic links): a FIFO would block the reader
  for ever, a directory or a dangling link would surface as a misleading error later.
* Outputs may only replace a file that swapkl wrote itself (a Parquet file carrying swapkl
  provenance, or a progress log with swapkl's header); anything else at that path is refused,
  never overwritten or deleted.
* No two outputs of one command, and no output and input, may be the same file (compared after
  resolving symbolic links, and by inode when both exist), or one would silently replace the other.
"""

from __future__ import annotations

import os
import stat

from swapkl.errors import SwapKLError


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "not a regular file"


def require_regular_file(path: str, what: str) -> None:
    """``path`` must name an existing, readable regular file (symbolic links are followed)."""
    if os.path.islink(path) and not os.path.exists(path):
        raise SwapKLError(f"{what} {path!r} is a dangling symbolic link (to {os.readlink(path)!r})")
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise SwapKLError(f"{what} {path!r} does not exist") from None
    except OSError as e:
        raise SwapKLError(f"cannot read {what} {path!r}: {(e.strerror or str(e)).lower()}") from None
    if not stat.S_ISREG(mode):
        raise SwapKLError(f"{what} {path!r} is {_kind(mode)}, not a regular file")
    try:
        # O_NONBLOCK: never wait on a path that turned into a FIFO after the check above
        os.close(os.open(path, os.O_RDONLY | os.O_NONBLOCK))
    except OSError as e:
        raise SwapKLError(f"cannot read {what} {path!r}: {(e.strerror or str(e)).lower()}") from None


def replaceable(path: str, what: str, owned) -> None:
    """Refuse to replace anything at ``path`` but a regular file that ``owned(path)`` says swapkl wrote.

    Nothing there is fine. ``owned`` is only called on a regular file that is not a symbolic link.
    """
    if not os.path.lexists(path):
        return
    mode = os.lstat(path).st_mode
    if stat.S_ISLNK(mode):
        raise SwapKLError(f"refusing to replace {what} {path!r}: it is a symbolic link, not a file swapkl wrote")
    if not stat.S_ISREG(mode):
        raise SwapKLError(f"refusing to replace {what} {path!r}: it is {_kind(mode)}, not a file swapkl wrote")
    if not owned(path):
        raise SwapKLError(f"refusing to overwrite {what} {path!r}: it exists and was not written by swapkl")


def same_file(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` name one file: equal after resolving symbolic links, or one inode."""
    if os.path.realpath(a) == os.path.realpath(b):
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def require_distinct(outputs: dict[str, str | None], inputs=None) -> None:
    """No two ``outputs`` (option name -> path) and no output and input may be the same file.

    ``inputs`` is a dict option name -> path, or (option name, path) pairs when an option repeats.
    """
    outs = [(k, str(v)) for k, v in outputs.items() if v]
    pairs = inputs.items() if isinstance(inputs, dict) else (inputs or [])
    ins = [(k, str(v)) for k, v in pairs if v]
    for n, (ka, a) in enumerate(outs):
        for kb, b in outs[n + 1:]:
            if same_file(a, b):
                raise SwapKLError(f"{ka} and {kb} name the same file ({a!r} and {b!r}); give each its own path")
        for kb, b in ins:
            if same_file(a, b):
                raise SwapKLError(f"{ka} {a!r} is the input {kb} {b!r}; an output never replaces an input")
