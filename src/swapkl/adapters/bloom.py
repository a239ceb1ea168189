"""BLOOM: ALiBi position bias, an embedding LayerNorm, blocks laid out as ``transformer.h``.

Slot or block? -- decided per per-layer attribute, matching a reordered ``nn.ModuleList``:

* the **ALiBi bias** is built once per batch at model level from the attention mask (per-head
  slopes times the key's position, counted over the mask's ones) and handed to every block
  unchanged, so it belongs to neither slot nor block: a moved block sees the same bias it would
  see anywhere in the stack. There are no position embeddings in the residual stream.
* ``word_embeddings_layernorm`` runs once before slot 0, ``ln_f`` after the last slot.
* ``self_attention.layer_idx`` is read only by the KV cache, which swapkl never uses.
* the causal mask is the same at every slot.
"""

from __future__ import annotations

import torch

from swapkl.adapters.base import Adapter, BlockContext, Layout, fused_head_slices


class BloomAdapter(Adapter):
    model_types = ("bloom",)
    layout = Layout(backbone="transformer", embed="word_embeddings", norm="ln_f", attention="self_attention",
                    blocks="h")
    position_encoding = "alibi"
    lora_projections = {}  # LoRA targets name its modules
    sublayer_prefixes = {"attention": ("input_layernorm.", "self_attention."),
                         "mlp": ("post_attention_layernorm.", "mlp.")}
    sublayer_outputs = {"attention": ("self_attention.dense.",), "mlp": ("mlp.dense_4h_to_h.",)}

    @classmethod
    def sublayer_refusal(cls, config):
        if getattr(config, "apply_residual_connection_post_layernorm", False):
            return ("apply_residual_connection_post_layernorm is set: the residual each sublayer adds to is its "
                    "norm's output, so skipping a sublayer does not pass the stream through")
        return None

    @classmethod
    def head_slices(cls, config, unit, group, d):
        return fused_head_slices(cls.layout.attention, unit, d)

    def build_masks(self, h0, attention_mask, position_ids):
        from transformers.masking_utils import create_causal_mask

        return {"full_attention": create_causal_mask(config=self.config, inputs_embeds=h0,
                                                     attention_mask=attention_mask, past_key_values=None)}

    def prepare(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, BlockContext]:
        tokens = self.embed(input_ids)
        h0 = self.backbone.word_embeddings_layernorm(tokens)
        alibi = self.backbone.build_alibi_tensor(attention_mask, self.backbone.num_heads, dtype=h0.dtype)
        position_ids = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        masks = self.build_masks(tokens, attention_mask, position_ids)
        # the ALiBi bias travels where rotary models keep (cos, sin): the per-batch position input of every block
        return h0, BlockContext(position_ids, alibi, masks)

    def run_block(self, block: int, slot: int, h: torch.Tensor, ctx: BlockContext) -> torch.Tensor:
        out = self.block_module(block)(h, alibi=ctx.position_embeddings, attention_mask=ctx.masks["full_attention"],
                                       use_cache=False)
        return out[0] if isinstance(out, tuple) else out
