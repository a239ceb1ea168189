"""GPT-2: learned absolute position embeddings, pre-LayerNorm blocks laid out as ``transformer.h``.

Slot or block? -- decided per per-layer attribute, matching a reordered ``nn.ModuleList``:

* **learned position embeddings** (``wpe``) are added once to the token embeddings before slot
  0; no block sees them again, so they belong to neither slot nor block and every variant sees
  the same positions.
* ``attn.layer_idx`` and ``scale_attn_by_inverse_layer_idx``: with that flag set, attention
  scores are divided by ``layer_idx + 1`` of the *module* (transformers folds it into
  ``attn.scaling`` when the block is built); the scale travels with the block (block-bound). A
  block moved to another slot keeps the scale it was trained with, exactly as the stock forward
  over a reordered ``ModuleList`` does. (The paper's GPT-2 code re-numbers ``layer_idx`` by slot
  after deleting blocks, which leaves ``scaling`` untouched too; and with GPT-2's default flag
  ``False``, as in every released GPT-2 checkpoint, slot- and block-bound give identical
  numbers.) ``layer_idx`` is otherwise used only by the KV cache, which swapkl never uses.
* the causal mask is the same at every slot.
"""

from __future__ import annotations

import torch

from swapkl.adapters.base import Adapter, BlockContext, Layout


class GPT2Adapter(Adapter):
    model_types = ("gpt2",)
    layout = Layout(backbone="transformer", embed="wte", norm="ln_f", attention="attn", blocks="h")
    position_encoding = "learned"
    lora_projections = {"q": ("c_attn",), "k": ("c_attn",), "v": ("c_attn",), "o": ("attn.c_proj",)}
    lora_fan_in_fan_out = True  # Conv1D weights are [in, out]
    sublayer_prefixes = {"attention": ("ln_1.", "attn."), "mlp": ("ln_2.", "mlp.")}
    sublayer_outputs = {"attention": ("attn.c_proj.",), "mlp": ("mlp.c_proj.",)}

    def prepare(self, input_ids: torch.Tensor, attention_mask: torch.Tensor) -> tuple[torch.Tensor, BlockContext]:
        tokens = self.embed(input_ids)
        position_ids = torch.arange(input_ids.shape[1], device=input_ids.device).unsqueeze(0)
        masks = self.build_masks(tokens, attention_mask, position_ids)
        h0 = self.backbone.drop(tokens + self.backbone.wpe(position_ids))
        return h0, BlockContext(position_ids, None, masks)

    def run_block(self, block: int, slot: int, h: torch.Tensor, ctx: BlockContext) -> torch.Tensor:
        out = self.block_module(block)(h, None, ctx.masks["full_attention"], None, use_cache=False,
                                       position_ids=ctx.position_ids)
        return out[0] if isinstance(out, tuple) else out

    @classmethod
    def head_slices(cls, config, unit, group, d):
        """``c_attn`` is a Conv1D with weight ``[H, 3H]`` = ``[q | k | v]``: columns ``[u d, (u+1) d)`` of each
        third and of the bias; ``c_proj`` (weight ``[H, H]``, input rows) rows ``[u d, (u+1) d)``."""
        h = config.hidden_size
        out = []
        for third in range(3):
            cols = slice(third * h + unit * d, third * h + (unit + 1) * d)
            out += [("attn.c_attn.weight", 1, cols), ("attn.c_attn.bias", 0, cols)]
        return out + [("attn.c_proj.weight", 0, slice(unit * d, (unit + 1) * d))]

    @classmethod
    def export_block_tensors(cls, config, tensors: dict[str, torch.Tensor], block: int,
                             slot: int) -> dict[str, torch.Tensor]:
        """A saved checkpoint cannot say "this block keeps the layer_idx it was trained with": on loading,
        transformers gives the block at slot k the scale ``1 / (k + 1)``. With
        ``scale_attn_by_inverse_layer_idx`` set, the block-bound scale ``1 / (block + 1)`` is therefore
        folded into the query projection (the first ``n_embd`` columns of the Conv1D ``c_attn``, weight and
        bias) as the factor ``(slot + 1) / (block + 1)``, so the reloaded model computes what the engine
        measured. Without the flag (every released GPT-2) the tensors are returned unchanged.
        """
        if not getattr(config, "scale_attn_by_inverse_layer_idx", False) or block == slot:
            return tensors
        factor = (slot + 1) / (block + 1)
        d = config.n_embd
        out = dict(tensors)
        for key in ("attn.c_attn.weight", "attn.c_attn.bias"):
            t = tensors[key].clone()
            t[..., :d] = (t[..., :d].double() * factor).to(t.dtype)
            out[key] = t
        return out
