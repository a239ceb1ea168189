"""The paper's weight-changing probes as its config entries run them (GPT-2-Medium-paper-merge and
GPT-2-Medium-paper-heads of config.yaml: a JSON Lines prompt file, the first n prompts, each cut to seq_len
tokens, last-token KL averaged over prompts, protocols averaging_paper and head_interchange_paper), against an
independent computation written from the paper's scripts, not from swapkl's code:

* merge test (bisimulation_experiment.py): the state dicts of blocks a and b averaged in float32 and loaded into
  both blocks of a stock GPT-2 copy;
* head swap (head_bisimulation.py): head h's query, key and value columns of ``c_attn`` (weight and bias) and its
  rows of ``c_proj``'s weight copied from block b into block a (a < b), ``c_proj``'s bias left alone;
* each prompt tokenised alone, truncated to seq_len tokens, unpadded; the softmax of the last position's logits
  of the base and of the changed model, KL(p || q) in float64; the mean over prompts.

Tolerance as in test_paper_kl.py (rtol 1e-4: swapkl's float32 KL over a 97-entry vocabulary against float64 of
the same logits, which agree to float32 rounding); the all-position KL, checked to differ by far more on
some variant, would fail it.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pandas as pd
import pytest
import torch

import naive_reference as ref
from swapkl.data.data_spec import DataSpec
from swapkl.model.kl_options import KLOptions
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from test_perplexity import char_tokenizer
from tiny_models import tiny_model

RTOL = 1e-4
N_LAYERS, SEQ_LEN = 5, 24
PROMPTS = ["the cat sat on the mat.", "a dog ran\nand ran", "one two three four five six seven eight nine",
           "hello there, you", "xy"]  # the shortest window: 2 tokens (min_tokens >= 2)


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("paper_weights")
    model = tiny_model("gpt2", n_layers=N_LAYERS, seed=11)
    model.save_pretrained(d / "model")
    char_tokenizer().save_pretrained(d / "model")
    (d / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PROMPTS + ["not taken: beyond n_seqs"]))
    spec = DataSpec(text_file=str(d / "prompts.jsonl"), text_format="jsonl", selection="first",
                    n_seqs=len(PROMPTS), seq_len=SEQ_LEN, min_tokens=2)
    out = d / "probe.parquet"
    run_probe(ProbeJob(model=str(d / "model"), out=str(out), pairs="within:2", data=spec, device="cpu",
                       protocols="averaging_paper,head_interchange_paper", kl_options=KLOptions(positions="last",
                                                                                                 average="prompts")))
    return model.eval(), pd.read_parquet(out)


def _averaged(model, a: int, b: int):
    changed = copy.deepcopy(model)
    blocks = changed.transformer.h
    sa, sb = blocks[a].state_dict(), blocks[b].state_dict()
    merged = {k: 0.5 * (sa[k].float() + sb[k].float()) for k in sa}
    blocks[a].load_state_dict(merged)
    blocks[b].load_state_dict(merged)
    return changed


def _head_copied(model, a: int, b: int, h: int):
    changed = copy.deepcopy(model)
    width = model.config.n_embd
    d = width // model.config.n_head
    cols = [slice(third * width + h * d, third * width + (h + 1) * d) for third in range(3)]  # q, k, v
    block_a, block_b = changed.transformer.h[a].attn, changed.transformer.h[b].attn
    with torch.no_grad():
        for c in cols:
            block_a.c_attn.weight[:, c] = block_b.c_attn.weight[:, c]
            block_a.c_attn.bias[c] = block_b.c_attn.bias[c]
        block_a.c_proj.weight[h * d:(h + 1) * d, :] = block_b.c_proj.weight[h * d:(h + 1) * d, :]
    return changed


def _paper_kl(model, changed) -> tuple[float, float]:
    """(mean over prompts of the last-token KL, mean over prompts of the all-position KL)."""
    tok = char_tokenizer()
    last, every = [], []
    for p in PROMPTS:
        ids = torch.tensor([tok(p, add_special_tokens=False)["input_ids"][:SEQ_LEN]])
        with torch.no_grad():
            kl = ref.kl_per_position(model(input_ids=ids).logits, changed(input_ids=ids).logits)[0]
        last.append(float(kl[-1]))
        every.append(float(kl.mean()))
    return float(np.mean(last)), float(np.mean(every))


def test_the_merge_entry_is_the_paper_merge_test(setup):
    model, df = setup
    rows = df[df["protocol"] == "averaging_paper"]
    assert sorted(zip(rows["layer_i"], rows["layer_j"])) == [(i, j) for i in range(N_LAYERS)
                                                             for j in range(i + 1, min(i + 3, N_LAYERS))]
    assert (rows["n_seqs"] == len(PROMPTS)).all() and (rows["n_tokens"] == len(PROMPTS)).all()
    alls = []
    for _, row in rows.iterrows():
        last, every = _paper_kl(model, _averaged(model, int(row["layer_i"]), int(row["layer_j"])))
        assert row["kl_mean"] == pytest.approx(last, rel=RTOL)
        alls.append(every)
    assert np.max(np.abs(np.array(alls) / rows["kl_mean"].to_numpy() - 1)) > 100 * RTOL  # all positions differ


def test_the_head_entry_is_the_paper_one_direction_head_swap(setup):
    model, df = setup
    rows = df[df["protocol"] == "head_interchange_paper"]
    assert len(rows) == 7 * model.config.n_head  # 4 adjacent + 3 distance-2 pairs, every head
    alls = []
    for _, row in rows.iterrows():
        a, b, h = int(row["layer_i"]), int(row["layer_j"]), int(row["head"])
        last, every = _paper_kl(model, _head_copied(model, a, b, h))
        assert row["kl_mean"] == pytest.approx(last, rel=RTOL), (a, b, h)
        alls.append(every)
    assert np.max(np.abs(np.array(alls) / rows["kl_mean"].to_numpy() - 1)) > 100 * RTOL  # all positions differ


def _weights_loaded(model, src: int, tgt: int):
    """The paper's replacement (bisimulation_experiment.py): block ``src``'s state dict loaded into block ``tgt``."""
    changed = copy.deepcopy(model)
    changed.transformer.h[tgt].load_state_dict(changed.transformer.h[src].state_dict())
    return changed


def test_the_pair_entry_is_the_paper_distance_run_and_laco_orders_by_it(setup, tmp_path):
    """GPT-2-Medium-paper-pairs (the distances of the paper's sorted_pairs.csv, which its LaCo ordered pairs by):
    the entry's prompt and KL settings on a tiny GPT-2; each adjacent pair's distance is the max over both
    directions of the mean over prompts of the last-token KL, and laco_paper merges in that order."""
    import yaml
    from pathlib import Path

    from swapkl.pruning.guides.laco import laco_pairs
    from swapkl.pruning.selection import pair_distances

    entry = yaml.safe_load((Path(__file__).resolve().parents[1] / "config.yaml").read_text())["models"][
        "GPT-2-Medium-paper-pairs"]
    data = entry["data"]
    assert data["text_file"] == "resources/paper/gpt2_pair_prompts_200.jsonl" and data["n_seqs"] == 200
    assert data["seq_len"] == 128 and "padding" not in data and entry["pair_sets"] == ["adjacent"]
    # the paper loaded block src's weights into slot tgt's module; swapkl runs block src's module at slot tgt:
    # the same computation unless attention depends on the module's layer index, which GPT-2-Medium's does not
    # (scale_attn_by_inverse_layer_idx false, unlike the tiny model of the other tests)
    from transformers import GPT2LMHeadModel

    cfg = copy.deepcopy(setup[0].config)
    cfg.scale_attn_by_inverse_layer_idx = False
    model = GPT2LMHeadModel(cfg).eval()
    model.load_state_dict(setup[0].state_dict())
    d = tmp_path
    model.save_pretrained(d / "model")
    char_tokenizer().save_pretrained(d / "model")
    (d / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    spec = DataSpec(text_file=str(d / "prompts.jsonl"), text_format=data["text_format"],
                    selection=data["selection"], n_seqs=len(PROMPTS), seq_len=SEQ_LEN, min_tokens=data["min_tokens"])
    out = d / "probe.parquet"
    run_probe(ProbeJob(model=str(d / "model"), out=str(out), pairs="adjacent", data=spec, device="cpu",
                       protocols=("replacement", "interchange"), kl_options=KLOptions(**entry["kl"])))
    df = pd.read_parquet(out)
    want, alls = {}, []
    for i in range(N_LAYERS - 1):
        directions = [_paper_kl(model, _weights_loaded(model, src, tgt)) for src, tgt in ((i + 1, i), (i, i + 1))]
        want[(i, i + 1)] = max(last for last, _ in directions)
        alls.append(max(every for _, every in directions))
    got = pair_distances(df, "replacement_max")
    assert got.keys() == want.keys()
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=RTOL), k
    assert np.max(np.abs(np.array(alls) / np.array([got[k] for k in want]) - 1)) > 100 * RTOL  # all positions differ
    ordered = sorted(want, key=lambda k: (want[k], k))
    assert laco_pairs(got, 1) == [ordered[0]]
    assert laco_pairs(got, 2)[0] == ordered[0]
