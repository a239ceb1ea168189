"""When two text specifications name the same text (so that one cannot be held out from the other).

Plain Python, no third-party import: the workflow's config validation uses it too, before any job runs.
"""

from __future__ import annotations

import os


def source_key(*, text_file=None, dataset=None, dataset_config=None, split=None, tokens=None, **_) -> tuple:
    """A key that is equal for two specifications exactly when they read the same text.

    Local files compare by their resolved path. WikiText-2 and WikiText-103 share their validation
    and test articles, so for WikiText the configuration is ignored for those splits. ``text_fields``
    is ignored: two specs that read the same rows share their documents whichever fields make the
    text (an instruction the probe saw and its answer scored by perplexity are not held out).
    """
    if text_file:
        return ("file", os.path.realpath(text_file))
    if tokens:
        return ("tokens", os.path.realpath(tokens))
    name = (dataset or "").lower()
    if "wikitext" in name and split in ("test", "validation"):
        return ("dataset", name, None, split)
    return ("dataset", name, dataset_config, split)
