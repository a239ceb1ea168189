"""Sliding-window perplexity against a direct computation with the stock forward (HF recipe)."""

from __future__ import annotations

import copy

import numpy as np
import pytest
import torch

from swapkl.stats.bootstrap import boot_log_ppl
from swapkl.model.engine import ProbeEngine
from swapkl.errors import SwapKLError
from swapkl.model.variant import removal
from swapkl.pruning.perplexity import (
    EvalSpec,
    first_words,
    load_eval_windows,
    perplexity,
    sliding_windows,
    window_nll,
)
import naive_reference as ref
from tiny_models import ARCHS, tiny_model

TEXT = (
    "the quick brown fox jumps over the lazy dog, again and again.\n\n"
    "a second paragraph talks about layers, blocks and swaps.\n\n"
    "short one.\n\n"
    "the last paragraph is here so that the text has enough characters for several windows."
)


def char_tokenizer():
    """A character-level fast tokenizer (vocabulary 33 < the tiny models' 97), no special tokens added."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = list("abcdefghijklmnopqrstuvwxyz .,\n")
    vocab = {"<pad>": 0, "<unk>": 1, **{c: i + 2 for i, c in enumerate(chars)}}
    t = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    t.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    return PreTrainedTokenizerFast(tokenizer_object=t, pad_token="<pad>", unk_token="<unk>")


def save_tiny(folder, arch: str = "llama", n_layers: int = 5, seed: int = 0):
    """A tiny model directory with safetensors weights and the character tokenizer."""
    model = tiny_model(arch, n_layers=n_layers, seed=seed)
    model.save_pretrained(folder)
    char_tokenizer().save_pretrained(folder)
    return model


def stock_drop(model, removed):
    """A copy of ``model`` whose ``nn.ModuleList`` no longer holds the removed blocks."""
    m = copy.deepcopy(model)
    blocks = ref.block_list(m)
    keep = [b for k, b in enumerate(blocks) if k not in set(removed)]
    for k in range(len(blocks) - 1, -1, -1):
        del blocks[k]
    blocks.extend(keep)
    m.config.num_hidden_layers = len(keep)
    return m.eval()


@torch.no_grad()
def hf_recipe_nll(model, ids, window, stride):
    """Direct sliding-window NLL (sum, count) following the Hugging Face perplexity guide."""
    ids = torch.as_tensor(ids).unsqueeze(0)
    n = ids.shape[1]
    total, count, prev_end = 0.0, 0, 0
    for begin in range(0, n, stride):
        end = min(begin + window, n)
        trg_len = end - prev_end
        inp = ids[:, begin:end]
        labels = inp.clone()
        labels[:, :-trg_len] = -100
        logits = model(input_ids=inp, use_cache=False).logits.double()
        lp = torch.log_softmax(logits[0, :-1], -1)
        tgt = labels[0, 1:]
        keep = tgt != -100
        total += float(-lp[keep].gather(1, tgt[keep].unsqueeze(1)).sum())
        count += int(keep.sum())
        prev_end = end
        if end == n:
            break
    return total, count


def test_window_layout_scores_every_token_once():
    ew = sliding_windows(np.arange(10), window=4, stride=2)
    np.testing.assert_array_equal(ew.input_ids[:, 0], [0, 2, 4, 6])
    # predicted token of each scored position = window start + position + 1
    predicted = []
    for k, row in enumerate(ew.score_mask):
        predicted += [int(ew.input_ids[k, t]) + 1 for t in np.flatnonzero(row)]
    assert predicted == list(range(1, 10))
    np.testing.assert_array_equal(ew.score_mask.sum(1), [3, 2, 2, 2])
    np.testing.assert_array_equal(ew.attention_mask.sum(1), [4, 4, 4, 4])
    # a short last window is right-padded
    ew = sliding_windows(np.arange(11), window=4, stride=3)
    np.testing.assert_array_equal(ew.attention_mask.sum(1), [4, 4, 4, 2])
    np.testing.assert_array_equal(ew.score_mask.sum(1), [3, 3, 3, 1])
    # text shorter than a window: one window
    ew = sliding_windows(np.arange(5), window=8, stride=4)
    assert ew.n_windows == 1 and ew.n_scored == 4


def test_first_words_rule():
    paras = ["a b  c", "d e", "f g h"]
    assert first_words(paras, 4) == "a b c\n\nd"
    assert first_words(paras, 5) == "a b c\n\nd e"
    assert first_words(paras, None) == "a b c\n\nd e\n\nf g h"


@pytest.mark.parametrize("arch", ["llama", "gpt_neox"])
def test_sliding_ppl_matches_direct_computation(tmp_path, arch):
    model = tiny_model(arch, n_layers=4)
    tok = char_tokenizer()
    f = tmp_path / "eval.txt"
    f.write_text(TEXT)
    spec = EvalSpec(text_file=str(f), window=16, stride=6, max_words=30)
    ew = load_eval_windows(spec, tok, max_positions=64)
    text = first_words([" ".join(p.split()) for p in TEXT.split("\n\n")], 30)
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert ew.n_text_tokens == len(ids) and ew.n_scored == len(ids) - 1
    engine = ProbeEngine(model)
    removed = [(1,), (0, 2)]
    base, tokens, nlls = window_nll(engine, ew, [removal(r, 4) for r in removed], batch_size=3)
    for got, m in [(base, model)] + [(nll, stock_drop(model, r)) for r, nll in zip(removed, nlls)]:
        s, c = hf_recipe_nll(m, ids, 16, 6)
        assert tokens.sum() == c
        assert got.sum() == pytest.approx(s, rel=1e-5)
        assert perplexity(got, tokens) == pytest.approx(np.exp(s / c), rel=1e-5)


def test_bootstrap_over_windows():
    nll = np.array([3.0, 1.0, 2.0, 5.0])
    tok = np.array([10.0, 5.0, 5.0, 5.0])
    idx = np.array([[0, 1, 2, 3], [0, 0, 0, 0], [3, 3, 1, 1]])
    np.testing.assert_allclose(boot_log_ppl(nll, tok, idx), [11 / 25, 0.3, 12 / 20])


def test_window_longer_than_positions_is_an_error(tmp_path):
    f = tmp_path / "eval.txt"
    f.write_text(TEXT)
    with pytest.raises(SwapKLError, match="window 128 exceeds the model's 64 positions"):
        load_eval_windows(EvalSpec(text_file=str(f), window=128, stride=64), char_tokenizer(), max_positions=64)
    with pytest.raises(SwapKLError, match="stride"):
        load_eval_windows(EvalSpec(text_file=str(f), window=16, stride=17), char_tokenizer(), max_positions=64)
    with pytest.raises(SwapKLError, match="does not exist"):
        load_eval_windows(EvalSpec(text_file=str(tmp_path / "nope.txt"), window=16, stride=8), char_tokenizer())


@pytest.mark.parametrize("arch", ARCHS)
def test_engine_removal_equals_dropping_blocks_from_module_list(arch):
    """Removing blocks through the engine gives the stock forward's logits with the blocks dropped."""
    from swapkl.model.kl import Unembedding

    model = tiny_model(arch, n_layers=5)
    engine = ProbeEngine(model)
    a = engine.adapter
    unemb = Unembedding.from_head(a.head)
    ids = torch.randint(0, 97, (2, 20), generator=torch.Generator().manual_seed(4))
    mask = torch.ones_like(ids)
    mask[1, 13:] = 0
    for removed in [(0,), (2,), (4,), (1, 3), (0, 2, 4), (1, 2)]:
        with torch.no_grad():
            h0, ctx = a.prepare(ids, mask)
            h = a.run_order(removal(removed, 5).order, 0, h0, ctx)
            ours = unemb.logits(a.final_norm(h))
            ref = stock_drop(model, removed)(input_ids=ids, attention_mask=mask, use_cache=False).logits.float()
        valid = mask.bool()
        torch.testing.assert_close(ours[valid], ref[valid], rtol=1e-5, atol=1e-5)
