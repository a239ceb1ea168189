"""Models larger than one device: accelerate's device_map with half the blocks offloaded to disk gives exactly
the numbers of the single-device run (engine, spans, the probe, pruning and relevance commands).

The comparison is bit for bit: on the CPU an offloaded block runs the same float32 kernels on the same weights
(read from the checkpoint's safetensors file at each call), so nothing but placement differs.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

from swapkl.model.engine import ProbeEngine
from swapkl.errors import SwapKLError
from swapkl.model.loading import load_model
from swapkl.model.merge import averaged_block
from swapkl.probes.protocols import build_variants
from swapkl.studies.spans.run import SPAN_VARIANTS, measure_spans, span_variants
from swapkl.model.batch_loop import window_batches
from tiny_models import random_tokens, tiny_model

N_LAYERS = 6
VOCAB = 97


def _block_devices(device_map: dict, n_layers: int) -> list[str]:
    """Where each block went: the entry of the longest module name that contains it (accelerate may place a
    whole module list, or the whole model, under one name)."""
    def where(name):
        keys = [k for k in device_map if k == "" or name == k or name.startswith(k + ".")]
        return str(device_map[max(keys, key=len)])

    return [where(f"model.layers.{b}") for b in range(n_layers)]


def _budget_for_half_on_disk(path) -> dict:
    """A CPU memory cap under which accelerate sends exactly half the blocks to disk (found by trying caps)."""
    model = tiny_model("llama", n_layers=N_LAYERS, vocab=VOCAB)
    total = sum(p.numel() * 4 for p in model.parameters())
    block = sum(p.numel() * 4 for p in model.model.layers[0].parameters())
    for k in range(1, 3 * N_LAYERS):
        cap = {"cpu": int(total - k * block / 2)}
        placed = load_model(str(path), device="auto", need_tokenizer=False, device_map="auto", max_memory=cap)
        if _block_devices(placed.device_map, N_LAYERS).count("disk") == N_LAYERS // 2:
            return cap
    raise AssertionError("no CPU cap puts half the blocks on disk")


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory):
    path = tmp_path_factory.mktemp("placed") / "model"
    tiny_model("llama", n_layers=N_LAYERS, vocab=VOCAB).save_pretrained(path)
    return path, _budget_for_half_on_disk(path)


def _tokens():
    ids = random_tokens(VOCAB, 4, 16, seed=6)
    mask = torch.ones_like(ids)
    mask[3, 9:] = 0
    return ids, mask


def _all_stats(model):
    ids, mask = _tokens()
    engine = ProbeEngine(model, chunk_tokens=11)
    out = {}
    state = engine.base_pass(ids, mask)
    out["base"] = engine.base_seq_stats(state)
    for v in engine.plan(build_variants(["replacement", "interchange", "deletion"], "within:2", N_LAYERS)):
        out[v.key] = engine.variant_seq_stats(state, v)
    spans = span_variants(SPAN_VARIANTS, N_LAYERS, loops=(2,))
    results = measure_spans(engine, window_batches(ids.numpy(), mask.numpy(), 2), spans, device="cpu")
    return out, results


def test_half_the_blocks_on_disk_give_exactly_the_single_device_numbers(checkpoint):
    path, cap = checkpoint
    single = load_model(str(path), device="cpu", need_tokenizer=False)
    placed = load_model(str(path), need_tokenizer=False, device_map="auto", max_memory=cap)
    blocks = _block_devices(placed.device_map, N_LAYERS)
    assert blocks.count("disk") == N_LAYERS // 2 and "cpu" in blocks
    assert any(p.device.type == "meta" for p in placed.model.parameters())  # really offloaded
    want, want_spans = _all_stats(single.model)
    got, got_spans = _all_stats(placed.model)
    assert want.keys() == got.keys() and len(want) > 20
    for key in want:
        for field in ("kl_sum", "tokens", "nll_sum", "nll_tokens"):
            assert torch.equal(getattr(got[key], field), getattr(want[key], field)), (key, field)
    for key in want_spans:
        for a, b in zip(got_spans[key], want_spans[key]):
            assert all(np.array_equal(a[f], b[f]) for f in a), key
    assert want["replacement:0:1"].kl_sum.sum() > 0  # the compared numbers are not trivially zero


@pytest.mark.slow
def test_probe_and_spans_commands_with_a_device_map(checkpoint, tmp_path):
    from swapkl.cli import main

    path, cap = checkpoint
    tokens = tmp_path / "tokens.npy"
    np.save(tokens, random_tokens(VOCAB, 5, 12, seed=8).numpy())
    common = ["--model", str(path), "--tokens", str(tokens), "--batch-size", "2"]
    placed = ["--device-map", "auto", "--max-memory", f"cpu={cap['cpu']}"]
    for cmd, extra in (("probe", ["--pairs", "within:2"]), ("spans", [])):
        a, b = tmp_path / f"{cmd}-single.parquet", tmp_path / f"{cmd}-placed.parquet"
        assert main([cmd, *common, *extra, "--device", "cpu", "--out", str(a)]) == 0
        assert main([cmd, *common, *extra, *placed, "--out", str(b)]) == 0
        cols = ["kl_mean", "nll_mean", "seq_kl_sum", "seq_nll_sum"]
        pd.testing.assert_frame_equal(pd.read_parquet(a)[cols], pd.read_parquet(b)[cols], check_exact=True)


def test_offloaded_blocks_are_not_copied_into_merged_blocks(checkpoint):
    path, cap = checkpoint
    placed = load_model(str(path), need_tokenizer=False, device_map="auto", max_memory=cap)
    layers = placed.model.model.layers
    with pytest.raises(SwapKLError, match="offloaded to CPU or disk cannot be copied"):
        averaged_block(layers[N_LAYERS - 1], layers[N_LAYERS - 2])


def test_bad_placement_options_are_named(checkpoint):
    path, _ = checkpoint
    with pytest.raises(SwapKLError, match="unknown device_map 'everywhere'"):
        load_model(str(path), device_map="everywhere")
    with pytest.raises(SwapKLError, match="max_memory and offload_folder need device_map"):
        load_model(str(path), max_memory={"cpu": "1GiB"})
    with pytest.raises(SwapKLError, match="device 'cpu' and device_map 'auto' both place the model"):
        load_model(str(path), device="cpu", device_map="auto")
    with pytest.raises(SwapKLError, match="max_memory device 'gpu0' is not a GPU index"):
        load_model(str(path), device_map="auto", max_memory={"gpu0": "1GiB"})


@pytest.mark.slow
def test_relevance_with_half_the_blocks_on_disk_equals_the_single_device_run(tmp_path):
    from test_relevance import _saved_model, _tasks

    from swapkl.relevance.accrel import run_relevance
    from swapkl.relevance.relevance_jobs import RelevanceJob

    src = _saved_model(tmp_path)
    tasks = [t.yaml_path for t in _tasks(tmp_path / "tasks")]
    n = len(load_model(str(src), device="cpu", need_tokenizer=False).model.model.layers)
    out = {}
    for name, kw in (("single", dict(device="cpu")),
                     ("placed", dict(placement=dict(device_map="auto", max_memory={"cpu": 60_000})))):
        out[name] = tmp_path / f"{name}.parquet"
        run_relevance(RelevanceJob(model=str(src), task_files=tasks, out=str(out[name]), label="tiny",
                                   revision_label="final", **kw))
    placed = pd.read_parquet(out["placed"])
    pd.testing.assert_frame_equal(pd.read_parquet(out["single"]), placed, check_exact=True)
    from swapkl.tables import provenance

    layout = provenance.read(str(out["placed"]))["device_map"]
    assert _block_devices(layout, n).count("disk") >= 1 and len(placed) > 0


@pytest.mark.slow
def test_pruning_with_a_device_map(tmp_path):
    """Placed by accelerate (every block in CPU memory) the pruning table is the single-device one; with
    offloaded blocks the guides that copy or differentiate blocks stop with a clear error instead of using
    absent weights."""
    from test_perplexity import TEXT, save_tiny

    from swapkl.data.data_spec import DataSpec
    from swapkl.probes.probe import run_probe
    from swapkl.probes.probe_jobs import ProbeJob
    from swapkl.pruning.prune import run_pruning
    from swapkl.pruning.prune_jobs import PruneJob

    save_tiny(tmp_path / "model", "llama", n_layers=5, seed=5)
    np.save(tmp_path / "probe.npy", random_tokens(33, 4, 10, seed=21).numpy())
    np.save(tmp_path / "calib.npy", random_tokens(33, 4, 10, seed=22).numpy())
    (tmp_path / "eval.txt").write_text(TEXT)
    probe, rep = tmp_path / "probe.parquet", tmp_path / "repr.parquet"
    run_probe(ProbeJob(model=str(tmp_path / "model"), out=str(probe), pairs="all",
                       data=DataSpec(tokens=str(tmp_path / "probe.npy")),
                       device="cpu", repr_out=str(rep)))
    kw = dict(budgets=[1, 2], eval_data=dict(text_file=str(tmp_path / "eval.txt"), window=16, stride=8, max_words=40),
              calib_data=DataSpec(tokens=str(tmp_path / "calib.npy")), n_random=2, batch_size=4)
    tables = {}
    for name, extra in (("single", dict(device="cpu")), ("placed", dict(placement=dict(device_map="auto")))):
        tables[name] = tmp_path / f"{name}.parquet"
        run_pruning(PruneJob(model=str(tmp_path / "model"), probe_files=[probe], repr_file=str(rep),
                             out=str(tables[name]), **kw, **extra))
    cols = ["guide", "budget", "random_draw", "removed_layers", "ppl", "kl_mean", "window_nll_sum"]
    single, placed = (pd.read_parquet(tables[k])[cols] for k in ("single", "placed"))
    pd.testing.assert_frame_equal(single, placed, check_exact=True)
    with pytest.raises(SwapKLError, match="offloaded to CPU or disk"):
        run_pruning(PruneJob(model=str(tmp_path / "model"), probe_files=[probe], repr_file=str(rep),
                             out=str(tmp_path / "x.parquet"), **kw,
                             placement=dict(device_map="auto", max_memory={"cpu": 40_000})))
    assert not (tmp_path / "x.parquet").exists()
