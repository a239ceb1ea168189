"""Which weights a table was measured on, checked against a model in memory: one sha256 per tensor.

A probe file's provenance names the checkpoint's weight files by their sha256; a model handed to the Python API
(:func:`swapkl.api.prune`) is tensors in memory, which need not match any file byte for byte. So the API records,
when it probes, the sha256 of each tensor's values in the probe's dtype (:func:`module_digests` for a loaded
model, :func:`folder_digests` for a checkpoint folder's safetensors files) and compares a model with them before it
prunes it (:func:`require_same_weights`). Tensors that share storage (tied embeddings) are one tensor, named as
the record names it; the tensors are cast to the recorded dtype first (exact for a float32 copy of bfloat16
weights, and the probe ran on the cast values too).
"""

from __future__ import annotations

import hashlib
import os

import torch

from swapkl.errors import SwapKLError


def tensor_digest(tensor: torch.Tensor, dtype: torch.dtype) -> str:
    """sha256 of the shape and the values of ``tensor`` cast to ``dtype`` (bytes in row-major order)."""
    values = tensor.detach().to(device="cpu", dtype=dtype).contiguous()
    h = hashlib.sha256(repr(tuple(values.shape)).encode())
    h.update(values.reshape(-1).view(torch.uint8).numpy().tobytes())
    return h.hexdigest()


def _distinct(model: torch.nn.Module, prefer=()) -> dict[str, torch.Tensor]:
    """{name: tensor} of the model's state dict, one name per storage (a name in ``prefer`` first, else the first
    name in sorted order)."""
    by_storage: dict[tuple, list[str]] = {}
    state = model.state_dict()
    for name, tensor in state.items():
        by_storage.setdefault((tensor.device, tensor.data_ptr(), tuple(tensor.shape)), []).append(name)
    out = {}
    for names in by_storage.values():
        chosen = next((n for n in sorted(names) if n in prefer), sorted(names)[0])
        out[chosen] = state[chosen]
    return out


def module_digests(model: torch.nn.Module, dtype: torch.dtype) -> dict[str, str]:
    """{tensor name: :func:`tensor_digest`} of a model in memory, each storage once."""
    return {name: tensor_digest(t, dtype) for name, t in sorted(_distinct(model).items())}


def folder_digests(folder: str, dtype: torch.dtype) -> dict[str, str] | None:
    """{tensor name: :func:`tensor_digest`} of the safetensors weight files of a checkpoint folder; None when it has
    none (pickle weights are not opened here)."""
    from safetensors import safe_open

    files = sorted(n for n in os.listdir(folder) if n.endswith(".safetensors"))
    if not files:
        return None
    out = {}
    for name in files:
        with safe_open(os.path.join(folder, name), framework="pt") as f:
            for key in f.keys():
                out[key] = tensor_digest(f.get_tensor(key), dtype)
    return dict(sorted(out.items()))


def require_same_weights(model: torch.nn.Module, recorded: dict[str, str], dtype: torch.dtype, what: str) -> None:
    """Refuse ``model`` unless its tensors are those ``recorded`` (names and values in ``dtype``), naming the first
    tensor that differs; ``what`` names the table in the message."""
    got = _distinct(model, prefer=recorded)
    missing = sorted(set(recorded) - set(got))
    extra = sorted(set(got) - set(recorded))
    if missing or extra:
        differ = f"{len(missing) + len(extra)} tensor name(s) differ"
        if missing:
            raise SwapKLError(f"the model lacks tensor {missing[0]!r} of the model {what} was measured on ({differ}): "
                              "it is another model")
        raise SwapKLError(f"the model has tensor {extra[0]!r}, which the model {what} was measured on lacks ({differ}): "
                          "it is another model")
    for name in sorted(recorded):
        if tensor_digest(got[name], dtype) != recorded[name]:
            raise SwapKLError(f"the model's tensor {name!r} differs from the one {what} was measured on (it was "
                              "changed after probing, or this is another checkpoint): probe this model again")
