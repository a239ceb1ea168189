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

from swapkl.hub.absence import refuse_absent
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


def describe(mode: int) -> str:
    """What a non-regular file is, in words ("a FIFO", "a directory", ...); "a file" for a regular one."""
    return "a file" if stat.S_ISREG(mode) else _kind(mode)


def open_input(path, what: str, mode: str = "rb", encoding: str | None = None):
    """The one way swapkl opens a file it reads: ``path`` must name an existing, readable regular file.

    Symbolic links are followed. FIFOs, sockets, devices, directories and dangling links are refused with
    one line naming ``path`` (``what`` says what it was meant to be), before anything could block on them:
    the file is opened without blocking and checked on the open descriptor, so a path that changes
    between a check and the open cannot slip through.
    """
    path = os.fspath(path)
    if path == "":
        raise SwapKLError(f"{what} is an empty path; give a file")
    if os.path.islink(path) and not os.path.exists(path):
        raise SwapKLError(f"{what} {path!r} is a dangling symbolic link (to {os.readlink(path)!r})")
    try:
        mode_bits = os.stat(path).st_mode
    except FileNotFoundError:
        raise SwapKLError(f"{what} {path!r} does not exist") from None
    except OSError as e:
        raise SwapKLError(f"cannot read {what} {path!r}: {(e.strerror or str(e)).lower()}") from None
    if not stat.S_ISREG(mode_bits):
        raise SwapKLError(f"{what} {path!r} is {_kind(mode_bits)}, not a regular file")
    try:
        # O_NONBLOCK: never wait on a path that turned into a FIFO after the check above
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError as e:
        raise SwapKLError(f"cannot read {what} {path!r}: {(e.strerror or str(e)).lower()}") from None
    st = os.fstat(fd)
    if not stat.S_ISREG(st.st_mode):
        os.close(fd)
        raise SwapKLError(f"{what} {path!r} is {_kind(st.st_mode)}, not a regular file")
    os.set_blocking(fd, True)
    try:
        refuse_absent(path, what)  # a marker of a revision the hub lacks holds no data
    except SwapKLError:
        os.close(fd)
        raise
    return os.fdopen(fd, mode, encoding=encoding)


def require_regular_file(path: str, what: str) -> None:
    """``path`` must name an existing, readable regular file (symbolic links are followed); see :func:`open_input`."""
    open_input(path, what).close()


NPY_MAGIC = b"\x93NUMPY"
ZIP_MAGIC = b"PK\x03\x04"
SAFETENSORS_MAX_HEADER = 100_000_000  # the safetensors format's own limit on its JSON header


def require_npy(path: str, what: str) -> None:
    """``path`` must be a NumPy ``.npy`` array (not ``.npz``, text, pickle or anything else)."""
    with open_input(path, what) as f:
        head = f.read(len(NPY_MAGIC))
    if head == NPY_MAGIC:
        return
    found = "a .npz archive" if head.startswith(ZIP_MAGIC) or str(path).endswith(".npz") else "not a NumPy array"
    raise SwapKLError(f"{what} {path!r} is {found}; expected .npy (one integer array saved with numpy.save)")


def safetensors_header_size(path: str, what: str) -> tuple[int | None, int]:
    """The JSON header length of a safetensors file (None when the file is shorter than 8 bytes) and the size.

    A file whose first bytes cannot start a safetensors header is refused as "not a safetensors file",
    rather than read as a huge header length and reported as truncated.
    """
    with open_input(path, what) as f:
        size = os.fstat(f.fileno()).st_size
        head = f.read(9)
    if len(head) < 8:
        return None, size
    n = int.from_bytes(head[:8], "little")
    if n > SAFETENSORS_MAX_HEADER or (len(head) == 9 and head[8:9] != b"{"):
        raise SwapKLError(f"{what} {path!r} is not a safetensors file")
    return n, size


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


def inside(a: str, b: str) -> bool:
    """Whether ``a`` lies inside the directory ``b`` (after resolving symbolic links)."""
    ra, rb = os.path.realpath(a), os.path.realpath(b)
    return ra.startswith(rb.rstrip(os.sep) + os.sep)


def require_distinct(outputs, inputs=None) -> None:
    """No two ``outputs`` and no output and input may be the same file, or lie one inside the other.

    Both are dicts option name -> path, or (option name, path) pairs when an option repeats. Paths compare
    after resolving symbolic links and, when both exist, by inode (a hard link is the same file).
    """
    def pairs(x):
        return [(k, str(v)) for k, v in (x.items() if isinstance(x, dict) else (x or [])) if v]

    outs, ins = pairs(outputs), pairs(inputs)
    for n, (ka, a) in enumerate(outs):
        for kb, b in outs[n + 1:]:
            if same_file(a, b) or inside(a, b) or inside(b, a):
                raise SwapKLError(f"{ka} and {kb} name the same file ({a!r} and {b!r}); give each its own path"
                                  if same_file(a, b) else
                                  f"{ka} {a!r} and {kb} {b!r} lie one inside the other; give each its own path")
        for kb, b in ins:
            if same_file(a, b):
                raise SwapKLError(f"{ka} {a!r} is the input {kb} {b!r}; an output never replaces an input")
            if inside(a, b):
                raise SwapKLError(f"{ka} {a!r} lies inside the input {kb} {b!r}; an output never writes into an input")
            if inside(b, a):
                raise SwapKLError(f"{ka} {a!r} holds the input {kb} {b!r}; an output never replaces an input")
