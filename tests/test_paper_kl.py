"""The probe's KL options (swapkl.model.kl_options.KLOptions) against independent computations written from the paper's
description: last-token KL on unpadded prompts run one at a time, and the Qwen3-8B reduction (each
position's KL clamped at 0, masked mean per prompt, then the mean over prompts).

The references run the stock transformers forward with the model's own block list reordered and compute
KL in float64 from its logits. Tolerance as in test_compat_inputs.py (rtol 1e-4: swapkl's float32
reduction over a 97-entry vocabulary against float64), while the other averaging or the other positions
change the means by far more (checked in each test).
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import naive_reference as ref
from swapkl.tables import provenance
from swapkl.probes.aggregate_inputs import read_probe_file
from swapkl.data.data_spec import DataSpec
from swapkl.errors import SwapKLError
from swapkl.model.kl_options import KLOptions
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from test_perplexity import char_tokenizer
from tiny_models import tiny_model

RTOL = 1e-4
N_LAYERS = 4
PROMPTS = ["the cat sat on the mat", "a dog ran", "one two three four five six seven", "hello there you"]


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("paper_kl")
    model = tiny_model("qwen3", n_layers=N_LAYERS, seed=8)
    model.save_pretrained(d / "model")
    char_tokenizer().save_pretrained(d / "model")
    (d / "prompts.txt").write_text("\n".join(PROMPTS) + "\n")
    return d, model.eval()


def _probe(d, tmp_path, kl_options, protocols=("replacement", "interchange")):
    out = tmp_path / "probe.parquet"
    spec = DataSpec(text_file=str(d / "prompts.txt"), text_format="lines", selection="first", n_seqs=4,
                    seq_len=40, min_tokens=2)
    run_probe(ProbeJob(model=str(d / "model"), out=str(out), pairs="adjacent", data=spec, device="cpu",
                       protocols=protocols,
                       kl_options=kl_options))
    return pd.read_parquet(out), out


def _order(row):
    i, j = int(row["layer_i"]), int(row["layer_j"])
    return (ref.replacement_order(i, j, N_LAYERS) if row["protocol"] == "replacement"
            else ref.interchange_order(i, j, N_LAYERS))


def test_last_token_kl_is_the_kl_at_the_end_of_each_unpadded_prompt(setup, tmp_path):
    d, model = setup
    df, out = _probe(d, tmp_path, KLOptions(positions="last"))
    assert provenance.read(str(out))["kl_options"] == {"positions": "last", "clamp": False, "average": "tokens"}
    tok = char_tokenizer()
    for _, row in df[df["protocol"] != "base"].iterrows():
        kls, alls = [], []
        for p in PROMPTS:  # the paper: one prompt at a time, unpadded, logits[0, -1]
            ids = torch.tensor([tok(p, add_special_tokens=False)["input_ids"]])
            base = ref.logits(model, ids, torch.ones_like(ids))
            var = ref.logits(model, ids, torch.ones_like(ids), _order(row))
            kl = ref.kl_per_position(base, var)[0]
            kls.append(float(kl[-1]))
            alls.append(float(kl.mean()))
        assert row["n_tokens"] == len(PROMPTS) and list(row["seq_tokens"]) == [1] * len(PROMPTS)
        assert row["kl_mean"] == pytest.approx(np.mean(kls), rel=RTOL)
        assert abs(np.mean(alls) - np.mean(kls)) > 100 * RTOL * np.mean(kls)  # all positions: another number
        assert np.isfinite(row["nll_mean"])  # the NLL keeps every position


def test_qwen3_reduction_clamps_and_averages_per_prompt(setup, tmp_path):
    d, model = setup
    df, out = _probe(d, tmp_path, KLOptions(clamp=True, average="prompts"))
    tok = char_tokenizer()
    seqs = [tok(p, add_special_tokens=False)["input_ids"] for p in PROMPTS]
    ids = torch.zeros(len(seqs), 40, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for r, s in enumerate(seqs):
        ids[r, : len(s)] = torch.tensor(s)
        mask[r, : len(s)] = 1
    base = ref.logits(model, ids, mask)
    probe = read_probe_file(str(out))  # what the aggregate reads: prompt means with weight 1
    gaps = []
    for k, (_, row) in enumerate(df.iterrows()):
        if row["protocol"] == "base":
            continue
        kl = ref.kl_per_position(base, ref.logits(model, ids, mask, _order(row))).clamp(min=0)
        per_prompt = (kl * mask).sum(1) / mask.sum(1)
        want = float(per_prompt.mean())
        token_weighted = float((kl * mask).sum() / mask.sum())
        assert row["kl_mean"] == pytest.approx(want, rel=RTOL)
        gaps.append(abs(token_weighted - want) / want)
        assert row["n_tokens"] == int(mask.sum())  # the file keeps the token sums
        assert probe.seq_kl[k].sum() / probe.seq_tokens[k].sum() == pytest.approx(want, rel=RTOL)
    assert max(gaps) > 100 * RTOL  # the token-weighted mean is another number


def test_bad_kl_options_are_clear_errors():
    with pytest.raises(SwapKLError, match="KL positions must be 'all' or 'last'"):
        KLOptions(positions="first")
    with pytest.raises(SwapKLError, match="KL average must be 'tokens' or 'prompts'"):
        KLOptions(average="windows")
