"""Configurations of the tiny demo models: one per supported architecture family.

* ``gpt_neox``: Pythia-like (parallel residual, rotary over 25% of each head, LayerNorm, GELU MLP,
  biases, untied ``embed_out``);
* ``llama``: RMSNorm, SwiGLU MLP, full rotary, grouped-query attention;
* ``qwen3``: as llama plus the per-head q/k RMSNorms built into Qwen3 attention.

All three share depth, width and heads; the SwiGLU families get an intermediate size of 3/4 of the
GELU one, so their MLPs hold the same number of weights (3 matrices instead of 2).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

from swapkl.errors import SwapKLError

DEMO_ARCHS = ("gpt_neox", "llama", "qwen3")


@dataclass(frozen=True)
class DemoSize:
    """Shape of a demo model (shared by every architecture)."""

    num_layers: int = 6
    hidden_size: int = 128
    num_heads: int = 4
    num_kv_heads: int = 2  # llama/qwen3 only; gpt_neox has one KV head per query head
    intermediate_size: int = 512  # GELU MLP width; SwiGLU families use 3/4 of it
    max_position_embeddings: int = 256

    def validate(self) -> None:
        for name, value in asdict(self).items():
            if not isinstance(value, int) or value < 1:
                raise SwapKLError(f"demo model {name}={value!r} must be a positive integer")
        if self.hidden_size % self.num_heads:
            raise SwapKLError(
                f"demo model hidden_size={self.hidden_size} is not divisible by num_heads={self.num_heads}")
        if self.num_heads % self.num_kv_heads:
            raise SwapKLError(
                f"demo model num_heads={self.num_heads} is not divisible by num_kv_heads={self.num_kv_heads}")
        if (self.hidden_size // self.num_heads) % 2:
            raise SwapKLError(f"demo model head dimension {self.hidden_size // self.num_heads} must be even")

    @property
    def head_dim(self) -> int:
        return self.hidden_size // self.num_heads

    @property
    def swiglu_intermediate_size(self) -> int:
        return max(1, (3 * self.intermediate_size) // 4)


def demo_config(arch: str, size: DemoSize, *, vocab_size: int, eos_token_id: int, pad_token_id: int):
    """The transformers config of a demo model of family ``arch``."""
    size.validate()
    common = dict(
        vocab_size=vocab_size,
        hidden_size=size.hidden_size,
        num_hidden_layers=size.num_layers,
        num_attention_heads=size.num_heads,
        max_position_embeddings=size.max_position_embeddings,
        initializer_range=0.02,
        tie_word_embeddings=False,
        bos_token_id=eos_token_id,
        eos_token_id=eos_token_id,
        pad_token_id=pad_token_id,
        use_cache=False,
    )
    if arch == "gpt_neox":
        from transformers import GPTNeoXConfig

        return GPTNeoXConfig(
            **common,
            intermediate_size=size.intermediate_size,
            hidden_act="gelu",
            use_parallel_residual=True,
            rope_parameters={"rope_type": "default", "rope_theta": 10000.0, "partial_rotary_factor": 0.25},
            layer_norm_eps=1e-5,
            attention_bias=True,
            attention_dropout=0.0,
            hidden_dropout=0.0,
        )
    swiglu = dict(
        num_key_value_heads=size.num_kv_heads,
        intermediate_size=size.swiglu_intermediate_size,
        head_dim=size.head_dim,
        hidden_act="silu",
        rms_norm_eps=1e-6,
        rope_parameters={"rope_type": "default", "rope_theta": 10000.0},
        attention_bias=False,
        attention_dropout=0.0,
    )
    if arch == "llama":
        from transformers import LlamaConfig

        return LlamaConfig(**common, **swiglu, mlp_bias=False)
    if arch == "qwen3":
        from transformers import Qwen3Config

        return Qwen3Config(**common, **swiglu, use_sliding_window=False)
    raise SwapKLError(f"unknown demo architecture {arch!r} (expected one of {', '.join(DEMO_ARCHS)})")


def demo_model_class(arch: str):
    """The causal-LM class of family ``arch``."""
    if arch == "gpt_neox":
        from transformers import GPTNeoXForCausalLM

        return GPTNeoXForCausalLM
    if arch == "llama":
        from transformers import LlamaForCausalLM

        return LlamaForCausalLM
    if arch == "qwen3":
        from transformers import Qwen3ForCausalLM

        return Qwen3ForCausalLM
    raise SwapKLError(f"unknown demo architecture {arch!r} (expected one of {', '.join(DEMO_ARCHS)})")


# ------------------------------------------------------------------ the position-encoding ablation
#
# ``arch: matched``: three stock transformers families built to the same shape so that they differ only in
# how they encode position. Each is an architecture swapkl's adapters run exactly:
#
# * ``rope``: GPT-NeoX with sequential residual (``use_parallel_residual=False``) and rotary on every head
#   dimension (``partial_rotary_factor=1``);
# * ``learned``: GPT-2 (a learned position table added to the token embeddings before block 0);
# * ``alibi``: BLOOM (per-head linear attention biases).
#
# Shared by all three: pre-LayerNorm blocks (eps 1e-5) with biases everywhere, a fused QKV projection, a
# 4x-wide MLP with the tanh-approximated GELU, a final LayerNorm, the unembedding tied to the embedding, no
# dropout, and one initialisation rule (:func:`matched_init`). The blocks hold exactly the same parameters.
# What the architectures do not let us match: BLOOM always applies a LayerNorm to the embeddings before
# block 0 (2 x hidden parameters); GPT-2's position table adds max_position_embeddings x hidden; BLOOM fixes
# the MLP width at 4 x hidden (so ``intermediate_size`` must be that for every encoding).

MATCHED_ARCH = "matched"
#: position encoding -> the transformers family that carries it
PE_FAMILIES = {"rope": "gpt_neox", "learned": "gpt2", "alibi": "bloom"}


def matched_config(position_encoding: str, size: DemoSize, *, vocab_size: int, eos_token_id: int,
                   pad_token_id: int):
    """The transformers config of an architecture-matched ablation model with ``position_encoding``."""
    size.validate()
    if position_encoding not in PE_FAMILIES:
        raise SwapKLError(f"unknown position encoding {position_encoding!r} (expected one of "
                          f"{', '.join(PE_FAMILIES)})")
    if size.intermediate_size != 4 * size.hidden_size:
        raise SwapKLError(f"matched models need intermediate_size = 4 x hidden_size = {4 * size.hidden_size} "
                          f"(BLOOM fixes its MLP width), got {size.intermediate_size}")
    tokens = dict(vocab_size=vocab_size, bos_token_id=eos_token_id, eos_token_id=eos_token_id,
                  pad_token_id=pad_token_id, use_cache=False, tie_word_embeddings=True, initializer_range=0.02)
    if position_encoding == "rope":
        from transformers import GPTNeoXConfig

        return GPTNeoXConfig(**tokens, hidden_size=size.hidden_size, num_hidden_layers=size.num_layers,
                             num_attention_heads=size.num_heads, intermediate_size=size.intermediate_size,
                             max_position_embeddings=size.max_position_embeddings, hidden_act="gelu_new",
                             use_parallel_residual=False, layer_norm_eps=1e-5, attention_bias=True,
                             rope_parameters={"rope_type": "default", "rope_theta": 10000.0,
                                              "partial_rotary_factor": 1.0},
                             attention_dropout=0.0, hidden_dropout=0.0)
    if position_encoding == "learned":
        from transformers import GPT2Config

        return GPT2Config(**tokens, n_embd=size.hidden_size, n_layer=size.num_layers, n_head=size.num_heads,
                          n_inner=size.intermediate_size, n_positions=size.max_position_embeddings,
                          activation_function="gelu_new", layer_norm_epsilon=1e-5, resid_pdrop=0.0,
                          embd_pdrop=0.0, attn_pdrop=0.0)
    from transformers import BloomConfig

    return BloomConfig(**tokens, hidden_size=size.hidden_size, n_layer=size.num_layers, n_head=size.num_heads,
                       layer_norm_epsilon=1e-5, hidden_dropout=0.0, attention_dropout=0.0,
                       apply_residual_connection_post_layernorm=False)


def matched_init(model, seed: int, std: float = 0.02) -> None:
    """One initialisation for every family (each family's own differs, e.g. GPT-2 scales its residual
    projections): every matrix N(0, std), every bias 0, every LayerNorm weight 1, drawn in parameter order from
    a generator seeded with ``seed``. The token embedding comes first in all three families, so models of one
    seed start from the same embedding."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():  # a tied unembedding appears once
            if p.ndim >= 2:
                p.normal_(0.0, std, generator=generator)
            elif name.endswith("bias"):
                p.zero_()
            else:
                p.fill_(1.0)


def matched_model(config, seed: int):
    """A causal LM of a :func:`matched_config`, initialised by :func:`matched_init` from ``seed``."""
    from transformers import BloomForCausalLM, GPT2LMHeadModel, GPTNeoXForCausalLM

    classes = {"gpt_neox": GPTNeoXForCausalLM, "gpt2": GPT2LMHeadModel, "bloom": BloomForCausalLM}
    model = classes[config.model_type](config)
    matched_init(model, seed, config.initializer_range)
    return model
