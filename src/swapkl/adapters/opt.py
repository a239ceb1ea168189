"""OPT: learned absolute positions (offset by 2), decoder-only, blocks laid out as ``model.decoder.layers``.

Slot or block? -- decided per per-layer attribute, matching a reordered ``nn.ModuleList``:

* the **learned position embeddings** are added once to the (projected) token embeddings before
  slot 0; positions are counted over the attention mask's ones (a padded position gets id -1, as
  in the stock forward). No block sees them again, so every variant sees the same positions.
* ``do_layer_norm_before`` is one config value for every block (OPT-350M is post-LN, the other
  sizes pre-LN), so a moved block keeps the same norm placement.
* after the last slot the stock forward applies ``final_layer_norm`` (pre-LN sizes only) and then
  ``project_out`` (where ``word_embed_proj_dim`` differs from the hidden size, as in OPT-350M);
  together they are this adapter's final norm. ``project_in`` runs before slot 0.
* ``self_attn.layer_idx`` is read only by the KV cache, which swapkl never uses.
"""

from __future__ import annotations

import torch
from torch import nn

from swapkl.adapters.base import Adapter, BlockContext, Layout


class OPTAdapter(Adapter):
    model_types = ("opt",)
    layout = Layout(backbone="model", embed="embed_tokens", norm="final_layer_norm", attention="self_attn")
    position_encoding = "learned"
    out_projection = "out_proj"  # no GQA: the default head slices with group 1
    lora_projections = {}  # LoRA targets name its modules
    sublayer_prefixes = {"attention": ("self_attn_layer_norm.", "self_attn."),
                         "mlp": ("final_layer_norm.", "fc1.", "fc2.")}
    sublayer_outputs = {"attention": ("self_attn.out_proj.",), "mlp": ("fc2.",)}

    @classmethod
    def sublayer_refusal(cls, config):
        if not getattr(config, "do_layer_norm_before", True):
            return ("its blocks are post-LN (do_layer_norm_before is false, as in OPT-350M): each sublayer's norm "
                    "acts on the residual stream after the sublayer is added, so a sublayer cannot be skipped or "
                    "moved with its norm alone")
        return None

    def __init__(self, model: nn.Module):
        super().__init__(model)
        self.backbone = self.backbone.decoder
        tail = [m for m in (self.backbone.final_layer_norm, self.backbone.project_out) if m is not None]
        # a container of the model's own modules (no copies), run after the last slot
        self._final = nn.Sequential(*tail) if tail else nn.Identity()

    @property
    def final_norm(self) -> nn.Module:
        return self._final

    def build_masks(self, h0, attention_mask, position_ids):
        from transformers.masking_utils import create_causal_mask

        return {"full_attention": create_causal_mask(config=self.config, inputs_embeds=h0,
                                                     attention_mask=attention_mask, past_key_values=None)}

    def prepare(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, BlockContext]:
        tokens = self.embed(input_ids)
        position_ids = (torch.cumsum(attention_mask, dim=1) * attention_mask - 1).long()
        masks = self.build_masks(tokens, attention_mask, position_ids)
        positions = self.backbone.embed_positions(attention_mask, 0, position_ids=position_ids)
        if self.backbone.project_in is not None:
            tokens = self.backbone.project_in(tokens)
        return tokens + positions, BlockContext(position_ids, None, masks)

    def run_block(self, block: int, slot: int, h: torch.Tensor, ctx: BlockContext) -> torch.Tensor:
        out = self.block_module(block)(h, attention_mask=ctx.masks["full_attention"], position_ids=ctx.position_ids,
                                       use_cache=False)
        return out[0] if isinstance(out, tuple) else out
