"""The published study's GPT-2-Medium perplexity evaluator (``text_prep: paper-gpt2``) against an independent
computation written from its scripts (``wikitext_ppl.py``, ``skip_layer_test.py``), not from swapkl's code:
the non-blank rows joined by a blank line, cut to the first ``max_words`` words re-joined by single spaces
(the study: 20,000), tokenised as a whole; windows of ``window`` tokens every ``stride``; each window's loss is
the stock transformers loss with ``labels`` masked to -100 before its new tokens, multiplied by its number of
new tokens ``end - prev_end``, and the perplexity is ``exp(sum / N)``.

Tolerance: both sides run the same float32 weights on the same windows; transformers averages the window's
cross-entropy in float32 (a relative error of a few 1e-7 over at most 32 terms), swapkl sums float64 terms of
float32 logits, so the perplexities agree to ~1e-6 relative; the clean evaluator, which counts window 0's
first token as unscored, moves it by far more (checked).
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from swapkl.cli import build_parser
from swapkl.model.engine import ProbeEngine
from swapkl.pruning.perplexity import load_eval_windows, perplexity, window_nll
from swapkl.pruning.eval_spec import EvalSpec
from test_perplexity import char_tokenizer
from tiny_models import tiny_model

ROWS = [" = a heading = ", "", " the cat sat on the mat , and then it ran away . ", "  ",
        " = = sub heading = = ", " a dog ran far away from home , across the hills and fields . "] * 4
WINDOW, STRIDE, MAX_WORDS = 32, 16, 70


def _script_text(rows: list[str], max_words: int) -> str:
    text = "\n\n".join(r for r in rows if r.strip())
    words = text.split()
    return " ".join(words[:max_words]) if len(words) > max_words else text


@torch.no_grad()
def _script_ppl(model, ids: list[int], window: int, stride: int) -> tuple[float, int]:
    """(perplexity, tokens counted) of the script's loop."""
    ids_t = torch.tensor([ids])
    n = ids_t.size(1)
    nlls, counted, prev_end = [], 0, 0
    for begin in range(0, n, stride):
        end = min(begin + window, n)
        new = end - prev_end
        chunk = ids_t[:, begin:end]
        labels = chunk.clone()
        if new < chunk.size(1):
            labels[:, :-new] = -100
        nlls.append(model(chunk, labels=labels, use_cache=False).loss.item() * new)
        counted += new
        prev_end = end
        if end == n:
            break
    return math.exp(sum(nlls) / counted), counted


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    d = tmp_path_factory.mktemp("gpt2_eval")
    (d / "rows.txt").write_text("\n".join(ROWS) + "\n")
    return d, tiny_model("gpt2", n_layers=3, seed=5).eval()


def test_the_gpt2_evaluator_is_the_scripts_loop(setup):
    d, model = setup
    tok = char_tokenizer()
    assert len(_script_text(ROWS, 10**6).split()) > MAX_WORDS  # the word limit cuts this text
    ids = tok(_script_text(ROWS, MAX_WORDS))["input_ids"]
    want, counted = _script_ppl(model, ids, WINDOW, STRIDE)
    spec = EvalSpec(text_file=str(d / "rows.txt"), window=WINDOW, stride=STRIDE, max_words=MAX_WORDS,
                    text_prep="paper-gpt2")
    ew = load_eval_windows(spec, tok, 64)
    assert ew.n_text_tokens == len(ids) == counted
    base, tokens, _ = window_nll(ProbeEngine(model), ew, [], device="cpu")
    assert tokens.sum() == pytest.approx(len(ids), abs=1e-9)  # N, not N - 1
    assert perplexity(base, tokens) == pytest.approx(want, rel=1e-6)
    # the same windows under the other rules give other numbers
    for other in ("clean", "paper"):
        ow = load_eval_windows(EvalSpec(**{**spec.as_dict(), "text_prep": other}), tok, 64)
        b, t, _ = window_nll(ProbeEngine(model), ow, [], device="cpu")
        assert abs(perplexity(b, t) / want - 1) > 1e-4, other
    assert spec.as_dict()["text_prep"] == "paper-gpt2"
    assert ew.sha256 != load_eval_windows(EvalSpec(**{**spec.as_dict(), "text_prep": "clean"}), tok, 64).sha256


def test_a_pruned_variant_is_weighted_the_same_way(setup):
    """A removal variant's window NLLs carry the same first-window factor (the pruning rows use them)."""
    from swapkl.model.variant import removal_variant

    d, model = setup
    tok = char_tokenizer()
    ew = load_eval_windows(EvalSpec(text_file=str(d / "rows.txt"), window=WINDOW, stride=STRIDE,
                                    max_words=MAX_WORDS, text_prep="paper-gpt2"), tok, 64)
    _, tokens, (nll,) = window_nll(ProbeEngine(model), ew, [removal_variant([1], 3)], device="cpu")
    pruned = torch.nn.ModuleList([model.transformer.h[0], model.transformer.h[2]])
    full, model.transformer.h = model.transformer.h, pruned
    model.config.n_layer = 2
    try:
        want, _ = _script_ppl(model, tok(_script_text(ROWS, MAX_WORDS))["input_ids"], WINDOW, STRIDE)
    finally:
        model.transformer.h, model.config.n_layer = full, 3
    assert perplexity(nll, tokens) == pytest.approx(want, rel=1e-6)
    assert np.isclose(ew.weight[0], ew.attention_mask[0].sum() / (ew.attention_mask[0].sum() - 1))


def test_the_command_line_offers_it():
    args = build_parser().parse_args(["prune", "--model", "m", "--probe", "p.parquet", "--eval-text-file", "t.txt",
                                      "--eval-text-prep", "paper-gpt2", "--eval-max-words", "20000",
                                      "--out", "o.parquet"])
    assert args.eval_text_prep == "paper-gpt2" and args.eval_max_words == 20000
