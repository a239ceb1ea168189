"""Span experiments (swapkl.studies.spans) against the stock transformers forward.

Reorderings (skip, reverse, shuffle, repeat) are compared with the stock forward over a reordered
``nn.ModuleList`` (tests/naive_reference.py). The parallel variants are compared with the stock forward
over a *wrapped* block list written here from the method's description: each block of the span is
replaced by a member module that, called by the stock forward with its own slot's arguments (mask,
rotary embeddings), runs its block on the stream that entered the span; the span's last member
returns the input plus the mean of the members' updates (in float64), and re-runs the whole step
(with each member's recorded arguments) for looped parallel. Tolerance: tests/test_engine.py's RTOL
(the same float32 modules and depth; the reference's float64 average is closer to exact than the
engine's float32 one, a difference of ~1e-7 relative per step).
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import naive_reference as ref
from swapkl.model.engine import ProbeEngine
from swapkl.errors import SwapKLError
from swapkl.studies.spans.run import measure_spans, span_table, span_variants
from swapkl.model.batch_loop import window_batches
from tiny_models import ARCHS, random_tokens, tiny_model

N_LAYERS = 8
VOCAB = 97
RTOL = 1e-5
ARCH_SUBSET = ("gpt_neox", "llama", "qwen3", "gpt2")  # parallel residual, GQA, per-slot masks, block-bound scale


def _batch():
    ids = random_tokens(VOCAB, 3, 20, seed=4)
    mask = torch.ones_like(ids)
    mask[1, 13:] = 0
    mask[2, 6:] = 0
    return ids, mask


def _unwrap(out):
    return out[0] if isinstance(out, tuple) else out


def _rewrap(like, h):
    return (h,) + tuple(like[1:]) if isinstance(like, tuple) else h


class _Member(torch.nn.Module):
    """Block ``block`` of a parallel span, called by the stock forward at its own slot."""

    def __init__(self, block, shared, first, last, loops):
        super().__init__()
        self.block, self.first, self.last, self.loops = block, first, last, loops
        self.shared = shared  # a plain dict: the span's input, the members' updates and their call arguments

    def forward(self, hidden_states, *args, **kwargs):
        s = self.shared
        if self.first:
            s.update(x=hidden_states, deltas=[], calls=[])
        x = s["x"]
        s["calls"].append((self.block, args, kwargs))
        out = self.block(x, *args, **kwargs)
        s["deltas"].append(_unwrap(out).double() - x.double())
        if not self.last:
            return _rewrap(out, x)  # the next member reads the span's input again
        h = (x.double() + torch.stack(s["deltas"]).mean(0)).to(x.dtype)
        for _ in range(self.loops - 1):
            ds = [_unwrap(b(h, *a, **kw)).double() - h.double() for b, a, kw in s["calls"]]
            h = (h.double() + torch.stack(ds).mean(0)).to(x.dtype)
        return _rewrap(out, h)


def _parallel_logits(model, ids, mask, start, end, loops):
    layers = ref.block_list(model)
    original = list(layers)
    shared = {}
    try:
        for b in range(start, end):
            layers[b] = _Member(original[b], shared, b == start, b == end - 1, loops)
        with torch.inference_mode():
            return model(input_ids=ids, attention_mask=mask, use_cache=False).logits
    finally:
        for b, m in enumerate(original):
            layers[b] = m


def _expected_order(kind, s, e, n, seed=0):
    head, tail = list(range(s)), list(range(e, n))
    if kind == "skip":
        return head + tail
    if kind == "reverse":
        return head + list(reversed(range(s, e))) + tail
    if kind == "repeat":
        return head + [(n - 1) // 2] * (e - s) + tail
    rng = np.random.default_rng([seed, s])
    perm = list(rng.permutation(np.arange(s, e)))
    while perm == list(range(s, e)):  # the identity is no shuffle: the next draw
        perm = list(rng.permutation(np.arange(s, e)))
    return head + perm + tail


def _per_sequence_kl(model, ids, mask, var_logits, base_logits):
    valid = mask.bool()
    kl = ref.kl_per_position(base_logits, var_logits)
    return torch.where(valid, kl, torch.zeros_like(kl)).sum(1) / valid.sum(1).double()


@pytest.mark.parametrize("arch", ARCH_SUBSET)
def test_every_span_variant_matches_the_stock_forward(arch):
    model = tiny_model(arch, n_layers=N_LAYERS, vocab=VOCAB)
    ids, mask = _batch()
    variants = span_variants(["skip", "reverse", "shuffle", "repeat", "parallel", "looped_parallel"], N_LAYERS,
                             loops=(2, 3), seed=5)
    engine = ProbeEngine(model, chunk_tokens=7)
    results = measure_spans(engine, window_batches(ids.numpy(), mask.numpy(), 2), variants, device="cpu")
    base_logits = ref.logits(model, ids, mask)
    starts = sorted({v.start for v in variants})
    assert starts == [1, 2, 3]  # widths 6, 4, 2
    for v in variants:
        got = np.concatenate([p["kl_sum"] for p in results[v.key]]) / np.concatenate(
            [p["tokens"] for p in results[v.key]])
        if v.order is not None:
            order = _expected_order(v.kind, v.start, v.end, N_LAYERS, seed=5)
            assert list(v.order) == order, v.key
            want = ref.per_sequence(model, ids, mask, order, base_logits).kl_mean
        else:
            logits = _parallel_logits(model, ids, mask, v.start, v.end, v.loops)
            want = _per_sequence_kl(model, ids, mask, logits, base_logits)
        assert (want > 1e-4).all(), v.key  # the variant changes the output: the comparison can fail
        err = np.max(np.abs(got - want.numpy()) / want.numpy())
        assert err <= RTOL, f"{arch} {v.key}: relative error {err:.3g}"


def test_parallel_reference_is_not_the_sequential_model():
    """Guard: a wrapper that runs the members in sequence (the base model) differs from the parallel one."""
    model = tiny_model("llama", n_layers=N_LAYERS, vocab=VOCAB)
    ids, mask = _batch()
    base = ref.logits(model, ids, mask)
    par = _parallel_logits(model, ids, mask, 2, 6, 1)
    assert _per_sequence_kl(model, ids, mask, par, base).min() > 1e-3


def test_prefix_reuse_and_no_weight_copies():
    """Each variant runs only from slot s on, with the model's own block objects."""
    model = tiny_model("llama", n_layers=N_LAYERS, vocab=VOCAB)
    ids, mask = _batch()
    ptrs = [p.data_ptr() for p in model.parameters()]
    calls = []
    blocks = list(ref.block_list(model))
    hooks = [b.register_forward_pre_hook(lambda m, a, k=k: calls.append(k)) for k, b in enumerate(blocks)]
    try:
        engine = ProbeEngine(model)
        variants = span_variants(["skip", "parallel", "looped_parallel"], N_LAYERS, loops=(2,), min_start=3)
        measure_spans(engine, window_batches(ids.numpy(), mask.numpy(), 3), variants, device="cpu")
    finally:
        for h in hooks:
            h.remove()
    base = list(range(N_LAYERS))
    skip = [5, 6, 7]
    # parallel x1 then x2 share the first step: 3, 4 | tail 5, 6, 7 | 3, 4 | tail 5, 6, 7
    parallel = [3, 4, 5, 6, 7, 3, 4, 5, 6, 7]
    assert calls == base + parallel + skip  # the parallel variants run from the base item's cached stream
    assert [p.data_ptr() for p in model.parameters()] == ptrs


def test_table_rows_and_bad_options():
    model = tiny_model("gpt_neox", n_layers=6, vocab=VOCAB)
    ids, mask = _batch()
    variants = span_variants("skip,repeat", 6)
    engine = ProbeEngine(model)
    results = measure_spans(engine, window_batches(ids.numpy(), mask.numpy(), 8), variants, device="cpu")
    table = span_table(results, variants, dict(model="m", revision="main", step=None, n_layers=6)).to_pylist()
    assert [(r["variant"], r["start"], r["width"]) for r in table] == [
        ("base", None, 0), ("skip", 1, 4), ("repeat", 1, 4), ("skip", 2, 2), ("repeat", 2, 2)]
    assert table[0]["kl_mean"] == 0.0 and table[2]["middle"] == 2 and table[2]["order"] == [0, 2, 2, 2, 2, 5]
    assert table[1]["n_tokens"] == int(mask.sum())
    with pytest.raises(SwapKLError, match="unknown span variant 'sideways'"):
        span_variants("skip,sideways", 6)
    with pytest.raises(SwapKLError, match="loops must be at least 2"):
        span_variants("looped_parallel", 6, loops=(1,))


@pytest.mark.parametrize("arch", [a for a in ARCHS if a not in ARCH_SUBSET])
def test_parallel_on_the_other_architectures(arch):
    model = tiny_model(arch, n_layers=6, vocab=VOCAB)
    ids, mask = _batch()
    variants = span_variants(["parallel", "reverse"], 6)
    engine = ProbeEngine(model)
    results = measure_spans(engine, window_batches(ids.numpy(), mask.numpy(), 3), variants, device="cpu")
    base_logits = ref.logits(model, ids, mask)
    for v in variants:
        got = results[v.key][0]["kl_sum"] / results[v.key][0]["tokens"]
        if v.order is None:
            want = _per_sequence_kl(model, ids, mask, _parallel_logits(model, ids, mask, v.start, v.end, 1),
                                    base_logits)
        else:
            want = ref.per_sequence(model, ids, mask, list(v.order), base_logits).kl_mean
        assert np.max(np.abs(got - want.numpy()) / want.numpy()) <= RTOL, v.key


def test_command_aggregate_and_figure(tmp_path):
    """`swapkl spans` -> results/spans.parquet beside the probes' adjacent d_inter / d_repl -> the figure."""
    import pandas as pd

    from swapkl.cli import main
    from swapkl.figures.spans.span_kl import plot_spans
    from swapkl.studies.spans.stats import aggregate_spans

    model_dir = tmp_path / "model"
    tiny_model("llama", n_layers=6, vocab=VOCAB).save_pretrained(model_dir)
    tokens = tmp_path / "tokens.npy"
    np.save(tokens, random_tokens(VOCAB, 6, 12, seed=2).numpy())
    common = ["--model", str(model_dir), "--device", "cpu", "--tokens", str(tokens), "--batch-size", "4"]
    spans, probe = tmp_path / "spans.parquet", tmp_path / "probe.parquet"
    assert main(["spans", *common, "--loops", "2,3", "--out", str(spans)]) == 0
    assert main(["probe", *common, "--protocols", "replacement,interchange", "--out", str(probe)]) == 0
    assert main(["aggregate", "--probe", str(probe), "--pair-sets", f"{model_dir}=adjacent", "--out",
                 str(tmp_path / "agg.parquet")]) == 0
    out = tmp_path / "results" / "spans.parquet"
    aggregate_spans([spans], tmp_path / "agg.parquet", out, n_boot=200, seed=0)
    df = pd.read_parquet(out)
    p = pd.read_parquet(probe)
    inter = p[p["protocol"] == "interchange"].set_index("layer_i")["kl_mean"]
    r = p[p["protocol"] == "replacement"].set_index(["layer_i", "layer_j"])["kl_mean"]
    d_repl = np.median([max(r[(i, i + 1)], r[(i + 1, i)]) for i in range(5)])
    assert np.allclose(df["d_inter_adjacent"], inter.median(), rtol=1e-12)
    assert np.allclose(df["d_repl_adjacent"], d_repl, rtol=1e-12)
    assert set(df["variant"]) == {"base", "skip", "reverse", "shuffle", "repeat", "parallel", "looped_parallel"}
    v = df[df["variant"] != "base"]
    assert ((v["kl_ci_low"] <= v["kl_mean"]) & (v["kl_mean"] <= v["kl_ci_high"])).all()
    base_nll = float(df.loc[df["variant"] == "base", "nll_mean"].iloc[0])
    assert np.allclose(v["delta_ppl_pct"], 100 * (np.exp(v["nll_mean"] - base_nll) - 1))
    assert sorted(v.loc[v["variant"] == "looped_parallel", "loops"].unique()) == [2, 3]
    plot_spans(out, tmp_path / "f.png", tmp_path / "f.pdf", model=str(model_dir), revision="main")
    assert (tmp_path / "f.png").stat().st_size > 0


@pytest.mark.parametrize("option, message", [
    (["--variants", "skip,sideways"], "unknown span variant 'sideways'"),
    (["--loops", "1"], "loops must be at least 2"),
    (["--min-width", "0"], "min_width must be at least 1"),
])
def test_bad_span_options_exit_2_before_loading(tmp_path, capsys, option, message):
    from swapkl.cli import main

    out = tmp_path / "spans.parquet"
    tokens = tmp_path / "t.npy"
    np.save(tokens, random_tokens(VOCAB, 2, 8).numpy())
    model = tmp_path / "model"  # passes the shared path check; the options are refused before it is loaded
    model.mkdir()
    (model / "config.json").write_text("{}")
    code = main(["spans", "--model", str(model), "--tokens", str(tokens), *option, "--out", str(out)])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and len(err) == 1 and message in err[0] and not out.exists()
