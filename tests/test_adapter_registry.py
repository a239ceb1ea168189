"""An architecture is one adapter class: defining it registers it, and every architecture-specific piece (blocks,
head slices, export tensors, tokenizer files) comes from it. GPT-Neo has no swapkl adapter; this test adds one
through the registry alone and checks the engine, head swaps, export and loading against the stock forward."""

from __future__ import annotations

import importlib
import pkgutil

import pytest
import torch
from torch import nn
from transformers import GPTNeoConfig, GPTNeoForCausalLM

import swapkl.adapters
from swapkl.adapters import ADAPTERS, Adapter, get_adapter, supported_architectures
from swapkl.adapters.base import BlockContext, Layout
from swapkl.errors import SwapKLError
from swapkl.export import engine_logits, export_state_dict
from swapkl.model.heads import head_swapped_block, unit_slices
from swapkl.model.loading import tokenizer_files

N_LAYERS = 4


@pytest.fixture
def registry():
    """Registrations made by a test are undone after it."""
    before = dict(ADAPTERS)
    yield ADAPTERS
    ADAPTERS.clear()
    ADAPTERS.update(before)


def _gpt_neo_adapter():
    class GPTNeoToyAdapter(Adapter):
        model_types = ("gpt_neo",)
        layout = Layout(backbone="transformer", embed="wte", norm="ln_f", attention="attn", blocks="h")
        position_encoding = "learned"
        tokenizer_files = ("toy.vocab",)
        exported = []

        @classmethod
        def head_slices(cls, config, unit, group, d):
            k = slice(unit * d, (unit + 1) * d)
            return [(f"attn.attention.{p}_proj.weight", 0, k) for p in "qkv"] + [
                ("attn.attention.out_proj.weight", 1, k)]

        @classmethod
        def export_block_tensors(cls, config, tensors, block, slot):
            cls.exported.append((block, slot))
            return tensors

        def prepare(self, input_ids, attention_mask):
            tokens = self.embed(input_ids)
            position_ids = torch.arange(input_ids.shape[1]).unsqueeze(0)
            masks = self.build_masks(tokens, attention_mask, position_ids)
            return self.backbone.drop(tokens + self.backbone.wpe(position_ids)), BlockContext(position_ids, None,
                                                                                              masks)

        def run_block(self, block, slot, h, ctx):
            return self.block_module(block)(h, attention_mask=ctx.masks["full_attention"], use_cache=False)[0]

    return GPTNeoToyAdapter


def _gpt_neo() -> GPTNeoForCausalLM:
    torch.manual_seed(0)
    cfg = GPTNeoConfig(num_layers=N_LAYERS, hidden_size=16, num_heads=2, vocab_size=50, max_position_embeddings=32,
                       attention_types=[[["global", "local"], N_LAYERS // 2]], window_size=4, initializer_range=0.3)
    return GPTNeoForCausalLM(cfg).eval()


@torch.no_grad()
def _stock_logits(model, order, ids):
    """The stock forward over a reordered block list (the same modules, no copies)."""
    blocks = list(model.transformer.h)
    model.transformer.h = nn.ModuleList([blocks[b] for b in order])
    try:
        return model(input_ids=ids).logits
    finally:
        model.transformer.h = nn.ModuleList(blocks)


def test_a_toy_adapter_added_through_the_registry_alone_drives_engine_heads_export_and_loading(registry, tmp_path):
    model = _gpt_neo()
    with pytest.raises(SwapKLError, match="'gpt_neo'"):
        get_adapter(model)
    toy = _gpt_neo_adapter()
    assert "gpt_neo" in supported_architectures() and isinstance(get_adapter(model), toy)

    ids = torch.randint(0, 50, (2, 12), generator=torch.Generator().manual_seed(1))
    for order in ([0, 1, 2, 3], [0, 2, 1, 3], [0, 1, 3], [3, 2, 1, 0]):
        want = _stock_logits(model, order, ids)
        torch.testing.assert_close(engine_logits(model, tuple(order), ids), want, rtol=1e-5, atol=1e-5)
    assert (engine_logits(model, (0, 2, 1, 3), ids) - engine_logits(model, (0, 1, 2, 3), ids)).abs().max() > 1e-2

    blocks = model.transformer.h
    swapped = head_swapped_block(blocks[0], blocks[1], model.config, 1)
    q = dict(swapped.named_parameters())["attn.attention.q_proj.weight"]
    assert torch.equal(q[8:], blocks[1].attn.attention.q_proj.weight[8:])
    assert torch.equal(q[:8], blocks[0].attn.attention.q_proj.weight[:8])
    assert [n for n, _, _ in unit_slices(model.config, 0)][-1] == "attn.attention.out_proj.weight"

    state = export_state_dict(model, blocks, (0, 2))
    assert toy.exported == [(0, 0), (2, 1)]
    assert torch.equal(state["transformer.h.1.attn.attention.k_proj.weight"], blocks[2].attn.attention.k_proj.weight)

    for name in ("toy.vocab", "tokenizer.json"):
        (tmp_path / name).write_text("x")
    assert tokenizer_files(str(tmp_path), "gpt_neo") == ["toy.vocab"]
    assert tokenizer_files(str(tmp_path), "llama") == ["tokenizer.json"]


def test_an_adapter_without_its_own_model_types_or_with_a_taken_one_fails_when_defined(registry):
    with pytest.raises(TypeError, match="names no model_types"):
        type("Forgotten", (Adapter,), {})
    with pytest.raises(TypeError, match="names no model_types"):
        type("Inherited", (ADAPTERS["llama"],), {})
    with pytest.raises(TypeError, match="'llama', already handled by swapkl.adapters.llama.LlamaAdapter"):
        type("Taken", (Adapter,), {"model_types": ("llama",)})

    class Shared(Adapter, register=False):  # a base for other adapters registers nothing
        pass

    assert Shared not in ADAPTERS.values() and "llama" in ADAPTERS


def test_every_adapter_module_is_discovered_and_registers_an_adapter():
    """No import list: each module of swapkl.adapters (but base) defines at least one registered adapter."""
    names = {m.name for m in pkgutil.iter_modules(swapkl.adapters.__path__)} - {"base"}
    assert len(names) >= 9
    registered = {cls.__module__.rsplit(".", 1)[1] for cls in ADAPTERS.values()}
    assert registered == names
    for name in names:
        assert importlib.import_module(f"swapkl.adapters.{name}").__name__ in {c.__module__ for c in ADAPTERS.values()}
