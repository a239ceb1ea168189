"""The paper's own variants of the weight-changing probes and of LaCo, each against an independent computation:
both-slot averaging and the one-direction head swap against the stock transformers forward of a hand-modified
model copy (all positions, and the paper's last-token KL); the paper's LaCo order from hand-made probe rows."""

from __future__ import annotations

import copy

import pandas as pd
import pytest
import torch

import naive_reference as ref
from swapkl.model.engine import ProbeEngine
from swapkl.pruning.guides import get_guide
from swapkl.pruning.guides.context import GuideContext
from swapkl.model.heads import n_units
from swapkl.probes.protocols.averaging_paper import averaging_paper
from swapkl.probes.protocols import build_variants
from swapkl.probes.protocols.head_interchange import head_interchange
from swapkl.probes.protocols.head_interchange_paper import head_interchange_paper
from test_weight_protocols import _batch, _close, _engine_kl, _stock_kl, _units_view
from tiny_models import tiny_model

N_LAYERS = 4


def _last_token_kl(model, changed, ids, mask) -> torch.Tensor:
    """The paper's measurement: softmax of the last (valid) position's logits, KL(p || q) in float64, per prompt."""
    last = mask.sum(1) - 1
    rows = torch.arange(len(ids))
    p = torch.softmax(ref.logits(model, ids, mask)[rows, last].double(), -1)
    q = torch.softmax(ref.logits(changed, ids, mask)[rows, last].double(), -1)
    return (p * (p.log() - q.log())).sum(-1)


def _engine_last(model, v, ids, mask) -> torch.Tensor:
    """The engine's per-position KL taken at each sequence's last valid position (the paper's positions)."""
    per_token = _engine_kl(model, v, ids, mask)  # valid positions, row-major
    ends = torch.cumsum(mask.sum(1), 0) - 1
    return per_token[ends]


@pytest.mark.parametrize("arch", ["gpt2", "llama", "gpt_neox", "gemma3_text"])
def test_averaging_paper_puts_the_average_in_both_slots(arch):
    model = tiny_model(arch, n_layers=N_LAYERS, seed=4)
    ids, mask = _batch()
    changed = copy.deepcopy(model)
    blocks = ref.block_list(changed)
    sa, sb = blocks[1].state_dict(), blocks[3].state_dict()
    avg = {k: 0.5 * (sa[k].float() + sb[k].float()) for k in sa}  # the paper's merge test, both slots
    blocks[1].load_state_dict(avg)
    blocks[3].load_state_dict(avg)
    v = averaging_paper(3, 1, N_LAYERS)
    assert (v.layer_i, v.layer_j) == (1, 3) and v.order[1] < 0 and v.order[3] < 0
    want = _stock_kl(model, changed, ids, mask)
    assert want.max() > 1e-4
    _close(_engine_kl(model, v, ids, mask), want)
    _close(_engine_last(model, v, ids, mask), _last_token_kl(model, changed, ids, mask))


@pytest.mark.parametrize("arch", ["gpt2", "qwen3", "gpt_neox", "gemma3_text"])
def test_head_interchange_paper_copies_one_head_one_way(arch):
    model = tiny_model(arch, n_layers=N_LAYERS, seed=3)
    ids, mask = _batch()
    u = n_units(model.config) - 1
    changed = copy.deepcopy(model)
    blocks = ref.block_list(changed)
    with torch.no_grad():  # head u of block 2 copied into block 0; block 2 keeps its own
        for (x, k), (y, _) in zip(_units_view(changed.config, blocks[0], u), _units_view(changed.config, blocks[2], u)):
            x[k] = y[k].clone()
    v = head_interchange_paper(0, 2, u, N_LAYERS, n_units(model.config))
    assert v.order[2] == 2 and v.order[0] < 0 and v.head == u
    want = _stock_kl(model, changed, ids, mask)
    assert want.max() > 1e-4
    _close(_engine_kl(model, v, ids, mask), want)
    _close(_engine_last(model, v, ids, mask), _last_token_kl(model, changed, ids, mask))
    # and it is not the clean two-way exchange
    two_way = _engine_kl(model, head_interchange(0, 2, u, N_LAYERS, n_units(model.config)), ids, mask)
    assert (two_way - want.float()).abs().max() > 1e-4


def test_paper_variants_are_listed_once_per_pair():
    vs = build_variants(["averaging_paper", "head_interchange_paper"], "all", 5, n_units=2)
    assert len(vs) == 10 + 10 * 2
    assert len({v.key for v in vs}) == len(vs) and all(v.layer_i < v.layer_j for v in vs)


def test_laco_paper_orders_adjacent_pairs_by_the_replacement_max():
    """Interchange ranks (2,3) first; the replacement max over both directions ranks (0,1) first:
    max(0.3, 0.1) = 0.3 for (0,1), max(0.2, 0.9) = 0.9 for (1,2), max(0.5, 0.4) = 0.5 for (2,3),
    max(0.35, 0.6) = 0.6 for (3,4). Disjoint pairs in that order: (0,1), (2,3), then (3,4) shares 3, (1,2) shares
    1 and 2: budget 3 is out of reach."""
    rows = [("interchange", 0, 1, 0.5), ("interchange", 1, 2, 0.4), ("interchange", 2, 3, 0.01),
            ("interchange", 3, 4, 0.3)]
    for (i, j), (fwd, bwd) in {(0, 1): (0.3, 0.1), (1, 2): (0.2, 0.9), (2, 3): (0.5, 0.4), (3, 4): (0.35, 0.6)}.items():
        rows += [("replacement", i, j, fwd), ("replacement", j, i, bwd)]
    probe = pd.DataFrame(rows, columns=["protocol", "layer_i", "layer_j", "kl_mean"])
    ctx = GuideContext(probe, None, 5, [1, 2, 3], 0)
    paper = get_guide("laco_paper").select(ctx)
    assert paper.removed[(1, None)].merged == (0,) and paper.removed[(1, None)].removed == (1,)
    assert paper.removed[(2, None)].merged == (0, 2) and paper.removed[(2, None)].removed == (1, 3)
    assert paper.removed[(3, None)] is None
    clean = get_guide("laco").select(ctx)
    assert clean.removed[(1, None)].merged == (2,)  # interchange order: the clean guide keeps its definition


def test_paper_variant_probe_files_aggregate(tmp_path):
    """`swapkl probe --protocols averaging_paper,head_interchange_paper` writes rows the aggregate accepts, each
    row's KL the mean over the windows' tokens of the stock forward of the hand-modified copy."""
    import numpy as np

    from swapkl.probes.aggregate import aggregate, read_aggregate
    from swapkl.probes.aggregate import AggregateJob
    from swapkl.data.data_spec import DataSpec
    from swapkl.probes.probe import run_probe
    from swapkl.probes.probe_jobs import ProbeJob
    from tiny_models import random_tokens

    model = tiny_model("llama", n_layers=N_LAYERS, seed=2)
    model.save_pretrained(tmp_path / "model")
    tokens = random_tokens(97, 4, 10, seed=9)
    np.save(tmp_path / "tok.npy", tokens.numpy())
    out = tmp_path / "w.parquet"
    run_probe(ProbeJob(model=str(tmp_path / "model"), out=str(out), protocols="averaging_paper,head_interchange_paper",
                       pairs="adjacent",
                       data=DataSpec(tokens=str(tmp_path / "tok.npy")), device="cpu",
                       metadata={"model": "m", "revision": "step1"}))
    probe = pd.read_parquet(out)
    units = n_units(model.config)
    assert (probe["protocol"] == "averaging_paper").sum() == N_LAYERS - 1
    assert (probe["protocol"] == "head_interchange_paper").sum() == (N_LAYERS - 1) * units
    changed = copy.deepcopy(model)
    blocks = ref.block_list(changed)
    sa, sb = blocks[1].state_dict(), blocks[2].state_dict()
    avg = {k: 0.5 * (sa[k] + sb[k]) for k in sa}
    blocks[1].load_state_dict(avg)
    blocks[2].load_state_dict(avg)
    mask = torch.ones_like(tokens)
    want = ref.kl_per_position(ref.logits(model, tokens, mask), ref.logits(changed, tokens, mask)).mean().item()
    got = probe[(probe["protocol"] == "averaging_paper") & (probe["layer_i"] == 1)]["kl_mean"].item()
    assert got == pytest.approx(want, rel=1e-5)
    std = tmp_path / "std.parquet"
    run_probe(ProbeJob(model=str(tmp_path / "model"), out=str(std), protocols="replacement,interchange,deletion",
                       pairs="adjacent",
                       data=DataSpec(tokens=str(tmp_path / "tok.npy")), device="cpu",
                       metadata={"model": "m", "revision": "step1"}))
    agg = tmp_path / "agg.parquet"
    aggregate(AggregateJob(probe_files=[std, out], repr_files=[], out=agg, pair_sets={"m": ["adjacent"]}, n_boot=10))
    d = read_aggregate(agg)
    assert set(d.loc[d["kind"] == "directed", "protocol"]) >= {"averaging_paper", "head_interchange_paper"}
