"""Loading a checkpoint safely: local directory or hub id, safetensors only, no remote code.

Both switches that relax this (``allow_pickle``, ``trust_remote_code``) are explicit
arguments and are written into the provenance of every output.
"""

from __future__ import annotations

import hashlib
import json
import os
from dataclasses import dataclass

import torch

from swapkl.errors import SwapKLError
from swapkl.hub import SOURCE_FILE

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


@dataclass
class LoadedModel:
    model: torch.nn.Module
    tokenizer: object | None
    path: str
    model_id: str
    revision: str | None
    commit: str | None
    weights_sha256: str
    dtype: str
    device: str
    allow_pickle: bool
    trust_remote_code: bool


def resolve_device(device: str) -> str:
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SwapKLError(f"device {device!r} requested but CUDA is not available")
    return device


def resolve_dtype(dtype: str) -> torch.dtype:
    if dtype not in DTYPES:
        raise SwapKLError(f"unknown dtype {dtype!r}: choose from {', '.join(DTYPES)}")
    return DTYPES[dtype]


def weights_sha256(path: str) -> str:
    """sha256 over the checkpoint's weight files (names and contents, sorted by name)."""
    names = sorted(n for n in os.listdir(path) if n.endswith((".safetensors", ".bin", ".pt", ".pth")))
    h = hashlib.sha256()
    for n in names:
        h.update(n.encode() + b"\0")
        with open(os.path.join(path, n), "rb") as f:
            for block in iter(lambda: f.read(1 << 22), b""):
                h.update(block)
    return h.hexdigest()


def _is_local_spec(model: str) -> bool:
    return os.path.isabs(model) or model.startswith((".", "~")) or os.path.exists(model) or model.count("/") > 1


def resolve_checkpoint_dir(model: str, revision: str | None) -> tuple[str, str | None]:
    """Local directory for ``model`` [at ``revision``]. Hub ids are returned unchanged."""
    if not _is_local_spec(model):
        return model, revision
    path = os.path.expanduser(model)
    if not os.path.isdir(path):
        raise SwapKLError(f"model path {model!r} does not exist")
    if revision:
        sub = os.path.join(path, revision)
        if os.path.isdir(sub):
            return sub, revision
        if not os.path.isfile(os.path.join(path, "config.json")):
            raise SwapKLError(f"revision {revision!r} not found under local model {model!r}")
    if not os.path.isfile(os.path.join(path, "config.json")):
        raise SwapKLError(f"model path {model!r} has no config.json (not a Hugging Face checkpoint)")
    return path, revision


def _check_weight_files(path: str, allow_pickle: bool) -> None:
    names = os.listdir(path)
    st = [n for n in names if n.endswith(".safetensors")]
    if not st and not allow_pickle:
        raise SwapKLError(f"checkpoint {path!r} has no .safetensors weights; pickle weights load only with --allow-pickle")
    from safetensors import safe_open

    for n in sorted(st):
        try:
            with safe_open(os.path.join(path, n), framework="pt") as f:
                keys = list(f.keys())
                for k in keys:
                    f.get_slice(k)
            size = os.path.getsize(os.path.join(path, n))
            _check_safetensors_size(os.path.join(path, n), size)
        except SwapKLError:
            raise
        except Exception as e:
            raise SwapKLError(f"weight file {os.path.join(path, n)!r} is unreadable (truncated or corrupt): {e}") from e


def _check_safetensors_size(path: str, size: int) -> None:
    """The header's largest data offset must fit in the file (catches truncation)."""
    with open(path, "rb") as f:
        n = int.from_bytes(f.read(8), "little")
        header = json.loads(f.read(n))
    end = max((v["data_offsets"][1] for k, v in header.items() if k != "__metadata__"), default=0)
    if 8 + n + end > size:
        raise SwapKLError(f"weight file {path!r} is truncated: {size} bytes, header needs {8 + n + end}")


def load_model(model: str, revision: str | None = None, *, dtype: str = "float32", device: str = "auto",
               allow_pickle: bool = False, trust_remote_code: bool = False, need_tokenizer: bool = True) -> LoadedModel:
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    torch_dtype = resolve_dtype(dtype)
    dev = resolve_device(device)
    path, revision = resolve_checkpoint_dir(model, revision)
    local = os.path.isdir(path)
    if not local:
        # a hub id: fetch the snapshot (safetensors only) through the cache, then load locally
        try:
            from huggingface_hub import snapshot_download

            from swapkl.hub import ALLOW_PATTERNS

            path = snapshot_download(repo_id=model, revision=revision, allow_patterns=ALLOW_PATTERNS)
        except Exception as e:
            raise SwapKLError(f"cannot fetch model {model!r} at revision {revision or 'main'}: {e}") from e
    _check_weight_files(path, allow_pickle)
    try:
        config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
    except Exception as e:
        raise SwapKLError(f"cannot read the config of {path!r}: {e}") from e
    from swapkl.adapters import ADAPTERS, supported_architectures

    if config.model_type not in ADAPTERS:
        raise SwapKLError(
            f"architecture {config.model_type!r} of {model!r} has no swapkl adapter; "
            f"supported: {', '.join(supported_architectures())}"
        )
    try:
        lm = AutoModelForCausalLM.from_pretrained(
            path, dtype=torch_dtype, use_safetensors=not allow_pickle, trust_remote_code=trust_remote_code
        )
    except Exception as e:
        raise SwapKLError(f"cannot load weights of {path!r}: {e}") from e
    lm = lm.to(dev).eval()
    tok = None
    if need_tokenizer:
        try:
            tok = AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
        except Exception:
            tok = None
    source = {}
    if os.path.isfile(os.path.join(path, SOURCE_FILE)):
        with open(os.path.join(path, SOURCE_FILE)) as f:
            source = json.load(f)
    commit = source.get("commit")
    if commit is None and not local:
        commit = os.path.basename(os.path.normpath(path))  # hub cache layout: snapshots/<commit>
    return LoadedModel(
        model=lm,
        tokenizer=tok,
        path=path,
        model_id=source.get("model_id", model),
        revision=source.get("revision", revision),
        commit=commit,
        weights_sha256=weights_sha256(path),
        dtype=dtype,
        device=dev,
        allow_pickle=allow_pickle,
        trust_remote_code=trust_remote_code,
    )
