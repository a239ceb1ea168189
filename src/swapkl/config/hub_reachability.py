"""Whether the model hub can be reached from this machine, checked before a run that needs it (no request is
sent: the offline switch and a name lookup only)."""

from __future__ import annotations

import os
import socket
import urllib.parse

OFFLINE_DEMO = "make demo (snakemake --workflow-profile profiles/demo)"


def hub_unreachable() -> str | None:
    """Why the model hub cannot be reached from this machine (offline mode, or its host name does not
    resolve), or None. A host that resolves may still fail later; download_checkpoint reports that."""
    if os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE"):
        return "HF_HUB_OFFLINE is set"
    host = urllib.parse.urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname
    try:
        socket.getaddrinfo(host, 443)
    except OSError as err:
        return f"{host} does not resolve: {err.strerror}"
    return None



def hub_only(models: dict, enabled: list[str]) -> bool:
    """Whether every enabled model comes from the hub (directly or through `same_weights_as`): then an
    unreachable hub stops the whole run; with a local or demo model too, their jobs run on and each download
    fails at once, not retried, naming the demo."""
    hub = {m for m in enabled if "source" in models[m]}
    return {m for m in enabled if m in hub or models[m].get("same_weights_as") in hub} == set(enabled)
