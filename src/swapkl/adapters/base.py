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


@dataclass
class BlockContext:
    """Per-batch tensors every block needs besides the residual stream."""

    position_ids: torch.Tensor
    position_embeddings: tuple[torch.Tensor, torch.Tensor]
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


class Adapter:
    """Base adapter for decoder-only models laid out as ``<backbone>.layers``."""

    #: ``config.model_type`` values handled by this adapter.
    model_types: tuple[str, ...] = ()
    layout = Layout()
    #: how the architecture encodes positions: "rope", "learned" (absolute table) or "alibi"
    position_encoding = "rope"

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
        position_embeddings = self.backbone.rotary_emb(h0, position_ids=position_ids)
        if self.rope_off:
            cos, sin = position_embeddings
            position_embeddings = (torch.ones_like(cos), torch.zeros_like(sin))
        return h0, BlockContext(position_ids, position_embeddings, masks)

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
