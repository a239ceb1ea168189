"""A model already in memory (a loaded transformers causal LM) as the engines take a checkpoint: the
:class:`~swapkl.model.loading.LoadedModel` of the module itself, no copy of its weights and no file.

What a checkpoint's record holds is taken from the module: the weights' sha256 is that of the per-tensor digests
(:func:`swapkl.model.weights_fingerprint.module_digests`, in the module's own dtype), the config's that of its JSON.
The engines put the module in eval mode; :func:`modes_kept` gives every submodule its train/eval mode back.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from contextlib import contextmanager

import torch

from swapkl.errors import SwapKLError
from swapkl.model.loading import DTYPES, LoadedModel, check_finite_weights
from swapkl.model.weights_fingerprint import module_digests

#: what the records say the model was loaded from
SOURCE = "(in memory)"


def dtype_name(model: torch.nn.Module) -> str:
    """The name (a key of :data:`~swapkl.model.loading.DTYPES`) of the dtype of ``model``'s weights."""
    names = {v: k for k, v in DTYPES.items()}
    dtypes = {p.dtype for p in model.parameters() if p.is_floating_point()}
    if len(dtypes) != 1 or next(iter(dtypes)) not in names:
        shown = ", ".join(sorted(str(d) for d in dtypes)) or "none"
        raise SwapKLError(f"the model's weights must be of one dtype of {', '.join(DTYPES)}; they are {shown}")
    return names[next(iter(dtypes))]


def module_device(model: torch.nn.Module) -> str:
    """Where ``model``'s weights are (one device), as a device string."""
    devices = {p.device for p in model.parameters()}
    if len(devices) != 1:
        raise SwapKLError(f"the model's weights are on {len(devices)} devices ({', '.join(sorted(map(str, devices)))}): "
                          "probe a model on one device, or its checkpoint with `placement`")
    return str(next(iter(devices)))


def loaded_module(model: torch.nn.Module, *, name: str, dtype: str | None = None,
                  device: str = "auto") -> tuple[LoadedModel, dict[str, str]]:
    """``model`` as a :class:`LoadedModel` labelled ``name``, and the sha256 of each of its tensors. ``dtype`` and
    ``device`` (``auto``: where it is) must be the module's own: the module is probed as it is, never cast or moved
    (which would copy its weights)."""
    if not isinstance(model, torch.nn.Module) or not hasattr(model, "config"):
        raise SwapKLError(f"model must be a loaded transformers causal LM (an nn.Module with a config), not "
                          f"{type(model).__name__}")
    if hasattr(model, "peft_config"):
        raise SwapKLError(f"model is a peft-wrapped {type(model).__name__}: probe the merged model "
                          "(model.merge_and_unload()) or its base model")
    own_dtype, own_device = dtype_name(model), module_device(model)
    if dtype is not None and dtype != own_dtype:
        raise SwapKLError(f"dtype {dtype!r}, but the model's weights are {own_dtype}: cast the model yourself "
                          f"(model.to(torch.{dtype})), or leave dtype out")
    if device != "auto" and torch.device(device) != torch.device(own_device):
        raise SwapKLError(f"device {device!r}, but the model is on {own_device}: move it yourself "
                          f"(model.to({device!r})), or leave device out")
    check_finite_weights(name, model)
    digests = module_digests(model, DTYPES[own_dtype])
    weights = hashlib.sha256(json.dumps(digests, sort_keys=True).encode()).hexdigest()
    config = hashlib.sha256(model.config.to_json_string(use_diff=False).encode()).hexdigest()
    return LoadedModel(model=model, tokenizer=None, path=SOURCE, model_id=name, revision=None, commit=None,
                       weights_sha256=weights, config_sha256=config, tokenizer_sha256=None, dtype=own_dtype,
                       device=own_device, allow_pickle=False, trust_remote_code=False), digests


@contextmanager
def modes_kept(model: torch.nn.Module) -> Iterator[None]:
    """Within the block the engines may put ``model`` in eval mode; afterwards every submodule has its mode back."""
    modes = {module: module.training for module in model.modules()}
    try:
        yield
    finally:
        for module, training in modes.items():
            module.training = training
