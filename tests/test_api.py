"""The Python API (swapkl.api): the README's example as written, its numbers against the stock transformers
forward on a reordered ``nn.ModuleList`` (tests/naive_reference.py), and its one-line errors."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

import naive_reference as ref
from bad_inputs_doc import assert_listed
import swapkl
from swapkl.errors import SwapKLError

REPO = Path(__file__).resolve().parents[1]
# The same tolerance analysis as tests/test_engine.py (same float32 modules and tokens, 4 blocks of width 32,
# different batch shapes and KL summaries): a per-sequence KL mean agrees to ~1e-6 relative; 1e-5 leaves margin.
RTOL = 1e-5


def readme_example() -> str:
    """The ```python block of the README's "Python API" section."""
    text = (REPO / "README.md").read_text()
    section = text.split("\n## Python API\n", 1)[1].split("\n## ", 1)[0]
    block = re.search(r"^```python\n(.*?)^```", section, re.M | re.S)
    assert block, "the README's Python API section has no python block"
    return block.group(1)


@pytest.fixture(scope="module")
def example(tmp_path_factory):
    names: dict = {}
    exec(compile(readme_example(), "README.md (Python API)", "exec"), names)
    return names


def test_readme_example_is_at_most_ten_lines():
    assert len(readme_example().strip().splitlines()) <= 10


def _reference(model, windows, order) -> tuple[torch.Tensor, float]:
    """Per-window KL means and the token-weighted KL of the variant running blocks ``order``."""
    ids = torch.as_tensor(windows)
    mask = torch.ones_like(ids)
    want = ref.per_sequence(model, ids, mask, order)
    return want.kl_mean, want.kl_grand


def test_probe_rows_match_the_stock_forward(example):
    model, windows, kl = example["model"], example["windows"], example["kl"]
    n = model.config.num_hidden_layers
    assert isinstance(kl, pd.DataFrame) and set(kl["n_layers"]) == {n}
    orders = {"replacement": lambda i, j: ref.replacement_order(i, j, n),
              "interchange": lambda i, j: ref.interchange_order(i, j, n),
              "deletion": lambda i, _: ref.deletion_order(i, n)}
    full = swapkl.probe(model, windows, pairs="all", per_window=True)  # the README's rows, with the per-window sums
    pd.testing.assert_frame_equal(full[list(kl.columns)], kl, check_exact=True)
    checked = 0
    for row in full[full["protocol"] != "base"].itertuples():
        j = None if pd.isna(row.layer_j) else int(row.layer_j)
        per_window, grand = _reference(model, windows, orders[row.protocol](int(row.layer_i), j))
        got = np.asarray(row.seq_kl_sum) / np.asarray(row.seq_tokens)
        err = np.max(np.abs(got - per_window.numpy()) / per_window.numpy())
        assert err <= RTOL, (row.protocol, row.layer_i, row.layer_j, err)
        assert grand > 1e-3  # the variant changes the output: the comparison can fail
        checked += 1
    assert checked == n * (n - 1) + n * (n - 1) // 2 + n  # pairs "all": both replacement directions


def test_aggregate_pairs_are_the_reference_distances(example):
    model, windows, pairs = example["model"], example["windows"], example["pairs"]
    n = model.config.num_hidden_layers
    assert len(pairs) == n * (n - 1) // 2
    for row in pairs.itertuples():
        i, j = int(row.layer_i), int(row.layer_j)
        d_inter = _reference(model, windows, ref.interchange_order(i, j, n))[1]
        d_repl = max(_reference(model, windows, ref.replacement_order(a, b, n))[1] for a, b in ((i, j), (j, i)))
        assert row.d_inter == pytest.approx(d_inter, rel=RTOL)
        assert row.d_repl_max == pytest.approx(d_repl, rel=RTOL)
        assert row.ratio_ir == pytest.approx(d_inter / d_repl, rel=2 * RTOL)


def test_prune_removes_the_block_the_interchange_guide_picks(example):
    """The guide's rule written out: a block's score is its smallest interchange KL with any partner (both
    blocks of the closest pair share it), ties broken by the lower deletion KL; budget 1 removes the first
    block. The pruned model's logits are the stock forward without that block."""
    model, windows, smaller = example["model"], example["windows"], example["smaller"]
    n = model.config.num_hidden_layers
    score = [min(_reference(model, windows, ref.interchange_order(min(i, j), max(i, j), n))[1]
                 for j in range(n) if j != i) for i in range(n)]
    deletion = [_reference(model, windows, ref.deletion_order(i, n))[1] for i in range(n)]
    block = min(range(n), key=lambda i: (score[i], deletion[i], i))
    assert swapkl.select_blocks(example["kl"], guide="interchange", budget=1) == [block]
    assert smaller.config.num_hidden_layers == n - 1
    ids = torch.as_tensor(windows)
    with torch.inference_mode():
        got = smaller(input_ids=ids, use_cache=False).logits
    want = ref.logits(model, ids, torch.ones_like(ids), ref.deletion_order(block, n))
    torch.testing.assert_close(got, want)


def test_probe_of_a_checkpoint_folder_equals_the_loaded_model(example, tmp_path):
    model, windows, kl = example["model"], example["windows"], example["kl"]
    model.save_pretrained(tmp_path / "ckpt")
    again = swapkl.probe(str(tmp_path / "ckpt"), windows, pairs="all", name=kl["model"].iloc[0],
                         folder=str(tmp_path / "out"))
    cols = ["protocol", "layer_i", "layer_j", "kl_mean", "n_tokens"]
    pd.testing.assert_frame_equal(again[cols], kl[cols])
    unnamed = swapkl.probe(str(tmp_path / "ckpt"), windows, pairs="adjacent", protocols="interchange",
                           folder=str(tmp_path / "unnamed"))
    assert set(unnamed["model"]) == {"ckpt"}  # the folder's name, not its absolute path (issue 50)


def test_bad_inputs_are_one_line_errors(example, tmp_path):
    model, windows, kl = example["model"], example["windows"], example["kl"]
    with pytest.raises(SwapKLError, match="windows must be integer token ids"):
        swapkl.probe(model, np.zeros((4, 8)), folder=str(tmp_path / "a"))
    with pytest.raises(SwapKLError, match="outside the model vocabulary"):
        swapkl.probe(model, windows + 1000, folder=str(tmp_path / "b"))
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "probe.parquet").write_text("not swapkl's")
    with pytest.raises(SwapKLError, match="already holds 'probe.parquet'"):
        swapkl.probe(model, windows, folder=str(tmp_path / "mine"))
    assert (tmp_path / "mine" / "probe.parquet").read_text() == "not swapkl's"
    with pytest.raises(SwapKLError, match="model must be a checkpoint folder"):
        swapkl.probe(object(), windows)
    with pytest.raises(SwapKLError, match="give the DataFrame that swapkl.probe returned"):
        swapkl.aggregate(pd.DataFrame(kl))
    with pytest.raises(SwapKLError, match="budget 3 is infeasible"):
        swapkl.select_blocks(kl, budget=3)
    with pytest.raises(SwapKLError, match="run `swapkl prune` for it"):
        swapkl.select_blocks(kl, guide="sleb_iterative")
    with pytest.raises(SwapKLError, match="unknown guide"):
        swapkl.select_blocks(kl, guide="nope")


def test_import_swapkl_does_not_import_torch():
    code = "import sys, swapkl; print('torch' in sys.modules, callable(swapkl.probe), 'torch' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["False", "True", "True"]


def test_no_workflow_script_or_swapkl_module_reads_the_api_off_the_package():
    """The API is imported on first use (swapkl.__getattr__); the workflow's environments need not provide what it
    imports (tests/env_imports.py skips that function) only while no script or module reads those names."""
    from swapkl import API

    names = "|".join(API)
    pattern = re.compile(rf"from swapkl import [^\n]*\b({names})\b|\bswapkl\.({names})\b")
    files = [*(REPO / "workflow" / "scripts").glob("*.py"), *(REPO / "src" / "swapkl").rglob("*.py")]
    own = {REPO / "src" / "swapkl" / "api.py", REPO / "src" / "swapkl" / "__init__.py"}
    readers = [str(f.relative_to(REPO)) for f in files if f not in own and pattern.search(f.read_text())]
    assert readers == []


def test_an_edited_or_filtered_frame_is_refused(example):
    """The aggregate and the guides read the probe's whole table; a frame whose rows differ (filtered with pandas, so its
    attrs survive, or edited) is refused instead of answered from rows it no longer holds (issue 49, item 2)."""
    kl = example["kl"]
    assert swapkl.select_blocks(kl.copy(), budget=1) == swapkl.select_blocks(kl, budget=1)  # a copy is the table
    blocks = swapkl.select_blocks(kl, budget=1)
    without = kl[(kl["layer_i"] != blocks[0]) & (kl["layer_j"] != blocks[0])]
    edited = kl.copy()
    edited.loc[edited.index[1], "kl_mean"] = 0.0
    for frame, rows in ((without, len(without)), (edited, len(kl))):
        assert frame.attrs["swapkl"] == kl.attrs["swapkl"]
        message = rf"^the DataFrame differs from the probe table its attrs hold \({rows} rows given, {len(kl)} probed\)"
        for call in (lambda f: swapkl.aggregate(f), lambda f: swapkl.select_blocks(f, budget=1),
                     lambda f: swapkl.prune(example["model"], f, budget=1)):
            with pytest.raises(SwapKLError, match=message) as err:
                call(frame)
            if rows != len(kl):  # placeholders of different values
                assert_listed(str(err.value), given=str(rows), rows=str(len(kl)))


def test_prune_refuses_a_model_the_table_was_not_measured_on(example):
    """Another block count, and the probed model changed in place afterwards (issue 49, item 2)."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    model, kl = example["model"], example["kl"]
    six = GPTNeoXForCausalLM(GPTNeoXConfig(num_hidden_layers=6, hidden_size=32, num_attention_heads=4,
                                           intermediate_size=64, vocab_size=128))
    with pytest.raises(SwapKLError, match=r"^the model has 6 blocks, but the table was measured on a model of 4") as err:
        swapkl.prune(six, kl)
    assert_listed(str(err.value))
    changed = copy.deepcopy(model)
    with torch.no_grad():
        changed.gpt_neox.layers[2].mlp.dense_h_to_4h.weight[0, 0] += 1e-3
    with pytest.raises(SwapKLError, match=r"^the model's tensor 'gpt_neox\.layers\.2\.mlp\.dense_h_to_4h\.weight' "
                                          r"differs from the one the table was measured on") as err:
        swapkl.prune(changed, kl)
    assert_listed(str(err.value))
    other = GPTNeoXForCausalLM(GPTNeoXConfig(num_hidden_layers=4, hidden_size=32, num_attention_heads=4,
                                             intermediate_size=64, vocab_size=128, tie_word_embeddings=True))
    with pytest.raises(SwapKLError, match=r"^the model lacks tensor 'lm_head\.weight' of the model the table was "
                                          r"measured on \(1 tensor name\(s\) differ\)") as err:
        swapkl.prune(other, kl)
    assert_listed(str(err.value))


def test_prune_leaves_the_models_modes_as_they_were(example):
    model, kl = example["model"], example["kl"]
    model.train()
    model.gpt_neox.layers[1].eval()
    try:
        swapkl.prune(model, kl, budget=1)
        assert model.training and model.gpt_neox.layers[0].training and not model.gpt_neox.layers[1].training
    finally:
        model.eval()


def test_a_refused_probe_leaves_nothing_and_names_the_windows_argument(example, tmp_path, monkeypatch):
    model, windows = example["model"], example["windows"]
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    with pytest.raises(SwapKLError, match=rf"^token id {int(windows.max()) + 1000} in the windows argument is outside "
                                          r"the model vocabulary \[0, 128\)$") as err:
        swapkl.probe(model, windows + 1000)
    assert_listed(str(err.value), id=str(int(windows.max()) + 1000))
    assert list((tmp_path / "tmp").iterdir()) == []
    with pytest.raises(SwapKLError, match=r"^the windows argument has windows of 1 token; next-token KL needs at "
                                          r"least 2$") as err:
        swapkl.probe(model, windows[:, :1], folder=str(tmp_path / "given"))
    assert_listed(str(err.value))
    assert not (tmp_path / "given").exists()  # the call made it
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(SwapKLError, match="outside the model vocabulary"):
        swapkl.probe(model, windows + 1000, folder=str(tmp_path / "mine"))
    assert sorted(p.name for p in (tmp_path / "mine").iterdir()) == ["notes.txt"]
    again = swapkl.probe(model, windows, protocols="interchange", folder=str(tmp_path / "mine"))  # the retry works
    assert set(again["protocol"]) == {"base", "interchange"}


def test_other_api_inputs_are_one_line_errors(example, tmp_path):
    model, windows = example["model"], example["windows"]
    with pytest.raises(SwapKLError, match=r"^windows must be token ids \[n_windows, n_tokens\] of one length; their "
                                          r"lengths are 3, 4$") as err:
        swapkl.probe(model, [[1, 2, 3], [1, 2, 3, 4]], folder=str(tmp_path / "a"))
    assert_listed(str(err.value))
    from peft import LoraConfig, get_peft_model

    wrapped = get_peft_model(copy.deepcopy(model), LoraConfig(r=2, target_modules=["query_key_value"]))
    with pytest.raises(SwapKLError, match=r"^model is a peft-wrapped PeftModel: probe the merged model "
                                          r"\(model\.merge_and_unload\(\)\) or its base model$") as err:
        swapkl.probe(wrapped, windows, folder=str(tmp_path / "b"))
    assert_listed(str(err.value))
    assert not (tmp_path / "a").exists() and not (tmp_path / "b").exists()


def test_probe_writes_nothing_without_a_folder(tmp_path, monkeypatch):
    """A loaded model is probed where it is: no copy of its weights on disk, no temporary folder, no file
    (issue 50: the API saved the model, and left a swapkl-XXXX folder per call); a given folder gets the files."""
    from transformers import GPTNeoXConfig, GPTNeoXForCausalLM

    model = GPTNeoXForCausalLM(GPTNeoXConfig(num_hidden_layers=3, hidden_size=16, num_attention_heads=2,
                                             intermediate_size=32, vocab_size=64))
    windows = np.random.default_rng(0).integers(0, 64, size=(4, 16))
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    monkeypatch.chdir(tmp_path)

    def refuse(*args, **kwargs):
        raise AssertionError("the API saved the model")

    monkeypatch.setattr(model, "save_pretrained", refuse)
    kl = swapkl.probe(model, windows, pairs="adjacent")
    swapkl.aggregate(kl)
    swapkl.prune(model, kl, budget=1)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["tmp"] and list((tmp_path / "tmp").iterdir()) == []
    kept = swapkl.probe(model, windows, pairs="adjacent", folder=str(tmp_path / "kept"))
    swapkl.aggregate(kept)
    assert sorted(p.name for p in (tmp_path / "kept").iterdir()) == ["aggregate.parquet", "probe.parquet",
                                                                     "repr.parquet"]
    with pytest.raises(SwapKLError, match=r"already holds 'aggregate\.parquet'"):
        swapkl.aggregate(kept)  # never overwritten


def test_the_api_gives_the_command_lines_tables(example, tmp_path):
    """swapkl probe and swapkl aggregate on the same checkpoint and windows, run in this process (same kernels,
    same threads): the API's in-memory rows are the files' rows, per-window sums included, exactly."""
    from swapkl.cli import main
    from swapkl.probes.aggregate import read_aggregate

    model, windows, kl = example["model"], example["windows"], example["kl"]
    model.save_pretrained(tmp_path / "ckpt")
    np.save(tmp_path / "windows.npy", windows)
    label = kl["model"].iloc[0]
    assert main(["probe", "--model", str(tmp_path / "ckpt"), "--tokens", str(tmp_path / "windows.npy"),
                 "--pairs", "all", "--out", str(tmp_path / "probe.parquet"), "--repr-out",
                 str(tmp_path / "repr.parquet"), "--label", label]) == 0
    assert main(["aggregate", str(tmp_path / "probe.parquet"), "--repr", str(tmp_path / "repr.parquet"),
                 "--out", str(tmp_path / "aggregate.parquet")]) == 0
    full = swapkl.probe(model, windows, pairs="all", name=label, per_window=True)
    assert {"seq_kl_sum", "seq_tokens"} <= set(full.columns) and "seq_kl_sum" not in kl.columns
    pd.testing.assert_frame_equal(full, pd.read_parquet(tmp_path / "probe.parquet"), check_exact=True)
    pd.testing.assert_frame_equal(kl, full.drop(columns=[c for c in full.columns if c.startswith("seq_")]),
                                  check_exact=True)
    pd.testing.assert_frame_equal(swapkl.aggregate(kl), read_aggregate(tmp_path / "aggregate.parquet"),
                                  check_exact=True)


def test_the_pair_view_names_its_intervals(example):
    """kind="pair": the pair rows alone, with the columns they fill; the gap's interval is the aggregate's pair
    interval, d_inter's the interchange variant's (issue 50: pair rows showed kl_ci_low as NaN)."""
    kl = example["kl"]
    agg = swapkl.aggregate(kl)
    pairs = swapkl.aggregate(kl, kind="pair")
    assert set(pairs["kind"]) == {"pair"} and not pairs.isna().all().any()
    assert "kl_ci_low" not in pairs.columns and "metric" not in pairs.columns
    whole = agg[agg["kind"] == "pair"].reset_index(drop=True)
    np.testing.assert_array_equal(pairs["gap_ci_low"], whole["ci_low"])
    np.testing.assert_array_equal(pairs["gap_ci_high"], whole["ci_high"])
    inter = agg[(agg["kind"] == "directed") & (agg["protocol"] == "interchange")].set_index(["layer_i", "layer_j"])
    for row in pairs.itertuples():
        assert (row.d_inter_ci_low, row.d_inter_ci_high) == tuple(inter.loc[(row.layer_i, row.layer_j),
                                                                          ["kl_ci_low", "kl_ci_high"]])
        assert row.d_inter_ci_low < row.d_inter < row.d_inter_ci_high
    with pytest.raises(SwapKLError, match=r"^kind must be one of directed, pair, summary, repr"):
        swapkl.aggregate(kl, kind="pairs")


def test_probe_leaves_the_model_as_it_was(example):
    """The engines put the model in eval mode and reorder its blocks; afterwards its modes and tensors are
    as before."""
    from swapkl.model.weights_fingerprint import module_digests

    model, windows = example["model"], example["windows"]
    before = module_digests(model, torch.float32)
    blocks = list(model.gpt_neox.layers)
    model.train()
    model.gpt_neox.layers[1].eval()
    try:
        swapkl.probe(model, windows, pairs="adjacent", protocols="interchange")
        assert model.training and model.gpt_neox.layers[0].training and not model.gpt_neox.layers[1].training
        assert all(a is b for a, b in zip(model.gpt_neox.layers, blocks, strict=True))
        assert module_digests(model, torch.float32) == before
    finally:
        model.eval()


def test_a_loaded_model_is_neither_cast_nor_moved(example):
    model, windows = example["model"], example["windows"]
    with pytest.raises(SwapKLError, match=r"^dtype 'bfloat16', but the model's weights are float32: cast the model "
                                          r"yourself \(model\.to\(torch\.bfloat16\)\), or leave dtype out$") as err:
        swapkl.probe(model, windows, dtype="bfloat16")
    assert_listed(str(err.value))
    with pytest.raises(SwapKLError, match=r"^device 'cuda', but the model is on cpu: move it yourself") as err:
        swapkl.probe(model, windows, device="cuda")
    assert_listed(str(err.value))
    with pytest.raises(SwapKLError, match="device"):
        swapkl.probe(model, windows, device="gpu0")  # not a device name: swapkl's own error, not torch's
    with pytest.raises(SwapKLError, match="batch_size"):
        swapkl.probe(model, windows, batch_size=0)


def test_plot_draws_a_registered_figure_of_the_aggregate(example, tmp_path, monkeypatch):
    """swapkl.plot draws what `swapkl figures heatmaps` draws from the aggregate file: the same PNG bytes, from the
    frame in memory (no table is written on the way)."""
    from PIL import Image
    import swapkl.tables.parquet_io as parquet_io
    from swapkl.cli import main

    agg = swapkl.aggregate(example["kl"])
    with monkeypatch.context() as patch:
        def refuse(*args, **kwargs):
            raise AssertionError("plot wrote a table")
        patch.setattr(parquet_io, "write_parquets", refuse)
        image = swapkl.plot("heatmaps", agg, out=str(tmp_path / "api"))
    assert isinstance(image, Image.Image) and image.size[0] > 500
    assert (tmp_path / "api.pdf").exists()
    folder = tmp_path / "cli"
    folder.mkdir()
    kept = swapkl.probe(example["model"], example["windows"], pairs="all", name=example["kl"]["model"].iloc[0],
                        folder=str(folder))
    swapkl.aggregate(kept)
    model = example["kl"]["model"].iloc[0]
    assert main(["figures", "heatmaps", "--aggregate", str(folder / "aggregate.parquet"), "--model", model,
                 "--revision", "main", "--out", str(tmp_path / "cli_fig")]) == 0
    assert (tmp_path / "api.png").read_bytes() == (tmp_path / "cli_fig.png").read_bytes()
    with pytest.raises(SwapKLError, match=r"'.*api\.png' exists: give plot a new out"):
        swapkl.plot("heatmaps", agg, out=str(tmp_path / "api.png"))
    with pytest.raises(SwapKLError, match=r"^figure pruning-cost draws from .* besides the aggregate: draw it with "
                                          r"`swapkl figures pruning-cost`") as err:
        swapkl.plot("pruning_cost", agg)
    with pytest.raises(SwapKLError, match=r"^give plot the DataFrame that swapkl.aggregate returned"):
        swapkl.plot("heatmaps", swapkl.aggregate(example["kl"], kind="pair"))
    with pytest.raises(SwapKLError, match=r"^the aggregate has no model 'nope'"):
        swapkl.plot("heatmaps", agg, model="nope")
