"""The sublayer protocols (attention or MLP replacement, interchange and deletion) against the stock transformers
forward of a model whose blocks were rebuilt by hand: here the sublayers are named as modules of each
architecture's decoder layer (not the adapter's parameter prefixes), a moved sublayer is loaded with
``load_state_dict`` from the donor's modules, and a deleted sublayer's module is wrapped to return zeros (BLOOM,
whose attention and MLP add the residual themselves, gets zeros from its output projection instead). Parallel
residual (GPT-NeoX) and sequential blocks (Llama, Qwen3, Mistral, GPT-2, OLMo, OLMo 2, BLOOM, Gemma-3 with its
four norms) are all covered; OPT's post-LN blocks and BLOOM with the residual after the norm are refused."""

from __future__ import annotations

import copy

import pytest
import torch

import naive_reference as ref
from swapkl.errors import SwapKLError
from swapkl.model.engine import ProbeEngine
from swapkl.probes.protocols import build_variants
from tiny_models import random_tokens, tiny_model

N_LAYERS = 4
PROTOCOLS = ("attention_replacement", "mlp_replacement", "attention_interchange", "mlp_interchange",
             "attention_deletion", "mlp_deletion")

#: the modules of each sublayer in a decoder layer, by architecture, the sublayer's own module first (from the
#: transformers source of each decoder layer)
MODULES = {
    "gpt_neox": {"attention": ("attention", "input_layernorm"), "mlp": ("mlp", "post_attention_layernorm")},
    "llama": {"attention": ("self_attn", "input_layernorm"), "mlp": ("mlp", "post_attention_layernorm")},
    "qwen3": {"attention": ("self_attn", "input_layernorm"), "mlp": ("mlp", "post_attention_layernorm")},
    "mistral": {"attention": ("self_attn", "input_layernorm"), "mlp": ("mlp", "post_attention_layernorm")},
    "gpt2": {"attention": ("attn", "ln_1"), "mlp": ("mlp", "ln_2")},
    "olmo": {"attention": ("self_attn",), "mlp": ("mlp",)},  # its LayerNorms have no parameters
    "olmo2": {"attention": ("self_attn", "post_attention_layernorm"), "mlp": ("mlp", "post_feedforward_layernorm")},
    "bloom": {"attention": ("self_attention", "input_layernorm"), "mlp": ("mlp", "post_attention_layernorm")},
    "gemma3_text": {"attention": ("self_attn", "input_layernorm", "post_attention_layernorm"),
                    "mlp": ("mlp", "pre_feedforward_layernorm", "post_feedforward_layernorm")},
}
#: BLOOM's output projections, which get a hook returning zeros (its sublayers add the residual inside)
BLOOM_OUTPUTS = {"attention": ("self_attention", "dense"), "mlp": ("mlp", "dense_4h_to_h")}


def _part(protocol: str) -> str:
    return protocol.split("_")[0]


def rebuilt(model, arch: str, protocol: str, i: int, j: int | None):
    """A copy of ``model`` with the variant's blocks rebuilt by hand."""
    changed = copy.deepcopy(model)
    layers, own = ref.block_list(changed), ref.block_list(model)
    part = _part(protocol)
    names = MODULES[arch][part]
    if protocol.endswith("_deletion"):
        if arch == "bloom":
            parent, child = BLOOM_OUTPUTS[part]
            getattr(getattr(layers[i], parent), child).register_forward_hook(lambda m, a, out: torch.zeros_like(out))
        else:
            setattr(layers[i], names[0], ref.Zeroed(getattr(layers[i], names[0])))
        return changed
    moves = [(i, j)] if protocol.endswith("_replacement") else [(i, j), (j, i)]
    for host, donor in moves:
        for name in names:
            getattr(layers[host], name).load_state_dict(getattr(own[donor], name).state_dict())
    return changed


def _batch():
    ids = random_tokens(97, 3, 14, seed=5)
    mask = torch.ones_like(ids)
    mask[2, 9:] = 0
    return ids, mask


@pytest.mark.parametrize("arch", sorted(MODULES))
def test_every_sublayer_protocol_matches_the_hand_rebuilt_stock_forward(arch):
    model = tiny_model(arch, n_layers=N_LAYERS)
    ids, mask = _batch()
    eng = ProbeEngine(model)
    state = eng.base_pass(ids, mask)
    base = ref.logits(model, ids, mask)
    variants = build_variants(list(PROTOCOLS), "within:2", N_LAYERS)
    assert {v.protocol for v in variants} == set(PROTOCOLS)
    for v in variants:
        got, _ = eng.token_stats(state, v)
        want = ref.kl_per_position(base, ref.logits(rebuilt(model, arch, v.protocol, v.layer_i, v.layer_j), ids,
                                                     mask))[mask.bool()]
        # float32 forwards on both sides, KL in float64 from the logits: the engine resumes from the cached stream
        # and runs its rebuilt block, the reference recomputes everything (the bound of test_weight_protocols)
        err = (got.double() - want).abs().max().item()
        assert err <= 1e-5 * want.abs().max().item() + 1e-7, (v.key, err)
        assert want.max().item() > 1e-4, f"{v.key}: the variant changes nothing, the test would not see a bug"
    assert not eng.adapter.extra_blocks, "a variant's blocks outlived it"


def test_an_interchange_is_not_a_replacement_and_a_sublayer_is_not_the_block():
    """The protocols differ where they should: on Llama, the attention interchange of (1, 2) differs from the
    attention replacement 1 <- 2, and both from the whole-block replacement and interchange."""
    model = tiny_model("llama", n_layers=N_LAYERS)
    ids, mask = _batch()
    eng = ProbeEngine(model)
    state = eng.base_pass(ids, mask)
    kls = {}
    for name in ("attention_replacement", "attention_interchange", "replacement", "interchange", "mlp_deletion"):
        v = next(v for v in build_variants([name], "adjacent", N_LAYERS) if (v.layer_i, v.layer_j) in ((1, 2), (1, None)))
        kls[name] = eng.token_stats(state, v)[0].mean().item()
    assert len({round(k, 6) for k in kls.values()}) == len(kls), kls


@pytest.mark.parametrize("arch, setting, why", [
    ("opt", {}, "post-LN"),
    ("bloom", {"apply_residual_connection_post_layernorm": True}, "apply_residual_connection_post_layernorm"),
])
def test_an_architecture_whose_sublayers_cannot_be_separated_is_refused_naming_why(arch, setting, why):
    model = tiny_model(arch, n_layers=N_LAYERS)
    for key, value in setting.items():
        setattr(model.config, key, value)
    ids, mask = _batch()
    eng = ProbeEngine(model)
    state = eng.base_pass(ids, mask)
    for name in ("attention_replacement", "mlp_deletion"):
        with pytest.raises(SwapKLError, match=why):
            eng.token_stats(state, build_variants([name], "adjacent", N_LAYERS)[0])
    assert not eng.adapter.extra_blocks
