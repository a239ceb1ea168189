"""The RoPE counterfactual (``rope: off``): every rotation angle zero, against the stock forward with its
rotary-embedding module patched to return the identity rotation (cos = 1, sin = 0).

Tolerance: the same float32 modules on both sides, as in tests/test_engine.py (1e-5 relative per sequence)."""

from __future__ import annotations

from contextlib import contextmanager

import numpy as np
import pyarrow.parquet as pq
import pytest
import torch

import naive_reference as ref
from swapkl.tables import provenance
from swapkl.model.engine import ProbeEngine
from swapkl.errors import SwapKLError
from swapkl.probes.protocols.interchange import interchange
from swapkl.probes.protocols.replacement import replacement
from test_data import word_tokenizer
from test_probe_cli import assert_clean_failure, run_cli
from tiny_models import ARCHS, random_tokens, tiny_model

L, VOCAB, RTOL = 4, 97, 1e-5
ROTARY = [a for a in ARCHS if a not in ("gpt2", "bloom", "opt")]


@contextmanager
def identity_rotation(model):
    """The stock model with its rotary module returning cos = 1, sin = 0 at every position."""
    rotary = model.base_model.rotary_emb
    stock = rotary.forward

    def forward(*args, **kwargs):
        cos, sin = stock(*args, **kwargs)
        return torch.ones_like(cos), torch.zeros_like(sin)

    rotary.forward = forward
    try:
        yield model
    finally:
        del rotary.forward


def _batch():
    ids = random_tokens(VOCAB, 3, 16, seed=5)
    mask = torch.ones_like(ids)
    mask[2, 9:] = 0
    return ids, mask


@pytest.mark.parametrize("arch", ROTARY)
def test_rope_off_matches_stock_forward_with_identity_rotation(arch):
    model = tiny_model(arch, n_layers=L, vocab=VOCAB)
    ids, mask = _batch()
    engine = ProbeEngine(model, chunk_tokens=7)
    engine.adapter.disable_rope()
    state = engine.base_pass(ids, mask)
    normal_base = ref.logits(model, ids, mask)
    with identity_rotation(model):
        base = ref.logits(model, ids, mask)
        # the intervention is real: without rotation the base model's predictions change
        assert ref.kl_per_position(normal_base, base)[mask.bool()].mean() > 1e-3
        for v, order in ((replacement(1, 2, L), ref.replacement_order(1, 2, L)),
                         (interchange(0, 1, L), ref.interchange_order(0, 1, L))):
            want = ref.per_sequence(model, ids, mask, order, base)
            got = engine.variant_seq_stats(state, v)
            err = ((got.kl_sum / got.tokens).double() / want.kl_mean - 1).abs().max().item()
            assert err <= RTOL, f"{arch} {v.key}: relative error {err:.3g}"
            assert want.kl_grand > 1e-4
    # the base pass measured under the same setting: its NLL is the identity-rotation model's
    base_stats = engine.base_seq_stats(state)
    with identity_rotation(model):
        want = ref.per_sequence(model, ids, mask, ref.base_order(L))
    err = ((base_stats.nll_sum / base_stats.nll_tokens).double() / want.nll_mean - 1).abs().max().item()
    assert err <= RTOL


@pytest.mark.parametrize("arch", ["gpt2", "bloom", "opt"])
def test_rope_off_is_refused_without_rotary_embeddings(arch):
    engine = ProbeEngine(tiny_model(arch, n_layers=L, vocab=VOCAB))
    with pytest.raises(SwapKLError, match=f"{arch}.*no rotary"):
        engine.adapter.disable_rope()


def test_cli_rope_off_is_recorded_and_refused_where_meaningless(tmp_path, capsys):
    tok = tmp_path / "tokens.npy"
    np.save(tok, random_tokens(VOCAB, 3, 12, seed=2).numpy())
    for arch in ("llama", "gpt2"):
        d = tmp_path / arch
        tiny_model(arch, n_layers=L, vocab=VOCAB).save_pretrained(d)
        word_tokenizer().save_pretrained(d)
        out = tmp_path / f"out_{arch}" / "probe.parquet"
        out.parent.mkdir()
        rc, _, err = run_cli(capsys, "--model", d, "--tokens", tok, "--protocols", "replacement",
                             "--rope", "off", "--out", out)
        if arch == "gpt2":
            assert_clean_failure(rc, err, out, "no rotary embeddings")
        else:
            assert rc == 0, err
            assert provenance.read(str(out))["rope"] == "off"
            assert pq.read_table(out).num_rows > 0
