"""What every architecture adapter exposes: embed -> blocks -> final norm -> unembedding.

An adapter never copies weights. It reproduces exactly what the stock transformers
forward does between those stages (rotary embeddings computed at model level, the
attention mask for each slot), so a variant can resume from the residual stream
cached at any slot.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch
from torch import nn

from swapkl.errors import SwapKLError
from swapkl.registry import Registry

#: ``config.model_type`` -> adapter class; every :class:`Adapter` subclass enters itself when its module is imported
ADAPTERS: Registry[type["Adapter"]] = Registry("architecture")

#: a checkpoint's tokenizer files (hashed into ``tokenizer_sha256`` when loaded, copied by ``swapkl export``):
#: the default of :attr:`Adapter.tokenizer_files`
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json", "added_tokens.json",
                   "vocab.json", "merges.txt", "vocab.txt", "tokenizer.model", "spiece.model", "chat_template.jinja")


@dataclass
class BlockContext:
    """Per-batch tensors every block needs besides the residual stream."""

    position_ids: torch.Tensor
    #: ``(cos, sin)``, or per layer type ``{type: (cos, sin)}`` (Gemma-3), or an adapter's own (BLOOM's ALiBi bias)
    position_embeddings: tuple[torch.Tensor, torch.Tensor] | dict[str, tuple[torch.Tensor, torch.Tensor]]
    masks: dict[str, torch.Tensor | None] = field(default_factory=dict)


@dataclass(frozen=True)
class Layout:
    """Attribute names of a model's parts: on the causal-LM wrapper (``backbone``), on the backbone
    (``embed``, ``norm``, the block list ``blocks``) and on a block (``attention``, the module that returns
    ``(output, probabilities)``)."""

    backbone: str = "model"
    embed: str = "embed_tokens"
    norm: str = "norm"
    attention: str = "self_attn"
    blocks: str = "layers"


def fused_head_slices(attention: str, unit: int, d: int) -> list[tuple[str, int, slice]]:
    """Head unit ``unit`` of a fused ``query_key_value`` laid out per head as ``[q_h; k_h; v_h]`` (GPT-NeoX,
    BLOOM): rows ``[3 u d, 3 (u+1) d)`` and bias; ``dense`` columns ``[u d, (u+1) d)``."""
    rows = slice(3 * unit * d, 3 * (unit + 1) * d)
    return [(f"{attention}.query_key_value.weight", 0, rows), (f"{attention}.query_key_value.bias", 0, rows),
            (f"{attention}.dense.weight", 1, slice(unit * d, (unit + 1) * d))]


class Adapter:
    """Base adapter for decoder-only models laid out as ``<backbone>.layers``.

    Defining a subclass registers it for its :attr:`model_types` (see :data:`ADAPTERS`); a subclass that names
    no model type, or one already taken, is an error when its module is imported. A base meant only to be
    derived from, or a variant built by hand (a test), says so with ``class X(Adapter, register=False)``.
    """

    #: ``config.model_type`` values handled by this adapter.
    model_types: tuple[str, ...] = ()
    layout = Layout()
    #: how the architecture encodes positions: "rope", "learned" (absolute table) or "alibi"
    position_encoding = "rope"
    #: the checkpoint files that make up its tokenizer (hashed when loaded, copied on export)
    tokenizer_files: tuple[str, ...] = TOKENIZER_FILES
    #: the attention output projection (the default head slices: ``<attention>.<out_projection>.weight``)
    out_projection = "o_proj"
    #: the parameter-name prefixes of a block's two sublayers, each with the norms around it
    #: (:mod:`swapkl.model.sublayers`): what a sublayer replacement or interchange takes from the donor block.
    #: Every parameter of a block belongs to exactly one of the two.
    sublayer_prefixes: dict[str, tuple[str, ...]] = {"attention": ("input_layernorm.", "self_attn."),
                                                     "mlp": ("post_attention_layernorm.", "mlp.")}
    #: the parameters (name prefixes) whose zeros remove a sublayer's contribution to the residual stream: its
    #: output projection (weight and bias); a norm after it maps zeros to zeros (RMSNorm)
    sublayer_outputs: dict[str, tuple[str, ...]] = {"attention": ("self_attn.o_proj.",), "mlp": ("mlp.down_proj.",)}
    #: the modules that the LoRA targets q, k, v and o name (module-name suffixes, as PEFT matches them); an
    #: architecture without aliases ({}) takes module names only
    lora_projections: dict[str, tuple[str, ...]] = {"q": ("q_proj",), "k": ("k_proj",), "v": ("v_proj",),
                                                    "o": ("o_proj",)}
    #: whether the projections store their weight transposed (Conv1D), which PEFT's LoRA must be told
    lora_fan_in_fan_out = False

    def __init_subclass__(cls, register: bool = True, **kwargs):
        super().__init_subclass__(**kwargs)
        if not register:
            return
        if not cls.model_types or "model_types" not in cls.__dict__:
            raise TypeError(f"adapter {cls.__module__}.{cls.__qualname__} names no model_types of its own: set "
                            "model_types (the config.model_type values it handles), or derive it with "
                            "register=False")
        for t in cls.model_types:
            if t in ADAPTERS and ADAPTERS[t] is not cls:
                raise TypeError(f"adapter {cls.__module__}.{cls.__qualname__} claims model_type {t!r}, already "
                                f"handled by {ADAPTERS[t].__module__}.{ADAPTERS[t].__qualname__}")
        for t in cls.model_types:
            ADAPTERS.add(t, cls)

    # -- architecture knowledge used without a loaded model ----------------
    @classmethod
    def sublayer_refusal(cls, config) -> str | None:
        """Why the sublayers of this checkpoint's blocks cannot be moved or skipped one at a time (None: they
        can). The default architecture adds each sublayer's output to the residual stream it read."""
        return None

    @classmethod
    def head_slices(cls, config, unit: int, group: int, d: int) -> list[tuple[str, int, slice]]:
        """``(parameter name in the block, dimension, index range)`` of head unit ``unit``: one key/value head and
        the ``group`` query heads reading it, head dim ``d`` (see :mod:`swapkl.model.heads`). The default is the
        separate ``q_proj``/``k_proj``/``v_proj`` layout (weights and biases where present) with the output
        projection's columns: q rows ``[u g d, (u+1) g d)``, k and v rows ``[u d, (u+1) d)``."""
        a = cls.layout.attention
        q = slice(unit * group * d, (unit + 1) * group * d)
        k = slice(unit * d, (unit + 1) * d)
        out = [(f"{a}.{p}_proj.{w}", 0, s) for p, s in (("q", q), ("k", k), ("v", k)) for w in ("weight", "bias")]
        return out + [(f"{a}.{cls.out_projection}.weight", 1, q)]

    @classmethod
    def export_block_tensors(cls, config, tensors: dict[str, torch.Tensor], block: int,
                             slot: int) -> dict[str, torch.Tensor]:
        """Tensors of block ``block`` as saved at slot ``slot`` of an exported checkpoint (keys relative to the
        block). By default unchanged: nothing a block computes depends on the slot it is saved at."""
        return tensors

    def __init__(self, model: nn.Module):
        self.model = model
        self.config = model.config
        self.backbone = getattr(model, self.layout.backbone)
        #: blocks built outside the model (averaged blocks), keyed by negative block ids
        self.extra_blocks: dict[int, nn.Module] = {}
        #: the RoPE counterfactual: every rotation angle zero (cos = 1, sin = 0), see :meth:`disable_rope`
        self.rope_off = False

    def disable_rope(self) -> None:
        """Run every block with rotation angle zero at every position (cos = 1, sin = 0): rotary position
        information is removed while every weight stays. Only for RoPE architectures."""
        if self.position_encoding != "rope":
            raise SwapKLError(f"rope off: architecture {self.config.model_type!r} has no rotary embeddings "
                              f"(its positions are {self.position_encoding})")
        self.rope_off = True

    # -- structure -------------------------------------------------------
    @property
    def blocks(self) -> nn.ModuleList:
        return getattr(self.backbone, self.layout.blocks)

    @property
    def n_layers(self) -> int:
        return len(self.blocks)

    @property
    def final_norm(self) -> nn.Module:
        return getattr(self.backbone, self.layout.norm)

    @property
    def head(self) -> nn.Linear:
        return self.model.get_output_embeddings()

    @property
    def max_positions(self) -> int | None:
        return getattr(self.config, "max_position_embeddings", None)

    @property
    def vocab_size(self) -> int:
        return int(self.head.weight.shape[0])

    # -- computation -----------------------------------------------------
    def embed(self, input_ids: torch.Tensor) -> torch.Tensor:
        return getattr(self.backbone, self.layout.embed)(input_ids)

    def mask_kind(self, slot: int) -> str:
        """Which attention mask the stock forward hands to the block at ``slot``."""
        return "full_attention"

    def mask_inputs(self, h0: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor) -> dict:
        """Keyword arguments of transformers' mask builders for one forward without a cache."""
        return dict(config=self.config, inputs_embeds=h0, attention_mask=attention_mask, past_key_values=None,
                    position_ids=position_ids)

    def build_masks(self, h0: torch.Tensor, attention_mask: torch.Tensor, position_ids: torch.Tensor):
        from transformers.masking_utils import create_causal_mask

        return {"full_attention": create_causal_mask(**self.mask_inputs(h0, attention_mask, position_ids))}

    def prepare(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, BlockContext]:
        """Embeddings entering slot 0 and the context shared by all blocks."""
        h0 = self.embed(input_ids)
        position_ids = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        masks = self.build_masks(h0, attention_mask, position_ids)
        h0 = self.embed_dropout(h0)
        return h0, BlockContext(position_ids, self.rotary_embeddings(h0, position_ids), masks)

    def rotary_embeddings(self, h0: torch.Tensor, position_ids: torch.Tensor):
        """The position input every block receives, computed once at model level as the stock forward does:
        ``(cos, sin)`` of the model's rotary module (an architecture with one rotary table per layer type returns
        them keyed by type, see :mod:`swapkl.adapters.gemma3`)."""
        return self.rotation(self.backbone.rotary_emb(h0, position_ids=position_ids))

    def rotation(self, cos_sin: tuple[torch.Tensor, torch.Tensor]) -> tuple[torch.Tensor, torch.Tensor]:
        """``cos_sin`` as the blocks receive it: unchanged, or the identity rotation (cos = 1, sin = 0) under
        :meth:`disable_rope`."""
        if not self.rope_off:
            return cos_sin
        cos, sin = cos_sin
        return torch.ones_like(cos), torch.zeros_like(sin)

    def embed_dropout(self, h: torch.Tensor) -> torch.Tensor:
        return h

    def block_module(self, block: int) -> nn.Module:
        """The module of block ``block``: a block of the model, or a registered extra block (id < 0)."""
        if block >= 0:
            return self.blocks[block]
        if block not in self.extra_blocks:
            raise KeyError(f"no extra block {block} is registered")
        return self.extra_blocks[block]

    def run_block(self, block: int, slot: int, h: torch.Tensor, ctx: BlockContext) -> torch.Tensor:
        """Run block ``block``'s weights at position ``slot`` of the stack."""
        out = self.block_module(block)(
            h,
            attention_mask=ctx.masks[self.mask_kind(slot)],
            position_ids=ctx.position_ids,
            position_embeddings=ctx.position_embeddings,
            use_cache=False,
        )
        return out[0] if isinstance(out, tuple) else out

    def run_order(self, order, start: int, h: torch.Tensor, ctx: BlockContext) -> torch.Tensor:
        """Run ``order[start:]`` from the residual stream ``h`` entering slot ``start``."""
        for slot in range(start, len(order)):
            h = self.run_block(order[slot], slot, h, ctx)
        return h
