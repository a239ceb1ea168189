"""The weight-changing probe protocols (averaging, head_interchange) against the stock forward of a
model whose weights were changed by independent code (reshaped views, not swapkl's slices)."""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch

import naive_reference as ref
from swapkl.model.engine import ProbeEngine
from swapkl.model.heads import n_units
from swapkl.probes.protocols.averaging import averaging
from swapkl.probes.protocols import build_variants
from swapkl.probes.protocols.head_interchange import head_interchange
from crash import crash_after
from tiny_models import ARCHS, random_tokens, tiny_model

N_LAYERS = 4


def _batch():
    ids = random_tokens(97, 3, 14, seed=5)
    mask = torch.ones_like(ids)
    mask[2, 9:] = 0
    return ids, mask


def _engine_kl(model, v, ids, mask) -> torch.Tensor:
    eng = ProbeEngine(model)
    kl, _ = eng.token_stats(eng.base_pass(ids, mask), v)
    assert not eng.adapter.extra_blocks, "a variant's blocks outlived it"
    return kl


def _stock_kl(model, changed, ids, mask) -> torch.Tensor:
    base = ref.logits(model, ids, mask)
    var = ref.logits(changed, ids, mask)
    return ref.kl_per_position(base, var)[mask.bool()]


def _close(got, want):
    # float32 forward on both sides (same kernels, same weights), KL in float64 from the logits:
    # the engine resumes from the cached stream, the reference recomputes it; same bound as test_engine
    err = (got.double() - want).abs().max().item()
    assert err <= 1e-5 * want.abs().max().item() + 1e-7, err


def _units_view(config, block, unit):
    """(tensor view, index) pairs of one head unit, through reshapes of the whole weight."""
    t = config.model_type
    h = config.num_attention_heads
    kv = n_units(config)
    d = getattr(config, "head_dim", None) or config.hidden_size // h
    g = h // kv
    if t in ("gpt_neox", "bloom"):
        a = block.attention if t == "gpt_neox" else block.self_attention
        out = [(a.query_key_value.weight.view(h, 3 * d, -1), unit),
               (a.dense.weight.view(-1, h, d).transpose(0, 1), unit)]
        if a.query_key_value.bias is not None:
            out.append((a.query_key_value.bias.view(h, 3 * d), unit))
        return out
    if t == "gpt2":
        a = block.attn
        w = a.c_attn.weight.view(-1, 3, h, d).permute(2, 1, 0, 3)  # [head, third, in, d]
        b = a.c_attn.bias.view(3, h, d).transpose(0, 1)
        return [(w, unit), (b, unit), (a.c_proj.weight.view(h, d, -1), unit)]
    a = block.self_attn
    o_proj = a.out_proj if t == "opt" else a.o_proj
    out = [(a.q_proj.weight.view(kv, g * d, -1), unit), (a.k_proj.weight.view(kv, d, -1), unit),
           (a.v_proj.weight.view(kv, d, -1), unit), (o_proj.weight.view(-1, kv, g * d).transpose(0, 1), unit)]
    for p, n in ((a.q_proj.bias, g * d), (a.k_proj.bias, d), (a.v_proj.bias, d)):
        if p is not None:
            out.append((p.view(kv, n), unit))
    if t == "olmo2":
        out += [(a.q_norm.weight.view(kv, g * d), unit), (a.k_norm.weight.view(kv, d), unit)]
    return out


@pytest.mark.parametrize("arch", ARCHS)
def test_head_interchange_matches_stock_model_with_swapped_heads(arch):
    model = tiny_model(arch, n_layers=N_LAYERS, seed=3)
    ids, mask = _batch()
    u = n_units(model.config) - 1
    v = head_interchange(0, 2, u, N_LAYERS, n_units(model.config))
    changed = copy.deepcopy(model)
    blocks = ref.block_list(changed)
    with torch.no_grad():
        for (x, k), (y, _) in zip(_units_view(changed.config, blocks[0], u), _units_view(changed.config, blocks[2], u)):
            tmp = x[k].clone()
            x[k] = y[k]
            y[k] = tmp
    want = _stock_kl(model, changed, ids, mask)
    assert want.max() > 1e-4, "the swap changed nothing: the test would not see a wrong slice"
    _close(_engine_kl(model, v, ids, mask), want)


@pytest.mark.parametrize("arch", ["gpt_neox", "qwen3", "gemma3_text"])
def test_head_swapped_with_itself_gives_kl_zero(arch):
    model = tiny_model(arch, n_layers=N_LAYERS, seed=3)
    ids, mask = _batch()
    v = head_interchange(1, 1, 0, N_LAYERS, n_units(model.config))
    assert _engine_kl(model, v, ids, mask).abs().max() < 1e-12


@pytest.mark.parametrize("arch", ["gpt_neox", "llama", "gpt2", "olmo2", "gemma3_text"])
def test_averaging_matches_stock_model_with_averaged_block(arch):
    model = tiny_model(arch, n_layers=N_LAYERS, seed=4)
    ids, mask = _batch()
    changed = copy.deepcopy(model)
    blocks = ref.block_list(changed)
    sa, sb = blocks[3].state_dict(), blocks[1].state_dict()
    blocks[3].load_state_dict({k: (sa[k] + sb[k]) / 2 for k in sa})
    want = _stock_kl(model, changed, ids, mask)
    assert want.max() > 1e-4
    _close(_engine_kl(model, averaging(3, 1, N_LAYERS), ids, mask), want)


def test_averaging_a_block_with_itself_is_the_base_model():
    model = tiny_model("llama", n_layers=N_LAYERS, seed=4)
    ids, mask = _batch()
    assert _engine_kl(model, averaging(2, 2, N_LAYERS), ids, mask).abs().max() < 1e-12


def test_variant_ids_are_unique_and_keys_name_the_head():
    vs = build_variants(["averaging", "head_interchange"], "all", 5, n_units=2)
    assert len(vs) == 2 * 10 + 10 * 2
    ids = [bid for v in vs for bid, _ in v.blocks]
    assert len(ids) == len(set(ids)) and all(b < 0 for b in ids)
    assert len({v.key for v in vs}) == len(vs)
    assert head_interchange(1, 3, 1, 5, 2).key == "head_interchange:1:3:1"
    assert np.all([v.head is None for v in vs if v.protocol == "averaging"])


def test_weight_protocol_files_aggregate_with_the_others(tmp_path):
    from swapkl.probes.aggregate import aggregate, read_aggregate
    from swapkl.probes.aggregate import AggregateJob
    from swapkl.data.data_spec import DataSpec
    from swapkl.probes.probe import run_probe
    from swapkl.probes.probe_jobs import ProbeJob

    tiny_model("llama", n_layers=N_LAYERS, seed=2).save_pretrained(tmp_path / "model")
    np.save(tmp_path / "tok.npy", random_tokens(97, 4, 10, seed=9).numpy())
    data = DataSpec(tokens=str(tmp_path / "tok.npy"))
    files = []
    for name, protocols in (("std", "replacement,interchange,deletion"), ("w", "averaging,head_interchange")):
        files.append(tmp_path / f"{name}.parquet")
        run_probe(ProbeJob(model=str(tmp_path / "model"), out=str(files[-1]), protocols=protocols, pairs="adjacent",
                           data=data,
                           device="cpu", metadata={"model": "m", "revision": "step1"}))
    out = tmp_path / "agg.parquet"
    aggregate(AggregateJob(probe_files=files, repr_files=[], out=out, pair_sets={"m": ["adjacent"]}, n_boot=10))
    d = read_aggregate(out)
    d = d[d["kind"] == "directed"]
    probe = pd.read_parquet(files[1])
    for proto in ("averaging", "head_interchange"):
        got = d[d["protocol"] == proto].sort_values(["layer_i", "layer_j", "head"])
        want = probe[probe["protocol"] == proto].sort_values(["layer_i", "layer_j", "head"])
        assert got["kl_mean"].tolist() == want["kl_mean"].tolist()
        assert got["head"].astype("float").fillna(-1).tolist() == want["head"].astype("float").fillna(-1).tolist()
    assert len(d[d["protocol"] == "head_interchange"]) == (N_LAYERS - 1) * 2  # 2 KV head units


def test_weight_protocols_figure(tmp_path):
    from swapkl.figures.protocol.weights import plot_weight_protocols
    from swapkl.figures.protocol.weights import averaging_vs_replacement, head_by_distance

    agg = pd.DataFrame([
        dict(kind="directed", model="m", revision="r", protocol=p, layer_i=i, layer_j=j, head=h, kl_mean=v)
        for p, i, j, h, v in [("replacement", 0, 1, None, 0.4), ("replacement", 1, 0, None, 0.5),
                              ("averaging", 0, 1, None, 0.1), ("averaging", 1, 0, None, 0.2),
                              ("interchange", 0, 1, None, 0.3), ("interchange", 0, 2, None, 0.9),
                              ("head_interchange", 0, 1, 0, 0.01), ("head_interchange", 0, 1, 1, 0.03),
                              ("head_interchange", 0, 2, 0, 0.05), ("head_interchange", 0, 2, 1, 0.07)]])
    agg["duplicate_of"] = None
    av = averaging_vs_replacement(agg, "m", "r")
    assert av[["averaging", "replacement"]].to_numpy().tolist() == [[0.1, 0.4], [0.2, 0.5]]
    hd = head_by_distance(agg, "m", "r")
    assert hd.loc[2, "head 1"] == 0.07 and hd.loc[1, "block"] == 0.3
    png, pdf = tmp_path / "w.png", tmp_path / "w.pdf"
    plot_weight_protocols(agg, png, pdf, model="m", revision="r")
    first = (png.read_bytes(), pdf.read_bytes())
    assert first[0][:4] == b"\x89PNG" and first[1][:4] == b"%PDF"
    plot_weight_protocols(agg, png, pdf, model="m", revision="r")
    assert first == (png.read_bytes(), pdf.read_bytes()), "figure is not deterministic"


def test_weight_protocols_resume_after_a_crash(tmp_path, monkeypatch):
    from swapkl.data.data_spec import DataSpec
    from swapkl.probes.probe import run_probe
    from swapkl.probes.probe_jobs import ProbeJob

    tiny_model("qwen3", n_layers=N_LAYERS, seed=2).save_pretrained(tmp_path / "model")
    np.save(tmp_path / "tok.npy", random_tokens(97, 6, 10, seed=9).numpy())
    kw = dict(protocols="averaging,head_interchange", pairs="all", data=DataSpec(tokens=str(tmp_path / "tok.npy")),
              device="cpu", batch_size=3)
    run_probe(ProbeJob(model=str(tmp_path / "model"), out=str(tmp_path / "clean.parquet"), **kw))
    progress = tmp_path / "progress.jsonl"
    with crash_after(monkeypatch, 17):
        run_probe(ProbeJob(model=str(tmp_path / "model"), out=str(tmp_path / "resumed.parquet"),
                           progress_path=str(progress), **kw))
    assert not (tmp_path / "resumed.parquet").exists() and progress.exists()
    run_probe(ProbeJob(model=str(tmp_path / "model"), out=str(tmp_path / "resumed.parquet"),
                       progress_path=str(progress), **kw))
    a, b = pd.read_parquet(tmp_path / "clean.parquet"), pd.read_parquet(tmp_path / "resumed.parquet")
    pd.testing.assert_frame_equal(a, b)
