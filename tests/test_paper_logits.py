"""``logits_dtype: bfloat16``: the logits rounded to bf16 before the softmax, as the paper's JAX forwards returned
them (docs/paper_modes.md), against the stock transformers forward of a bf16 model, whose bf16 ``lm_head`` rounds
its float32-accumulated logits the same way.

The reference runs the model's own block list reordered (tests/naive_reference.py) and computes KL and NLL in
float64 from its bf16 logits. Tolerances: tests/float32_bounds.py (``rounded_kl_bound``, ``rounded_nll_bound``):
the two roundings agree except on logits whose exact value lies within the float32 error bound of a bf16 rounding
midpoint, then by one bf16 spacing, plus swapkl's float32 reductions. The clean float32 logits miss the reference
by far more than that bound (checked), so the tests fail without the rounding.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import float32_bounds as fb
import naive_reference as ref
from swapkl.data.data_spec import DataSpec
from swapkl.errors import SwapKLError
from swapkl.model.engine import ProbeEngine
from swapkl.model.kl import Unembedding
from swapkl.model.variant import Variant
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.tables import provenance
from tiny_models import random_tokens, tiny_model

N_LAYERS = 4
VOCAB = 97


@pytest.fixture(scope="module", params=["llama", "qwen3"])
def saved(request, tmp_path_factory):
    """A tiny random checkpoint and its stock bf16 load (as a bf16 checkpoint loads: RoPE tables in float32)."""
    from transformers import AutoModelForCausalLM

    d = tmp_path_factory.mktemp(f"bf16_{request.param}")
    tiny_model(request.param, n_layers=N_LAYERS, vocab=VOCAB, seed=3).save_pretrained(d / "m")
    return d / "m", AutoModelForCausalLM.from_pretrained(d / "m", dtype=torch.bfloat16).eval()


def _variants():
    out = []
    for i, j in ((0, 1), (1, 2), (1, 3)):
        out.append(Variant("replacement", i, j, tuple(ref.replacement_order(i, j, N_LAYERS))))
        out.append(Variant("interchange", i, j, tuple(ref.interchange_order(i, j, N_LAYERS))))
    return out


@torch.inference_mode()
def _stock(model, ids, mask, order):
    """Final-normed hidden states and bf16 logits of the stock forward running ``order``, at the valid positions."""
    with ref.reordered(model, order):
        h = model.model(input_ids=ids, attention_mask=mask, use_cache=False).last_hidden_state
    logits = ref.logits(model, ids, mask, order)
    valid = mask.bool()
    return h[valid], logits[valid]


def test_bf16_logits_are_those_of_the_stock_bf16_forward(saved):
    _, model = saved
    ids = random_tokens(VOCAB, 3, 20, seed=4)
    mask = torch.ones_like(ids)
    mask[2, 14:] = 0  # a shorter window: padding never counts
    rounded, clean = ProbeEngine(model, logits_dtype="bfloat16"), ProbeEngine(model)
    rs, cs = rounded.base_pass(ids, mask), clean.base_pass(ids, mask)
    w = model.lm_head.weight.detach().float()
    hb, zb = _stock(model, ids, mask, ref.base_order(N_LAYERS))
    assert zb.dtype == torch.bfloat16
    labels = rs.targets.labels
    has = labels >= 0
    for v in _variants():
        hv, zv = _stock(model, ids, mask, list(v.order))
        lp, lq = torch.log_softmax(zb.double(), -1), torch.log_softmax(zv.double(), -1)
        kl_ref = (lp.exp() * (lp - lq)).sum(-1)
        nll_ref = -lq.gather(1, labels.clamp(min=0)[:, None])[:, 0]
        kl, nll = rounded.token_stats(rs, v)
        kl_clean, _ = clean.token_stats(cs, v)
        bound = fb.rounded_kl_bound(w, None, hb, hv, zb, zv)
        assert ((kl - kl_ref).abs() <= bound).all(), (v.key, (kl - kl_ref).abs().max().item(), bound.max().item())
        # the clean float32 logits are not what the stock bf16 forward gives: far outside the bound
        assert ((kl_clean - kl_ref).abs() > 10 * bound).any(), v.key
        nbound = fb.rounded_nll_bound(w, None, hv[has], zv[has], labels[has])
        assert ((nll[has] - nll_ref[has]).abs() <= nbound).all(), v.key
        assert nll[~has].isnan().all()
    # the base against itself: exactly 0 (the same rounded logits on both sides)
    kl0, _ = rounded.hidden_stats(rs, rs.residuals[-1], "base")
    assert (kl0 == 0).all()


def test_rounding_is_round_to_nearest_bf16_of_the_float32_logits():
    """Unembedding.logits with round_to: every logit is a bf16 value, the nearest to the float32 logit."""
    torch.manual_seed(0)
    head = torch.nn.Linear(16, 40, bias=True)
    h = torch.randn(5, 16)
    z32 = Unembedding.from_head(head).logits(h)
    z = Unembedding.from_head(head, "bfloat16").logits(h)
    assert z.dtype == torch.float32 and torch.equal(z, z.to(torch.bfloat16).float())
    spacing = fb.bf16_spacing(z32)
    assert ((z.double() - z32.double()).abs() <= spacing / 2).all()
    assert not torch.equal(z, z32)
    with pytest.raises(SwapKLError, match="logits_dtype must be one of float32, bfloat16, got 'float16'"):
        Unembedding.from_head(head, "float16")


def test_probe_records_logits_dtype_and_reports_the_rounded_kl(saved, tmp_path):
    path, model = saved
    ids = random_tokens(VOCAB, 3, 16, seed=5)
    np.save(tmp_path / "t.npy", ids.numpy())
    spec = DataSpec(tokens=str(tmp_path / "t.npy"))
    outs = {}
    for ld in ("bfloat16", "float32"):
        outs[ld] = tmp_path / f"{ld}.parquet"
        run_probe(ProbeJob(model=str(path), out=str(outs[ld]), data=spec, dtype="bfloat16", device="cpu",
                           protocols=("replacement",), logits_dtype=ld))
    assert provenance.read(str(outs["bfloat16"]))["logits_dtype"] == "bfloat16"
    assert "logits_dtype" not in provenance.read(str(outs["float32"]))
    df = pd.read_parquet(outs["bfloat16"]).set_index(["protocol", "layer_i", "layer_j"])
    mask = torch.ones_like(ids)
    w = model.lm_head.weight.detach().float()
    hb, zb = _stock(model, ids, mask, ref.base_order(N_LAYERS))
    order = ref.replacement_order(1, 2, N_LAYERS)
    hv, zv = _stock(model, ids, mask, order)
    lp, lq = torch.log_softmax(zb.double(), -1), torch.log_softmax(zv.double(), -1)
    per_window = lambda x: x.reshape(ids.shape).sum(1).numpy()  # noqa: E731 (every position valid)
    kl_ref = per_window((lp.exp() * (lp - lq)).sum(-1))
    bound = per_window(fb.rounded_kl_bound(w, None, hb, hv, zb, zv))
    got = np.stack(df.loc[("replacement", 1, 2), "seq_kl_sum"])
    clean = np.stack(pd.read_parquet(outs["float32"]).set_index(["protocol", "layer_i", "layer_j"])
                     .loc[("replacement", 1, 2), "seq_kl_sum"])
    assert (np.abs(got - kl_ref) <= bound).all(), (got - kl_ref, bound)
    assert (np.abs(clean - kl_ref) > bound).any(), (clean - kl_ref, bound)
