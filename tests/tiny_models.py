"""Tiny random models of every supported architecture, built in the tests (no hub)."""

from __future__ import annotations

import torch
from transformers import (
    BloomConfig,
    BloomForCausalLM,
    Gemma3ForCausalLM,
    Gemma3TextConfig,
    GPT2Config,
    GPT2LMHeadModel,
    GPTNeoXConfig,
    GPTNeoXForCausalLM,
    LlamaConfig,
    LlamaForCausalLM,
    MistralConfig,
    MistralForCausalLM,
    Olmo2Config,
    Olmo2ForCausalLM,
    OlmoConfig,
    OlmoForCausalLM,
    OPTConfig,
    OPTForCausalLM,
    Qwen3Config,
    Qwen3ForCausalLM,
)

ARCHS = ("gpt_neox", "llama", "qwen3", "mistral", "gpt2", "olmo", "olmo2", "bloom", "opt", "gemma3_text")


def tiny_model(arch: str, n_layers: int = 5, vocab: int = 97, hidden: int = 32, seed: int = 0, init: float = 0.3):
    """A random float32 causal LM; ``init`` is large so that swaps change the output visibly."""
    torch.manual_seed(seed)
    common = dict(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=n_layers, num_attention_heads=4,
                  intermediate_size=2 * hidden, max_position_embeddings=64, initializer_range=init)
    if arch == "gpt_neox":
        cfg = GPTNeoXConfig(rotary_pct=0.25, use_parallel_residual=True, tie_word_embeddings=False, **common)
        model = GPTNeoXForCausalLM(cfg)
    elif arch == "llama":
        cfg = LlamaConfig(num_key_value_heads=2, **common)
        model = LlamaForCausalLM(cfg)
    elif arch == "qwen3":
        # sliding attention on the upper layers exercises per-slot mask selection
        cfg = Qwen3Config(num_key_value_heads=2, head_dim=8, use_sliding_window=True, sliding_window=6,
                          max_window_layers=2, **common)
        model = Qwen3ForCausalLM(cfg)
    elif arch == "mistral":
        cfg = MistralConfig(num_key_value_heads=2, sliding_window=6, **common)
        model = MistralForCausalLM(cfg)
    elif arch == "gpt2":
        # scale_attn_by_inverse_layer_idx makes the block-bound layer_idx visible in every engine test
        cfg = GPT2Config(vocab_size=vocab, n_embd=hidden, n_layer=n_layers, n_head=4, n_inner=2 * hidden,
                         n_positions=64, initializer_range=init, scale_attn_by_inverse_layer_idx=True)
        model = GPT2LMHeadModel(cfg)
    elif arch == "olmo":
        cfg = OlmoConfig(num_key_value_heads=2, clip_qkv=2.0, **common)
        model = OlmoForCausalLM(cfg)
    elif arch == "olmo2":
        cfg = Olmo2Config(num_key_value_heads=2, **common)
        model = Olmo2ForCausalLM(cfg)
    elif arch == "bloom":
        cfg = BloomConfig(vocab_size=vocab, hidden_size=hidden, n_layer=n_layers, n_head=4, initializer_range=init)
        model = BloomForCausalLM(cfg)
    elif arch == "opt":
        # OPT-350M's layout: post-LN blocks (no final LayerNorm) and word embeddings projected in and out
        cfg = OPTConfig(vocab_size=vocab, hidden_size=hidden, num_hidden_layers=n_layers, num_attention_heads=4,
                        ffn_dim=2 * hidden, max_position_embeddings=64, do_layer_norm_before=False,
                        word_embed_proj_dim=hidden // 2, init_std=init, pad_token_id=1)
        model = OPTForCausalLM(cfg)
    elif arch == "gemma3_text":
        # both layer types in every stack of 2+ blocks (slot 1 full, slot 0 sliding), a window shorter than the
        # test sequences so the two masks differ, and distinct rope bases per type so a wrong table shows; no
        # padding_idx (Gemma's default pad id 0 would zero token 0's embedding, and random tokens include 0)
        types = ["full_attention" if k % 3 == 1 else "sliding_attention" for k in range(n_layers)]
        rope = {t: {"rope_type": "default", "rope_theta": theta}
                for t, theta in (("sliding_attention", 100.0), ("full_attention", 10000.0))}
        cfg = Gemma3TextConfig(num_key_value_heads=2, head_dim=8, sliding_window=6, layer_types=types,
                               rope_parameters=rope, query_pre_attn_scalar=16, pad_token_id=None,
                               **common)
        model = Gemma3ForCausalLM(cfg)
    else:
        raise ValueError(arch)
    # default init leaves norms at 1 and biases at 0; perturb them so every parameter matters
    with torch.no_grad():
        for name, p in model.named_parameters():
            if p.ndim == 1:
                p.add_(0.1 * torch.randn_like(p))
    return model.eval()


def random_tokens(vocab: int, n_seqs: int, seq_len: int, seed: int = 1) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    return torch.randint(0, vocab, (n_seqs, seq_len), generator=g)
