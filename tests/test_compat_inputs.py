"""The paper-compatibility input settings against direct computations: prompts from a file
right-padded with padding counted (no attention mask), and the BOS token prepended where the
tokenizer adds one by default.

Tolerance: the probe and the reference run the same float32 weights; swapkl reduces the KL in
float32 over the 97-entry vocabulary of the tiny models, the reference in float64 from float32
logits. Per position the float32 reduction errs by at most about V * eps32 * max|log p - log q|
relative to the terms (97 * 6e-8 * ~10 = 6e-5 of the largest term, a bound far above the typical
random-walk error sqrt(V) * eps32); the KL values here are O(0.1-1) sums of O(V) positive-dominant
terms, so a relative tolerance of 1e-4 on the means covers the bound with margin while a wrong
position set (padding dropped or added, a missing BOS) changes the means by percents.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
import torch

import naive_reference as ref
from swapkl.tables import provenance
from swapkl.data.data_spec import DataSpec
from swapkl.data.windows import default_bos, load_windows, tokenize_text
from swapkl.errors import SwapKLError
from swapkl.pruning.perplexity import load_eval_windows
from swapkl.pruning.eval_spec import EvalSpec
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from test_perplexity import char_tokenizer
from tiny_models import tiny_model

RTOL = 1e-4
N_LAYERS = 4
PROMPTS = ["the cat sat", "a dog ran far away", "", "one two three four five six", "hello there"]


def bos_tokenizer():
    """The character tokenizer plus a BOS token that it adds by default (like Llama-3's)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    chars = list("abcdefghijklmnopqrstuvwxyz .,\n")
    vocab = {"<pad>": 0, "<unk>": 1, **{c: i + 2 for i, c in enumerate(chars)}, "<s>": 40}
    t = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    t.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    t.post_processor = processors.TemplateProcessing(single="<s> $A", special_tokens=[("<s>", 40)])
    return PreTrainedTokenizerFast(tokenizer_object=t, pad_token="<pad>", unk_token="<unk>", bos_token="<s>")


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("compat")
    model = tiny_model("llama", n_layers=N_LAYERS, seed=11)
    model.save_pretrained(d / "plain")
    char_tokenizer().save_pretrained(d / "plain")
    model.save_pretrained(d / "bos")
    bos_tokenizer().save_pretrained(d / "bos")
    (d / "prompts.txt").write_text("\n".join(PROMPTS) + "\n")
    return d, model.eval()


def _probe(model_dir, which, spec, tmp_path):
    out = tmp_path / f"{which}.parquet"
    run_probe(ProbeJob(model=str(model_dir / which), out=str(out), pairs="adjacent", data=spec, device="cpu",
                       protocols=("interchange",)))
    df = pd.read_parquet(out)
    return df[df["protocol"] == "interchange"].set_index(["layer_i", "layer_j"]), provenance.read(str(out))


def _direct_kl(model, ids, mask, i, j):
    base = ref.logits(model, ids, mask)
    var = ref.logits(model, ids, mask, ref.interchange_order(int(i), int(j), N_LAYERS))
    kl = ref.kl_per_position(base, var)
    return float((kl * mask).sum() / mask.sum())


def test_padding_counted_matches_an_unmasked_forward_over_every_position(model_dir, tmp_path):
    d, model = model_dir
    seq_len = 24  # the prompts have 11 to 27 characters: most windows are largely padding
    spec = DataSpec(text_file=str(d / "prompts.txt"), text_format="lines", padding="counted", n_seqs=4,
                    seq_len=seq_len, min_tokens=2)
    rows, prov = _probe(d, "plain", spec, tmp_path)
    assert prov["data_spec"]["padding"] == "counted" and prov["data_spec"]["text_format"] == "lines"
    # the paper's inputs built by hand: every non-empty line, cut to seq_len, right-padded with <pad> = 0
    tok = char_tokenizer()
    ids = torch.zeros(4, seq_len, dtype=torch.long)
    for r, p in enumerate([p for p in PROMPTS if p]):
        t = tok(p, add_special_tokens=False)["input_ids"][:seq_len]
        ids[r, : len(t)] = torch.tensor(t)
    ones = torch.ones_like(ids)
    masked = (ids != 0).long()
    for (i, j), r in rows.iterrows():
        want = _direct_kl(model, ids, ones, i, j)
        assert r["kl_mean"] == pytest.approx(want, rel=RTOL)
        assert r["n_tokens"] == 4 * seq_len  # padding counted as positions
        # and the clean (masked) protocol really measures something else on the same prompts
        assert abs(_direct_kl(model, ids, masked, i, j) - want) > 100 * RTOL * want
    clean, _ = _probe(d, "plain", DataSpec(text_file=str(d / "prompts.txt"), text_format="lines", n_seqs=4,
                                            seq_len=seq_len, min_tokens=2), tmp_path / "clean")
    for (i, j), r in clean.iterrows():
        assert r["kl_mean"] == pytest.approx(_direct_kl(model, ids, masked, i, j), rel=RTOL)
        assert r["n_tokens"] == int(masked.sum())


def test_bos_prepended_where_the_tokenizer_adds_one(model_dir, tmp_path):
    d, model = model_dir
    assert default_bos(char_tokenizer()) is None
    assert default_bos(bos_tokenizer()) == 40
    assert tokenize_text(bos_tokenizer(), "ab") == [40, 2, 3]
    (tmp_path / "text.txt").write_text("the cat sat on the mat\n\na dog ran far away from home")
    spec = DataSpec(text_file=str(tmp_path / "text.txt"), n_seqs=2, seq_len=16, min_tokens=4)
    rows, prov = _probe(d, "bos", spec, tmp_path)
    assert prov["bos_prepended"] is True and prov["bos_token_id"] == 40
    _, plain_prov = _probe(d, "plain", spec, tmp_path / "plain")
    assert plain_prov["bos_prepended"] is False and plain_prov["bos_token_id"] is None
    tok = char_tokenizer()
    ids = torch.zeros(2, 16, dtype=torch.long)
    mask = torch.zeros_like(ids)
    for r, p in enumerate(["the cat sat on the mat", "a dog ran far away from home"]):
        t = [40] + tok(p, add_special_tokens=False)["input_ids"]
        t = t[:16]
        ids[r, : len(t)] = torch.tensor(t)
        mask[r, : len(t)] = 1
    w = load_windows(spec, bos_tokenizer())
    assert (w.input_ids == ids.numpy()).all() and (w.attention_mask == mask.numpy()).all()
    for (i, j), r in rows.iterrows():
        assert r["kl_mean"] == pytest.approx(_direct_kl(model, ids, mask, i, j), rel=RTOL)
    # perplexity text: one BOS at the start of the token stream
    ew = load_eval_windows(EvalSpec(text_file=str(tmp_path / "text.txt"), window=8, stride=4, max_words=None),
                           bos_tokenizer(), 64)
    assert ew.input_ids[0, 0] == 40 and (ew.input_ids[1:] == 40).sum() == 0


def test_bad_compat_settings_are_clear_errors(model_dir):
    d, _ = model_dir
    with pytest.raises(SwapKLError, match="padding must be 'masked' or 'counted'"):
        load_windows(DataSpec(text_file=str(d / "prompts.txt"), padding="none"), char_tokenizer())
    with pytest.raises(SwapKLError, match="text_format must be"):
        load_windows(DataSpec(text_file=str(d / "prompts.txt"), text_format="csv"), char_tokenizer())
    np.save(d / "t.npy", np.zeros((2, 4), dtype=np.int64))
    with pytest.raises(SwapKLError, match="padding: counted applies to text sources"):
        load_windows(DataSpec(tokens=str(d / "t.npy"), padding="counted"))
