"""The paper's matched perplexity evaluator (``text_prep: paper``) and the forward options of the paper
entries (``compute_dtype``, ``rope_scaling: none``), against independent computations.

The reference evaluator below is re-stated from the paper's description (its matched-eval scripts): rows
kept when not blank, joined by a blank line, the first ``max_words`` words re-joined by single spaces,
tokenised with the tokenizer's default special tokens (one BOS for a Llama-3-like tokenizer), windows
of ``window`` tokens every ``stride``, each window's cross-entropy scored only past the previous window's
end plus one, with the stock transformers forward on each unpadded window.

Tolerance: both sides run the same float32 weights on the same windows; swapkl takes the log-sum-exp in
float64 of float32 logits, the reference in float64 throughout, so each NLL term agrees to a few float32
ulps of ~log V (about 1e-6 absolute) and the sum over a few hundred tokens to ~1e-4; rtol 1e-6 on sums of
order 10^3 is that bound, while scoring one more token per window changes the sum by whole units.
"""

from __future__ import annotations

import copy

import numpy as np
import pandas as pd
import pytest
import torch

from swapkl.tables import provenance
from swapkl.data.data_spec import DataSpec
from swapkl.model.engine import ProbeEngine
from swapkl.errors import SwapKLError
from swapkl.model.loading import load_model
from swapkl.pruning.perplexity import load_eval_windows, window_nll
from swapkl.pruning.eval_spec import EvalSpec
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from test_compat_inputs import bos_tokenizer
from tiny_models import tiny_model

ROWS = [" = Valkyria Chronicles = ", "", " the cat sat on the mat , and then it ran away . ", "  ",
        " = = Gameplay = = ", " a dog ran far away from home , across the hills and fields . "] * 3
WINDOW, STRIDE, MAX_WORDS = 32, 16, 60


def _paper_text(rows, max_words):
    text = "\n\n".join(t for t in rows if t.strip())
    words = text.split()
    if len(words) > max_words:
        text = " ".join(words[:max_words])
    return text


@torch.no_grad()
def _paper_eval(model, tokens, window, stride):
    """Total NLL, scored tokens and windows of the paper's sliding-window loop."""
    n = len(tokens)
    total, count, n_windows, prev_end = 0.0, 0, 0, 0
    for begin in range(0, n, stride):
        end = min(begin + window, n)
        target_len = end - prev_end
        chunk = tokens[begin:end]
        logits = model(input_ids=torch.tensor([chunk]), use_cache=False).logits[0].double()
        lp = torch.log_softmax(logits[: len(chunk) - 1], -1)
        ce = -lp.gather(1, torch.tensor(chunk[1:]).unsqueeze(1)).squeeze(1)
        start = len(chunk) - target_len if target_len < len(chunk) else 0
        total += float(ce[start:].sum())
        count += len(ce) - start
        n_windows += 1
        prev_end = end
        if end == n:
            break
    return total, count, n_windows


@pytest.fixture(scope="module")
def llama_like(tmp_path_factory):
    d = tmp_path_factory.mktemp("paper_eval")
    model = tiny_model("llama", n_layers=3, seed=4)
    model.save_pretrained(d / "model")
    bos_tokenizer().save_pretrained(d / "model")
    (d / "rows.txt").write_text("\n".join(ROWS) + "\n")
    return d, model.eval()


def test_paper_evaluator_scores_n_minus_windows_and_matches_the_loop(llama_like):
    d, model = llama_like
    tok = bos_tokenizer()
    spec = EvalSpec(text_file=str(d / "rows.txt"), window=WINDOW, stride=STRIDE, max_words=MAX_WORDS,
                    text_prep="paper")
    ew = load_eval_windows(spec, tok, 64)
    tokens = tok(_paper_text(ROWS, MAX_WORDS))["input_ids"]  # default special tokens: one BOS first
    assert tokens[0] == 40 and tokens.count(40) == 1 and ew.n_text_tokens == len(tokens)
    total, count, n_windows = _paper_eval(model, tokens, WINDOW, STRIDE)
    assert ew.n_windows == n_windows and ew.n_scored == count == len(tokens) - n_windows
    base, win_tok, _ = window_nll(ProbeEngine(model), ew, [], device="cpu")
    assert win_tok.sum() == count
    assert base.sum() == pytest.approx(total, rel=1e-6)
    # the clean evaluator on the same file: headings dropped, every token after the first scored
    clean = load_eval_windows(EvalSpec(text_file=str(d / "rows.txt"), window=WINDOW, stride=STRIDE,
                                       max_words=MAX_WORDS), tok, 64)
    assert clean.n_scored == clean.n_text_tokens - 1
    assert spec.as_dict()["text_prep"] == "paper" and "text_prep" not in EvalSpec(dataset="x").as_dict()
    with pytest.raises(SwapKLError, match="text_prep must be one of clean, paper"):
        EvalSpec(text_file="x", text_prep="papers").check()


def test_text_prep_keeps_the_text_when_it_has_few_words():
    from swapkl.data.text_rules import paper_eval_text

    assert paper_eval_text(ROWS, 10**6) == _paper_text(ROWS, 10**6)
    assert "\n\n" in paper_eval_text(ROWS, 10**6) and "=" in paper_eval_text(ROWS, 10**6)
    assert paper_eval_text(ROWS, 5) == "= Valkyria Chronicles = the"


def test_compute_dtype_rounds_weights_to_bf16_and_computes_in_fp32(llama_like, tmp_path):
    d, model = llama_like
    loaded = load_model(str(d / "model"), dtype="bfloat16", compute_dtype="float32", device="cpu")
    ref = copy.deepcopy(model).to(torch.bfloat16).to(torch.float32)  # the paper: bf16 weights, .float()
    for (name, a), (_, b) in zip(loaded.model.state_dict().items(), ref.state_dict().items()):
        assert a.dtype == torch.float32 and torch.equal(a, b), name
    out = tmp_path / "p.parquet"
    text = tmp_path / "t.txt"
    text.write_text("the cat sat on the mat\n\na dog ran far away")
    run_probe(ProbeJob(model=str(d / "model"), out=str(out),
                       data=DataSpec(text_file=str(text), n_seqs=2, seq_len=32, min_tokens=4),
                       dtype="bfloat16", compute_dtype="float32", device="cpu", protocols=("interchange",)))
    prov = provenance.read(str(out))
    assert prov["dtype"] == "bfloat16" and prov["compute_dtype"] == "float32" and "rope_scaling" not in prov
    assert pd.read_parquet(out)["kl_mean"].notna().all()


def test_rope_scaling_none_gives_plain_theta(tmp_path):
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=97, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                      intermediate_size=64, max_position_embeddings=64, rope_theta=500000.0,
                      rope_scaling={"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                                    "high_freq_factor": 4.0, "original_max_position_embeddings": 16})
    torch.manual_seed(0)
    LlamaForCausalLM(cfg).save_pretrained(tmp_path / "m")
    plain = 1.0 / (500000.0 ** (torch.arange(0, 8, 2, dtype=torch.float64) / 8))
    scaled = load_model(str(tmp_path / "m"), device="cpu", need_tokenizer=False)
    off = load_model(str(tmp_path / "m"), device="cpu", need_tokenizer=False, rope_scaling="none")
    assert off.rope_scaling == "none" and scaled.rope_scaling == "config"
    np.testing.assert_allclose(off.model.model.rotary_emb.inv_freq.double(), plain, rtol=1e-6)
    assert not np.allclose(scaled.model.model.rotary_emb.inv_freq.double(), plain, rtol=1e-3)
    with pytest.raises(SwapKLError, match="applies no RoPE scaling to switch off"):
        tiny_model("llama", n_layers=2).save_pretrained(tmp_path / "plain")
        load_model(str(tmp_path / "plain"), device="cpu", need_tokenizer=False, rope_scaling="none")


def test_prune_cli_with_the_paper_evaluator(llama_like, tmp_path, capsys):
    """`swapkl prune ... --eval-text-prep paper --eval-window W --eval-stride S`: the base perplexity and the
    scored-token count of the pruning table are the paper loop's."""
    from swapkl.cli import main
    from tiny_models import random_tokens

    d, model = llama_like
    np.save(tmp_path / "probe.npy", random_tokens(97, 4, 12, seed=1).numpy())
    np.save(tmp_path / "calib.npy", random_tokens(97, 4, 12, seed=2).numpy())
    probe, rep = tmp_path / "probe.parquet", tmp_path / "repr.parquet"
    run_probe(ProbeJob(model=str(d / "model"), out=str(probe), pairs="all",
                       data=DataSpec(tokens=str(tmp_path / "probe.npy")),
                       device="cpu", repr_out=str(rep)))
    out = tmp_path / "pruning.parquet"
    rc = main(["prune", "--model", str(d / "model"), "--probe", str(probe), "--repr", str(rep), "--budgets", "1",
               "--n-random", "1", "--device", "cpu", "--eval-text-file", str(d / "rows.txt"), "--eval-text-prep",
               "paper", "--eval-window", str(WINDOW), "--eval-stride", str(STRIDE), "--eval-max-words",
               str(MAX_WORDS), "--calib-tokens", str(tmp_path / "calib.npy"), "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    tokens = bos_tokenizer()(_paper_text(ROWS, MAX_WORDS))["input_ids"]
    total, count, n_windows = _paper_eval(model, tokens, WINDOW, STRIDE)
    df = pd.read_parquet(out)
    assert (df["n_eval_tokens"] == len(tokens) - n_windows).all() and (df["n_eval_windows"] == n_windows).all()
    assert df["base_ppl"].iloc[0] == pytest.approx(np.exp(total / count), rel=1e-6)
    assert provenance.read(str(out))["eval_spec"]["text_prep"] == "paper"
