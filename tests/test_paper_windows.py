"""The paper's probe inputs against independent computations written from the paper's description:
Pythia prompts right-padded to the window with end-of-text (id 0) and every position counted, the
first N prompts of a JSON Lines file, one-direction replacement KL averaged per prompt, and the
Qwen3-8B row rule.

The reference here builds the windows the way the paper's scripts describe them (a GPT-NeoX tokenizer
whose pad is set to its EOS, ``padding="max_length"``, truncation) and runs the stock transformers
forward without an attention mask, reordering the model's own block list. Tolerance as in
test_compat_inputs.py: the same float32 weights on both sides; swapkl reduces the KL in float32 over
a 260-entry vocabulary, the reference in float64, so the per-position relative error is bounded by
about V * eps32 * max|log p - log q| ~ 260 * 6e-8 * 10 = 1.6e-4 of the largest term and the means by
less; rtol 5e-4 covers that, while a pad of 1 instead of 0 moves the means by percents (checked).
"""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pytest
import torch

import naive_reference as ref
from swapkl.tables import provenance
from swapkl.cli import main
from swapkl.data.data_spec import DataSpec
from swapkl.data.windows import load_windows, select_windows
from swapkl.data.text_rules import paper_qwen3_items
from swapkl.errors import SwapKLError
from tiny_models import tiny_model

RTOL = 5e-4
N_LAYERS = 4
SEQ_LEN = 32
PROMPTS = ["The quick brown fox", "In the year 2050,\nmachines", "Stocks fell", "An unused fourth prompt",
           "and a fifth"]


def neox_tokenizer():
    """A byte-level GPT-NeoX tokenizer with Pythia's special-token layout: <|endoftext|> = 0 (BOS, EOS and
    UNK) and <|padding|> = 1, the 256 byte symbols after them, no merges."""
    from tokenizers import pre_tokenizers
    from transformers import GPTNeoXTokenizer

    vocab = {"<|endoftext|>": 0, "<|padding|>": 1}
    for k, ch in enumerate(sorted(pre_tokenizers.ByteLevel.alphabet())):
        vocab[ch] = k + 2
    return GPTNeoXTokenizer(vocab=vocab, merges=[])


@pytest.fixture(scope="module")
def pythia_like(tmp_path_factory):
    d = tmp_path_factory.mktemp("paper_windows")
    model = tiny_model("gpt_neox", n_layers=N_LAYERS, vocab=260, seed=3)
    model.save_pretrained(d / "model")
    neox_tokenizer().save_pretrained(d / "model")
    (d / "prompts.jsonl").write_text("".join(json.dumps(p) + "\n" for p in PROMPTS))
    return d, model.eval()


def test_installed_transformers_pads_a_pythia_tokenizer_with_padding_not_eos(pythia_like):
    d, _ = pythia_like
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(d / "model")
    assert (tok.pad_token, tok.pad_token_id, tok.eos_token_id) == ("<|padding|>", 1, 0)
    spec = dict(text_file=str(d / "prompts.jsonl"), text_format="jsonl", n_seqs=3, seq_len=SEQ_LEN, min_tokens=2,
                selection="first", padding="counted")
    for pad_token, want in (("tokenizer", 1), ("eos", 0), (7, 7)):
        w = load_windows(DataSpec(**spec, pad_token=pad_token), tok)
        n = len(tok("Stocks fell")["input_ids"])
        assert w.pad_token_id == want and (w.input_ids[2, n:] == want).all() and w.attention_mask.all()


def _paper_reference(model, tok, prompts, i, j):
    """The paper's trajectory script, re-stated: pad = EOS since the tokenizer 'has none', right-pad to the
    window, no attention mask, KL(base || slot i runs block j) averaged over every position of a prompt,
    then over prompts."""
    tok.pad_token = tok.eos_token
    ids = torch.tensor(tok(prompts, padding="max_length", truncation=True, max_length=SEQ_LEN)["input_ids"])
    with torch.inference_mode():
        base = model(input_ids=ids, use_cache=False).logits
        with ref.reordered(model, ref.replacement_order(i, j, N_LAYERS)):
            var = model(input_ids=ids, use_cache=False).logits
    per_prompt = ref.kl_per_position(base, var).mean(dim=1)
    return float(per_prompt.mean()), ids


def test_counted_windows_pad_with_eos_and_count_every_position(pythia_like, tmp_path, capsys):
    d, model = pythia_like
    out = tmp_path / "probe.parquet"
    rc = main(["probe", "--model", str(d / "model"), "--text-file", str(d / "prompts.jsonl"), "--text-format",
               "jsonl", "--selection", "first", "--n-seqs", "3", "--seq-len", str(SEQ_LEN), "--min-tokens", "2",
               "--padding", "counted", "--pad-token", "eos", "--pairs", "adjacent", "--protocols", "replacement",
               "--device", "cpu", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    prov = provenance.read(str(out))
    assert prov["pad_token_id"] == 0 and prov["data_spec"]["pad_token"] == "eos"
    assert prov["data_spec"]["selection"] == "first" and prov["data_spec"]["text_format"] == "jsonl"
    df = pd.read_parquet(out).query("protocol == 'replacement'").set_index(["layer_i", "layer_j"])
    from transformers import AutoTokenizer

    for i in range(N_LAYERS - 1):
        tok = AutoTokenizer.from_pretrained(d / "model")
        want, ids = _paper_reference(model, tok, PROMPTS[:3], i, i + 1)
        assert (ids[:, -1] == 0).all()  # every prompt is padded with end-of-text (id 0)
        row = df.loc[(i, i + 1)]  # the paper's one direction: slot i runs block i+1
        assert row["n_tokens"] == 3 * SEQ_LEN and list(row["seq_tokens"]) == [SEQ_LEN] * 3
        assert row["kl_mean"] == pytest.approx(want, rel=RTOL)
        # the same prompts padded with <|padding|> (what the installed transformers picks) measure another thing
        ids1 = torch.where(ids == 0, torch.ones_like(ids), ids)
        with torch.inference_mode():
            base = model(input_ids=ids1, use_cache=False).logits
            with ref.reordered(model, ref.replacement_order(i, i + 1, N_LAYERS)):
                other = float(ref.kl_per_position(base, model(input_ids=ids1, use_cache=False).logits).mean())
        assert abs(other - want) > 20 * RTOL * want


def test_jsonl_keeps_prompts_verbatim_and_first_takes_the_first_n(pythia_like, tmp_path):
    d, _ = pythia_like
    tok = neox_tokenizer()
    spec = DataSpec(text_file=str(d / "prompts.jsonl"), text_format="jsonl", n_seqs=3, seq_len=SEQ_LEN,
                    min_tokens=2, selection="first")
    w = load_windows(spec, tok)
    for row, p in enumerate(PROMPTS[:3]):
        t = tok(p, add_special_tokens=False)["input_ids"]
        assert w.input_ids[row, : len(t)].tolist() == t  # the newline of prompt 2 is kept
    # the default draw on the same file is a seeded draw among all five, not the first three
    drawn = [load_windows(DataSpec(**{**spec.as_dict(), "selection": "random", "seed": s}), tok).input_ids
             for s in range(6)]
    assert any(not np.array_equal(x, w.input_ids) for x in drawn)
    bad = tmp_path / "bad.jsonl"
    bad.write_text('"ok"\n{"text": "no"}\n')
    with pytest.raises(SwapKLError, match=r"bad.jsonl:2: holds a JSON dict, not a string"):
        load_windows(DataSpec(text_file=str(bad), text_format="jsonl", n_seqs=1, min_tokens=2), tok)
    bad.write_text('plain text\n')
    with pytest.raises(SwapKLError, match=r"bad.jsonl:1: not a JSON value"):
        load_windows(DataSpec(text_file=str(bad), text_format="jsonl", n_seqs=1, min_tokens=2), tok)
    with pytest.raises(SwapKLError, match="pad_token must be"):
        load_windows(DataSpec(text_file=str(bad), pad_token=-1), tok)


def _qwen_reference(rows, encode, n, seq_len, min_tokens, seed=42):
    """The paper's Qwen3-8B window rule, re-stated from its description."""
    texts = []
    for row in rows:
        t = row.strip()
        if len(t) < 50 or t.startswith("="):
            continue
        texts.append(t)
    np.random.default_rng(seed).shuffle(texts)
    out = []
    for t in texts:
        if len(out) == n:
            break
        ids = encode(t)[:seq_len]
        if len(ids) >= min_tokens:
            out.append(ids)
    return out


def _wikitext_like_rows() -> list[str]:
    rng = np.random.default_rng(5)
    words = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]
    rows = []
    for k in range(80):
        n_words = int(rng.integers(1, 40))
        body = " ".join(rng.choice(words, n_words))
        rows.append(f" = Heading {k} = \n" if k % 9 == 0 else f"  {body}  \n")
    return rows + ["", "= an unclosed heading line that is long enough to pass the length rule =\n"]


def test_paper_qwen3_windows_from_dataset_rows(monkeypatch):
    """The whole path: dataset rows (in memory, no hub) -> load_windows with selection paper-qwen3."""
    import datasets

    rows = _wikitext_like_rows()
    monkeypatch.setattr(datasets, "load_dataset", lambda *a, **k: datasets.Dataset.from_dict({"text": rows}))
    tok = neox_tokenizer()
    spec = DataSpec(dataset="wikitext", dataset_config="wikitext-103-raw-v1", split="test", n_seqs=10, seq_len=40,
                    min_tokens=30, seed=42, selection="paper-qwen3")
    w = load_windows(spec, tok)
    want = _qwen_reference(rows, lambda t: tok.encode(t), 10, 40, 30)  # the tokenizer's default special tokens
    assert len(want) == 10
    for row, ids in enumerate(want):
        assert w.input_ids[row, : len(ids)].tolist() == ids
        assert w.attention_mask[row].tolist() == [1] * len(ids) + [0] * (40 - len(ids))


def test_paper_qwen3_selection_matches_the_described_rule():
    rows = _wikitext_like_rows()
    encode = lambda t: [len(w) for w in t.split()]  # noqa: E731  (a deterministic toy tokenizer)
    spec = DataSpec(dataset="wikitext", n_seqs=12, seq_len=10, min_tokens=8, seed=42, selection="paper-qwen3")
    # dataset rows reach select_windows as swapkl's paragraphs (stripped, blank rows and headings dropped)
    paragraphs = [r.strip() for r in rows if r.strip() and not (r.strip().startswith("=") and r.strip().endswith("="))]
    w = select_windows(paragraphs, encode, spec, pad_id=0)
    want = _qwen_reference(rows, encode, 12, 10, 8)
    assert len(want) == 12
    for row, ids in enumerate(want):
        assert w.input_ids[row, : len(ids)].tolist() == ids
        assert w.attention_mask[row].tolist() == [1] * len(ids) + [0] * (10 - len(ids))
    assert paper_qwen3_items(["x" * 60, "=" + "y" * 60, "short"], 42) == ["x" * 60]
    n_all = len(_qwen_reference(rows, encode, 10**6, 10, 8))
    with pytest.raises(SwapKLError, match=f"only {n_all} paragraphs"):
        select_windows(paragraphs, encode, DataSpec(dataset="wikitext", n_seqs=n_all + 1, seq_len=10, min_tokens=8,
                                                    seed=42, selection="paper-qwen3"), pad_id=0)
