"""When two text specifications name the same text (so that one cannot be held out from the other).

Plain Python, no third-party import: the workflow's config validation uses it too, before any job runs.
"""

from __future__ import annotations

import hashlib
import os
import stat


def source_key(*, text_file=None, dataset=None, dataset_config=None, split=None, tokens=None, **_) -> tuple:
    """A key that is equal for two specifications exactly when they read the same text.

    Local files compare by their content (sha256), so a copy or a hard link of a file is the same text;
    a file that cannot be read (yet) compares by its resolved path. WikiText-2 and WikiText-103 share their validation
    and test articles, so for WikiText the configuration is ignored for those splits. ``text_fields``
    is ignored: two specs that read the same rows share their documents whichever fields make the
    text (an instruction the probe saw and its answer scored by perplexity are not held out).
    """
    if text_file:
        digest = content_sha256(text_file)
        return ("file", digest) if digest else ("file", os.path.realpath(text_file))
    if tokens:
        return ("tokens", os.path.realpath(tokens))
    name = (dataset or "").lower()
    if "wikitext" in name and split in ("test", "validation"):
        return ("dataset", name, None, split)
    return ("dataset", name, dataset_config, split)


def content_sha256(path) -> str | None:
    """sha256 of a regular file's bytes; None when ``path`` is not a readable regular file.

    Opened without blocking and checked on the open descriptor, like every input (a FIFO is never read).
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except OSError:
        return None
    with os.fdopen(fd, "rb") as f:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return None
        os.set_blocking(fd, True)
        h = hashlib.sha256()
        for block in iter(lambda: f.read(1 << 22), b""):
            h.update(block)
    return h.hexdigest()
