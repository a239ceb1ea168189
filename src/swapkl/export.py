"""A pruned or reordered checkpoint that loads with ``AutoModelForCausalLM``, verified against the engine.

The exported checkpoint runs blocks ``order`` (indices into the source model's blocks) at slots
0..len(order)-1. Its files follow the Hugging Face layout:

* safetensors weights (sharded with an index when large), every block's tensors renamed from
  ``<layers>.<block>.`` to ``<layers>.<slot>.`` so each block gets the ``layer_idx`` of its new slot
  (KV caches index by it);
* ``config.json`` with ``num_hidden_layers = len(order)`` and every per-layer list renumbered. A
  per-layer list describes the *slot*: the stock forward picks ``layer_types[slot]`` by position, and
  so does the engine (a moved block receives the mask of the slot it runs in). The export keeps
  ``layer_types[0:len(order)]`` of the source, which is what the engine measured;
* the tokenizer files and generation config of the source, copied unchanged;
* ``swapkl_export.json``: source checkpoint (id, revision, commit, weights sha256), order, removed
  blocks, skipped sublayers, guide, software versions and the verification result.

A skipped sublayer (``skip``: ``(block, "attention" | "mlp")`` of a kept block) keeps its tensors, with its output
projection's weight and bias written as zeros: the stock architecture has no per-block switch to leave a sublayer
out, so this is the form every loader reads, and the block adds nothing through that sublayer (the engine's
``skip`` recipe, :mod:`swapkl.model.sublayers`). The file does not shrink; ``swapkl_export.json`` lists the
zeroed tensors and how many parameters the skipped sublayers hold, for a deployment that drops them.

Before the directory appears under its final name the export is reloaded with
``AutoModelForCausalLM.from_pretrained`` and its logits are compared with the engine's variant
(:func:`verify_export`); greedy generation with the KV cache must also equal generation without it.
A failed check leaves nothing behind; an existing ``--out`` is never touched. The export is staged in
``.OUT.XXXXXXXX.partial`` next to ``--out``; one killed outright leaves that folder, which the next export into
the same parent folder removes (:mod:`swapkl.tables.staging`: only swapkl's marked staging folders that no live
run holds).
"""

from __future__ import annotations

import copy
import json
import logging
import math
import os
import shutil

import torch

from swapkl.adapters import adapter_class, get_adapter
from swapkl.errors import SwapKLError
from swapkl.model.checkpoint_dir import files_sha256, is_local_spec, share_tree, weights_sha256
from swapkl.model.loading import load_model, tokenizer_files
from swapkl.tables.parquet_io import os_reason
from swapkl.model.engine import ProbeEngine
from swapkl.model.sublayer_variants import PARTS, with_skips
from swapkl.model.sublayers import sublayer_parameters
from swapkl.model.variant import Variant
from swapkl.model.merge import averaged_block
from swapkl.tables import provenance
from swapkl.tables.staging import Staging
from swapkl.tables.schemas import read_frame

log = logging.getLogger(__name__)

PROVENANCE_FILE = "swapkl_export.json"
#: the provenance file of a healed checkpoint (:func:`swapkl.recovery.recovery_table.save_healed` writes it,
#: the downstream scores read it)
HEAL_FILE = "swapkl_heal.json"
#: config fields that hold one entry per block (renumbered by slot)
PER_LAYER_FIELDS = ("layer_types",)
MAX_SHARD_SIZE = "5GB"


def parse_indices(text: str, what: str) -> list[int]:
    """``"3,5"`` -> [3, 5]; a one-line error naming ``what`` otherwise."""
    try:
        out = [int(x) for x in text.split(",") if x.strip()]
    except ValueError:
        raise SwapKLError(f"{what} must be comma-separated block indices like 3,5, got {text!r}") from None
    if not out:
        raise SwapKLError(f"{what} names no block")
    return out


def export_order(n_layers: int, *, remove: list[int] | None = None, order: list[int] | None = None) -> tuple[int, ...]:
    """The block order of the exported model from exactly one of ``remove`` and ``order``."""
    if (remove is None) == (order is None):
        raise SwapKLError("give exactly one of `remove` and `order`")
    given = remove if remove is not None else order
    name = "`remove`" if remove is not None else "`order`"
    bad = [b for b in given if not 0 <= b < n_layers]
    if bad:
        raise SwapKLError(f"{name} names block(s) {bad} outside 0..{n_layers - 1} of this {n_layers}-block model")
    if remove is not None:
        if len(set(remove)) != len(remove):
            raise SwapKLError(f"`remove` names a block twice: {remove}")
        if len(remove) >= n_layers:
            raise SwapKLError(f"`remove` would remove all {n_layers} blocks")
        return tuple(b for b in range(n_layers) if b not in set(remove))
    if len(order) > n_layers:
        raise SwapKLError(f"`order` has {len(order)} slots, more than the model's {n_layers} blocks")
    return tuple(order)


def _layers_prefix(model, blocks) -> str:
    for name, module in model.named_modules():
        if module is blocks:
            return name + "."
    raise SwapKLError(f"cannot find the block list of {type(model).__name__}")


def parse_sublayers(text: str, what: str = "--skip") -> list[tuple[int, str]]:
    """``"3.attention,5.mlp"`` -> [(3, "attention"), (5, "mlp")]; a one-line error naming ``what`` otherwise."""
    out = []
    for item in (x.strip() for x in text.split(",")):
        if not item:
            continue
        block, _, part = item.partition(".")
        if not block.isdigit() or part not in PARTS:
            raise SwapKLError(f"{what} takes sublayers like 3.attention,5.mlp (a block and {' or '.join(PARTS)}), "
                              f"got {item!r}")
        out.append((int(block), part))
    if not out:
        raise SwapKLError(f"{what} names no sublayer")
    return out


def check_skip(skip: list[tuple[int, str]] | None, order: tuple[int, ...]) -> list[tuple[int, str]]:
    """The skipped sublayers (sorted): each of a block the export keeps once, one sublayer per block (both is the
    block removed)."""
    skip = sorted(set(skip or ()))
    blocks = [b for b, _ in skip]
    for block, part in skip:
        if block not in order:
            raise SwapKLError(f"skip {block}.{part}: block {block} is not among the exported blocks {list(order)}")
        if order.count(block) > 1:
            raise SwapKLError(f"skip {block}.{part}: block {block} runs at several slots")
    twice = sorted({b for b in blocks if blocks.count(b) > 1})
    if twice:
        raise SwapKLError(f"skip names both sublayers of block(s) {twice}: remove the block instead")
    return skip


def export_variant(order: tuple[int, ...], skip: list[tuple[int, str]], n_layers: int) -> Variant:
    """The engine's variant of the export: blocks ``order``, the skipped sublayers built by the ``skip`` recipe."""
    return with_skips(order, skip, n_layers, protocol="export")


def export_state_dict(model, blocks, order: tuple[int, ...],
                      skip: list[tuple[int, str]] | None = None) -> dict[str, torch.Tensor]:
    """Tensors of the exported model: block ``order[k]`` renamed to slot ``k``; the output projection of each
    sublayer of ``skip`` zeroed.

    A tied output embedding is left out (the config's ``tie_word_embeddings`` ties it again on load);
    a block used at several slots is copied so every slot owns its tensors.
    """
    prefix = _layers_prefix(model, blocks)
    adapter = adapter_class(getattr(model.config, "model_type", None))
    sd = model.state_dict()
    head_key = None
    if getattr(model.config, "tie_word_embeddings", False):
        head = model.get_output_embeddings()
        if head.weight is model.get_input_embeddings().weight:
            head_key = next(name for name, m in model.named_modules(remove_duplicate=False) if m is head) + ".weight"
    out: dict[str, torch.Tensor] = {}
    for key, t in sd.items():
        if key == head_key:
            continue
        if not key.startswith(prefix):
            out[key] = t.contiguous()
    per_block: dict[int, dict[str, torch.Tensor]] = {}
    for key, t in sd.items():
        if key.startswith(prefix):
            block, rest = key[len(prefix):].split(".", 1)
            per_block.setdefault(int(block), {})[rest] = t
    seen: set[int] = set()
    zeroed = {b: adapter.sublayer_outputs[part] for b, part in (skip or ())}
    for slot, block in enumerate(order):
        tensors = per_block[block]
        if block in zeroed:
            tensors = {rest: torch.zeros_like(t) if rest.startswith(zeroed[block]) else t
                       for rest, t in tensors.items()}
        tensors = adapter.export_block_tensors(model.config, tensors, block, slot)
        for rest, t in tensors.items():
            out[f"{prefix}{slot}.{rest}"] = t.clone() if block in seen else t.contiguous()
        seen.add(block)
    return out


def export_config(config, order: tuple[int, ...]):
    """A copy of ``config`` for ``len(order)`` blocks, per-layer lists kept by slot (see module docstring)."""
    cfg = copy.deepcopy(config)
    n = config.num_hidden_layers
    for key, value in config.to_dict().items():
        if isinstance(value, list) and len(value) == n and key not in PER_LAYER_FIELDS:
            raise SwapKLError(f"config field {key!r} looks per-layer and swapkl does not know how to renumber it")
    cfg.num_hidden_layers = len(order)
    for key in PER_LAYER_FIELDS:
        value = getattr(config, key, None)
        if isinstance(value, list):
            setattr(cfg, key, list(value[: len(order)]))
    return cfg


def _write_weights(state: dict[str, torch.Tensor], folder: str) -> None:
    from huggingface_hub import split_torch_state_dict_into_shards
    from safetensors.torch import save_file

    split = split_torch_state_dict_into_shards(state, max_shard_size=MAX_SHARD_SIZE)
    for filename, names in split.filename_to_tensors.items():
        save_file({k: state[k] for k in names}, os.path.join(folder, filename), metadata={"format": "pt"})
    if split.is_sharded:
        index = {"metadata": split.metadata, "weight_map": split.tensor_to_filename}
        with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
            json.dump(index, f, indent=2, sort_keys=True)


def check_tokens(vocab_size: int, max_positions: int | None, *, n_seqs: int = 2, seq_len: int = 32, seed: int = 0):
    """Seeded random token ids [n_seqs, seq_len] for the logits check (no tokenizer needed)."""
    seq_len = min(seq_len, max_positions or seq_len)
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab_size, (n_seqs, seq_len), generator=g)


def reduction_size(model) -> tuple[int, int]:
    """(number of blocks, longest reduction a block's matrix products run over) of ``model``: the largest
    dimension of any 2-D weight in its blocks (hidden or intermediate size; an upper bound on the sum
    lengths, whatever the layout of the weights)."""
    blocks = get_adapter(model).blocks
    width = max((max(p.shape) for p in blocks.parameters() if p.dim() == 2), default=1)
    return len(blocks), int(width)


def logits_tolerance(dtype: torch.dtype, scale: float, n_layers: int = 1, width: int = 1) -> float:
    """Largest |logit difference| accepted between the export and the engine (or the export with and
    without its KV cache), for a model of ``n_layers`` blocks whose longest sum runs over ``width`` terms.

    Both run the same float operations on the same weights and inputs (the export's stock forward is
    the computation the engine's adapters reproduce), so in float32 on one machine the difference is
    normally 0.
    What may differ is the blocking of a matrix product (a different kernel for a different call
    shape, as a KV-cache step multiplies other shapes than the full forward). A reassociated sum of d
    products has a relative error of about ``sqrt(d) * eps``, and the errors of the blocks in a row
    add up like a random walk, to about ``sqrt(n_layers * width) * eps`` of the logit scale (kernels
    accumulate in float32, so ``eps`` is float32's for every dtype). Measured on Gemma-3-270M with
    two to five blocks removed (13 to 16 blocks, width 2048, estimate 1.1e-5): float32 against float64
    up to 1.4e-5 of the scale, the KV cache against the full forward up to 3.1e-5. The unpruned model
    stays near 1.5e-6: removing blocks leaves a less well-conditioned stack.
    The tolerance is 8 times that estimate, and at least 1e-5 of the scale in float32; in half
    precision at least ``8 eps`` of the half type, because the stock head rounds the logits to the
    model dtype while the engine forms them in float32 (up to eps/2 of |z| each).
    """
    floor = 1e-5 if dtype == torch.float32 else 8 * torch.finfo(dtype).eps
    walk = 8 * math.sqrt(max(1, n_layers) * max(1, width)) * torch.finfo(torch.float32).eps
    return max(floor, walk) * max(1.0, scale)


def _as_variant(variant: "Variant | tuple[int, ...]") -> Variant:
    return variant if isinstance(variant, Variant) else Variant("export", None, None, tuple(variant))


@torch.inference_mode()
def engine_logits(model, variant: "Variant | tuple[int, ...]", input_ids: torch.Tensor) -> torch.Tensor:
    """Logits [B, T, V] of ``variant`` (or the block order) as the probe engine computes it (resume from its
    slot)."""
    engine = ProbeEngine(model)
    mask = torch.ones_like(input_ids)
    state = engine.base_pass(input_ids, mask)
    h = engine.final_hidden(state, _as_variant(variant))
    return engine.unemb.logits(engine.adapter.final_norm(h))


@torch.inference_mode()
def difference_to_engine(candidate, model, variant: "Variant | tuple[int, ...]") -> tuple[torch.Tensor, float, float]:
    """(the check tokens, max |logit difference| of the stock model ``candidate`` against the engine's variant
    (or block order) of ``model`` on them, the tolerance :func:`logits_tolerance` allows)."""
    adapter = get_adapter(model)
    ids = check_tokens(adapter.vocab_size, adapter.max_positions).to(next(candidate.parameters()).device)
    ref = engine_logits(model, variant, ids).float()
    got = candidate(input_ids=ids, use_cache=False).logits.float()
    return ids, float((got - ref).abs().max()), logits_tolerance(model.dtype, float(ref.abs().max()),
                                                                 *reduction_size(candidate))


@torch.inference_mode()
def verify_export(folder: str, model, variant: "Variant | tuple[int, ...]", *, n_generate: int = 8) -> dict:
    """Reload ``folder`` and check it against the engine's ``variant`` (or block order) of ``model``; return the
    measurements."""
    order = _as_variant(variant).order
    from transformers import AutoModelForCausalLM

    try:
        exported, info = AutoModelForCausalLM.from_pretrained(folder, dtype=model.dtype, use_safetensors=True,
                                                              output_loading_info=True)
    except Exception as e:
        raise SwapKLError(f"the exported checkpoint does not reload: {e}") from e
    problems = {k: sorted(v) for k, v in info.items() if v and k in ("missing_keys", "unexpected_keys",
                                                                       "mismatched_keys")}
    if problems:
        raise SwapKLError(f"the exported checkpoint reloads with {problems}")
    exported = exported.to(next(model.parameters()).device).eval()
    if exported.config.num_hidden_layers != len(order):
        raise SwapKLError(f"the exported checkpoint reloads with {exported.config.num_hidden_layers} blocks, "
                          f"not {len(order)}")
    adapter = get_adapter(model)
    ids, diff, tol = difference_to_engine(exported, model, variant)
    if not diff <= tol:
        raise SwapKLError(f"the exported checkpoint's logits differ from the engine's variant by {diff:.3g} "
                          f"(tolerance {tol:.3g})")
    prompt = ids[:1, : max(1, ids.shape[1] // 2)]
    n_new = min(n_generate, max(0, (adapter.max_positions or 10**9) - prompt.shape[1]))
    gen = exported.generate(prompt, attention_mask=torch.ones_like(prompt), use_cache=True, do_sample=False,
                            max_new_tokens=n_new, min_new_tokens=n_new, pad_token_id=0, output_logits=True,
                            return_dict_in_generate=True)
    # each step's logits with the KV cache must equal one full forward over the generated sequence
    # (compared within the tolerance, not by token: a near-tie may flip in half precision)
    stepped = torch.stack(gen.logits, dim=1).float()[0]
    full = exported(input_ids=gen.sequences[:, :-1], use_cache=False).logits.float()[0, prompt.shape[1] - 1:]
    gen_diff = float((stepped - full).abs().max()) if n_new else 0.0
    gen_tol = logits_tolerance(model.dtype, float(full.abs().max()) if n_new else 0.0, *reduction_size(exported))
    if not gen_diff <= gen_tol:
        raise SwapKLError(f"generation with the KV cache on the exported checkpoint differs from the full forward "
                          f"by {gen_diff:.3g} (tolerance {gen_tol:.3g})")
    return {"max_abs_logit_diff": diff, "logit_tolerance": tol, "check_tokens": list(ids.shape),
            "generate_tokens_checked": int(n_new), "generate_max_abs_logit_diff": gen_diff,
            "generate_logit_tolerance": gen_tol}


def copy_side_files(src: str, dst: str, tokenizer_files: list[str]) -> list[str]:
    """Copy the tokenizer files ``tokenizer_files`` (every file the tokenizer loads:
    :func:`swapkl.model.loading.tokenizer_files`, paths relative to ``src``) and the generation config that
    checkpoint folder ``src`` holds into ``dst``; the names copied."""
    copied = []
    for name in list(tokenizer_files) + ["generation_config.json"]:
        path = os.path.join(src, name)
        if os.path.isfile(path):
            os.makedirs(os.path.dirname(os.path.join(dst, name)), exist_ok=True)
            shutil.copy2(path, os.path.join(dst, name))
            copied.append(name)
    return copied


def verify_tokenizer(src: str, folder: str, trust_remote_code: bool = False) -> None:
    """The tokenizer copied into ``folder`` must load and be the tokenizer of ``src``: the same vocabulary, and the
    same ids for a test text (a file the source tokenizer loads but the copy lacks would change either)."""
    from transformers import AutoTokenizer

    text = "The quick brown fox, 42 times: jumps over the lazy dog.\n\tÄ é 中文"
    try:
        copy = AutoTokenizer.from_pretrained(folder, trust_remote_code=trust_remote_code)
    except Exception as e:
        first = " ".join(str(e).split()) or type(e).__name__
        raise SwapKLError(f"the exported checkpoint's tokenizer does not load: {first}") from None
    source = AutoTokenizer.from_pretrained(src, trust_remote_code=trust_remote_code)
    if copy.get_vocab() != source.get_vocab() or copy(text)["input_ids"] != source(text)["input_ids"]:
        raise SwapKLError(f"the exported checkpoint's tokenizer differs from the tokenizer of {src!r}")


def check_merge(merge: list[int] | None, order: tuple[int, ...]) -> list[int]:
    """The merged slots (sorted): each runs the weight average of its block ``a`` and block ``a + 1``, which the
    export must leave out (LaCo rows of the pruning table: ``merged_layers`` and ``removed_layers``)."""
    merged = sorted(set(merge or ()))
    for a in merged:
        if a not in order or a + 1 in order:
            raise SwapKLError(f"`merge` {a}: a merged block {a} must be kept and block {a + 1} removed "
                              f"(kept blocks: {list(order)})")
    return merged


def check_merge_indices(merge: list[int] | None, remove: list[int] | None, order: list[int] | None) -> None:
    """Before anything is loaded: a merged block ``a`` is kept and replaced by its average with block ``a + 1``,
    which ``remove`` must remove; so ``a`` itself may not be removed (``merge`` goes with ``remove`` only)."""
    if not merge:
        return
    if remove is None:
        raise SwapKLError("`merge` goes with `remove` (the merged block's partner is removed), not with `order`")
    for a in sorted(set(merge)):
        if a in remove:
            raise SwapKLError(f"`merge` {a} names block {a}, which `remove` removes; a merged block is kept (as the "
                              f"average of blocks {a} and {a + 1}) and block {a + 1} is removed")
        if a + 1 not in remove:
            raise SwapKLError(f"`merge` {a} averages block {a + 1} into block {a}, so `remove` must remove block "
                              f"{a + 1} too")


def _merge_blocks(blocks, merged: list[int]) -> None:
    """Replace each merged block ``a`` of the loaded model by the average of blocks ``a`` and ``a + 1``
    (:func:`swapkl.model.merge.averaged_block`, the pruning study's merge)."""
    for a in merged:
        blocks[a] = averaged_block(blocks[a], blocks[a + 1])


def resolved_source(loaded) -> str:
    """Where the exported weights came from, resolved: ``hub-id@commit`` for a hub checkpoint (also one that
    ``swapkl download`` stored locally with its source record), else the absolute path of the local folder."""
    if is_local_spec(loaded.model_id):
        return os.path.abspath(loaded.path)
    return f"{loaded.model_id}@{loaded.commit}" if loaded.commit else loaded.model_id


def export_checkpoint(model: str, out: str, *, revision: str | None = None, remove: list[int] | None = None,
                      order: list[int] | None = None, merge: list[int] | None = None,
                      skip: list[tuple[int, str]] | None = None, guide: str | None = None,
                      dtype: str = "float32", device: str = "auto", allow_pickle: bool = False,
                      trust_remote_code: bool = False) -> dict:
    """Write the pruned / reordered checkpoint to ``out`` (which must not exist); return its provenance.
    ``merge``: slots whose block becomes the weight average of itself and the next (removed) block; ``skip``:
    ``(block, part)`` sublayers of kept blocks that add nothing (their output projections written as zeros)."""
    check_merge_indices(merge, remove, order)
    if os.path.lexists(out):
        raise SwapKLError(f"`out` {out!r} already exists; swapkl export writes only a new directory")
    parent = os.path.dirname(os.path.abspath(out))
    if not os.path.isdir(parent):
        raise SwapKLError(f"the parent directory of `out` {out!r} does not exist")
    loaded = load_model(model, revision, dtype=dtype, device=device, allow_pickle=allow_pickle,
                        trust_remote_code=trust_remote_code, need_tokenizer=False)
    adapter = get_adapter(loaded.model)
    blocks_order = export_order(adapter.n_layers, remove=remove, order=order)
    merged = check_merge(merge, blocks_order)
    skip = check_skip(skip, blocks_order)
    if skip and merged and {b for b, _ in skip} & set(merged):
        raise SwapKLError("`skip` names a sublayer of a merged block; skip sublayers of unmerged blocks only")
    for block, part in skip:  # refused, naming why, where the architecture's sublayers cannot be separated
        sublayer_parameters(adapter.blocks[block], adapter, part)
    _merge_blocks(adapter.blocks, merged)
    staging = None
    try:
        staging = Staging(out)
        tmp = staging.path
        _write_weights(export_state_dict(loaded.model, adapter.blocks, blocks_order, skip), tmp)
        export_config(loaded.model.config, blocks_order).save_pretrained(tmp)
        tok = tokenizer_files(loaded.path, loaded.model.config.model_type)
        copied = copy_side_files(loaded.path, tmp, tok)
        check = verify_export(tmp, loaded.model, export_variant(blocks_order, skip, adapter.n_layers))
        if tok:
            verify_tokenizer(loaded.path, tmp, loaded.trust_remote_code)
        removed = sorted(set(range(adapter.n_layers)) - set(blocks_order))
        prov = provenance.build(loaded, model_id=resolved_source(loaded), source_path=os.path.abspath(loaded.path),
                                tokenizer_sha256=files_sha256(loaded.path, tok) if tok else None,
                                order=list(blocks_order), removed_layers=removed,
                                merged_layers=merged, skipped_sublayers=[f"{b}.{p}" for b, p in skip],
                                skipped_parameters=_skipped_parameters(adapter, skip),
                                zeroed_tensors=_zeroed_tensors(adapter, blocks_order, skip), guide=guide, n_layers_source=adapter.n_layers, n_layers=len(blocks_order),
                                export_weights_sha256=weights_sha256(tmp), copied_files=copied, verification=check)
        with open(os.path.join(tmp, PROVENANCE_FILE), "w") as f:
            json.dump(prov, f, indent=2, sort_keys=True)
        share_tree(tmp)
        if os.path.lexists(out):
            raise SwapKLError(f"`out` {out!r} appeared while exporting; left untouched")
        staging.commit(out)
    except BaseException as e:
        if staging is not None:
            staging.discard()  # our own staging directory, never the user's --out
        if isinstance(e, OSError):  # disk full, read-only file system...: one line, as for every output
            raise SwapKLError(f"cannot write {out!r}: {os_reason(e)}") from e
        raise
    log.info("exported %d of %d blocks to %s (max |logit diff| %.3g)", len(blocks_order), adapter.n_layers, out,
             check["max_abs_logit_diff"])
    return prov


def _skipped_parameters(adapter, skip) -> int:
    """The parameters the skipped sublayers hold (written, but without effect)."""
    total = 0
    for block, part in skip:
        own = dict(adapter.blocks[block].named_parameters())
        total += sum(own[name].numel() for name in sublayer_parameters(adapter.blocks[block], adapter, part))
    return total


def _zeroed_tensors(adapter, order: tuple[int, ...], skip) -> list[str]:
    """The exported block tensors (``<slot>.<name>``, before any renaming by the adapter) written as zeros."""
    parts = dict(skip)
    return [f"{slot}.{name}" for slot, block in enumerate(order) if block in parts
            for name, _ in adapter.blocks[block].named_parameters()
            if name.startswith(adapter.sublayer_outputs[parts[block]])]


def _choice_folder(r) -> str:
    """``<guide>-n<budget>``, with the random draw or the fixed set's name where a guide has several rows."""
    name = f"{r.guide}-n{int(r.budget)}"
    if r.random_draw is not None and r.random_draw == r.random_draw:  # not null / NaN
        name += f"-draw{int(r.random_draw)}"
    if isinstance(r.fixed_set, str):
        name += f"-{r.fixed_set}"
    return name


def export_pruning_choices(pruning_file: str, model: str, out_dir: str, guides: list[str], *,
                           revision: str | None = None, dtype: str = "float32", device: str = "auto") -> list[str]:
    """Export the pruned model each of ``guides`` chose at each feasible budget of a pruning table
    (LaCo rows with their merged blocks; one folder per random draw and per fixed set).

    Writes ``out_dir/<guide>-n<budget>[-draw<k>|-<fixed set>]/`` (``out_dir`` must be new or empty); returns the
    written folders.
    """
    table = read_frame(pruning_file, ["guide", "budget", "random_draw", "removed_layers", "feasible"], "pruning")
    for name in ("fixed_set", "merged_layers"):  # appended columns: absent from older tables
        if name not in table:
            table[name] = None
    unknown = sorted(set(guides) - set(table["guide"]))
    if unknown:
        raise SwapKLError(f"pruning table {pruning_file!r} has no guide {', '.join(unknown)} "
                          f"(it has {', '.join(sorted(set(table['guide'])))})")
    if os.path.lexists(out_dir) and (not os.path.isdir(out_dir) or os.listdir(out_dir)):
        raise SwapKLError(f"{out_dir!r} already exists and is not empty; exports go into a new directory")
    os.makedirs(out_dir, exist_ok=True)
    written = []
    for guide in guides:
        rows = table[(table["guide"] == guide) & table["feasible"].astype(bool)].sort_values("budget")
        for r in rows.itertuples(index=False):
            folder = os.path.join(out_dir, _choice_folder(r))
            merged = None if r.merged_layers is None else [int(b) for b in r.merged_layers]
            export_checkpoint(model, folder, revision=revision, remove=[int(b) for b in r.removed_layers],
                              merge=merged, guide=guide, dtype=dtype, device=device)
            written.append(folder)
    return written
