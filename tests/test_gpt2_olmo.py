"""GPT-2 and OLMo adapters: registration and GPT-2's slot-or-block decision for the per-layer
attention scale (the engine-vs-naive-reference checks for every architecture are in test_engine)."""

from __future__ import annotations

import torch

import naive_reference as ref
from swapkl.adapters import get_adapter, supported_architectures
from swapkl.model.engine import ProbeEngine
from swapkl.probes.protocols.interchange import interchange
from tiny_models import random_tokens, tiny_model

N_LAYERS = 5


def test_new_architectures_are_registered():
    assert {"gpt2", "olmo", "olmo2"} <= set(supported_architectures())
    for arch in ("gpt2", "olmo", "olmo2"):
        a = get_adapter(tiny_model(arch, n_layers=N_LAYERS))
        assert a.n_layers == N_LAYERS and a.vocab_size == 97 and a.max_positions == 64


def test_gpt2_inverse_layer_scale_is_block_bound():
    model = tiny_model("gpt2", n_layers=N_LAYERS)
    assert model.config.scale_attn_by_inverse_layer_idx
    ids = random_tokens(97, 2, 12, seed=8)
    mask = torch.ones_like(ids)
    v = interchange(0, 3, N_LAYERS)
    eng = ProbeEngine(model)
    kl, _ = eng.token_stats(eng.base_pass(ids, mask), v)
    base = ref.logits(model, ids, mask)
    block_bound = ref.kl_per_position(base, ref.logits(model, ids, mask, list(v.order))).flatten()
    # float32 forward on both sides, KL in float64 from logits; same bound as tests/test_engine.py
    torch.testing.assert_close(kl, block_bound, rtol=1e-5, atol=1e-7)
    # the alternative (each slot divides by its own slot index + 1) gives other numbers, so the choice matters
    blocks = ref.block_list(model)
    saved = [b.attn.scaling for b in blocks]
    head_dim = model.config.n_embd // model.config.n_head
    try:
        with ref.reordered(model, list(v.order)):
            for slot, b in enumerate(ref.block_list(model)):
                b.attn.scaling = head_dim ** -0.5 / (slot + 1)
            with torch.inference_mode():
                slot_logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
    finally:
        for b, s in zip(blocks, saved):
            b.attn.scaling = s
    slot_bound = ref.kl_per_position(base, slot_logits).flatten()
    assert (slot_bound - block_bound).abs().max() > 1e-3
