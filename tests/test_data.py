"""Token windows: .npy token arrays and the text-file path (a hand-built word-level tokenizer)."""

from __future__ import annotations

import numpy as np
import pytest

from swapkl.data import (
    DataSpec,
    check_windows,
    load_token_file,
    load_windows,
    select_windows,
    text_file_paragraphs,
    wikitext_paragraphs,
)
from swapkl.errors import SwapKLError

WORDS = [f"w{k}" for k in range(40)]


def word_tokenizer():
    """A PreTrainedTokenizerFast over a WordLevel model: '[UNK]'=0, '[PAD]'=1, w0..w39 = 2..41."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "[PAD]": 1, **{w: k + 2 for k, w in enumerate(WORDS)}}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]")


def corpus(n_par: int, seed: int = 0, min_len: int = 1, max_len: int = 30) -> list[list[str]]:
    rng = np.random.default_rng(seed)
    return [[WORDS[k] for k in rng.integers(0, len(WORDS), size=rng.integers(min_len, max_len))]
            for _ in range(n_par)]


def write_text(path, paragraphs: list[list[str]]) -> str:
    # paragraphs span lines and are separated by blank lines (with stray whitespace)
    blocks = []
    for p in paragraphs:
        half = len(p) // 2
        blocks.append(" ".join(p[:half]) + "\n  " + " ".join(p[half:]) + "  ")
    path.write_text("\n\n".join(blocks) + "\n\n \n")
    return str(path)


def test_text_file_paragraphs(tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("a  b\nc\n\n\n d e \n\n   \n\nf\n")
    assert text_file_paragraphs(str(f)) == ["a b c", "d e", "f"]


def test_wikitext_paragraphs_drop_blank_and_heading_rows():
    rows = ["", " = Title = \n", " Some text . \n", " = = Sub = = \n", "more\n", "   "]
    assert wikitext_paragraphs(rows) == ["Some text .", "more"]


def test_text_file_windows_follow_the_documented_rule(tmp_path):
    pars = corpus(60, seed=1)
    path = write_text(tmp_path / "c.txt", pars)
    tok = word_tokenizer()
    spec = DataSpec(text_file=path, n_seqs=10, seq_len=12, min_tokens=8, seed=5)
    w = load_windows(spec, tok)

    ids_of = [[WORDS.index(x) + 2 for x in p] for p in pars]
    eligible = [p[:12] for p in ids_of if len(p) >= 8]
    keep = np.sort(np.random.default_rng(5).permutation(len(eligible))[:10])
    assert w.input_ids.shape == (10, 12) and w.attention_mask.shape == (10, 12)
    for row, k in enumerate(keep):
        n = len(eligible[k])
        assert 8 <= n <= 12  # min_tokens respected, cut to seq_len
        assert w.input_ids[row, :n].tolist() == eligible[k]
        assert w.attention_mask[row].tolist() == [1] * n + [0] * (12 - n)  # padding masked
        assert (w.input_ids[row, n:] == tok.pad_token_id).all()
    assert w.n_tokens == sum(len(eligible[k]) for k in keep)
    assert w.source == f"text_file:{path}"
    assert w.attention_mask.sum(1).min() < 12  # some rows really are padded


def test_windows_deterministic_given_seed_and_change_with_it(tmp_path):
    path = write_text(tmp_path / "c.txt", corpus(50, seed=2))
    tok = word_tokenizer()
    spec = DataSpec(text_file=path, n_seqs=8, seq_len=10, min_tokens=4, seed=0)
    a = load_windows(spec, tok)
    b = load_windows(spec, tok)
    assert np.array_equal(a.input_ids, b.input_ids) and a.sha256 == b.sha256
    c = load_windows(DataSpec(text_file=path, n_seqs=8, seq_len=10, min_tokens=4, seed=1), tok)
    assert not np.array_equal(a.input_ids, c.input_ids) and a.sha256 != c.sha256


def test_too_few_eligible_paragraphs(tmp_path):
    pars = corpus(5, seed=3, min_len=2, max_len=6) + corpus(3, seed=4, min_len=20, max_len=25)
    path = write_text(tmp_path / "c.txt", pars)
    with pytest.raises(SwapKLError, match=r"only 3 paragraphs with at least 16 tokens; 4 are needed"):
        load_windows(DataSpec(text_file=path, n_seqs=4, seq_len=32, min_tokens=16), word_tokenizer())
    assert load_windows(DataSpec(text_file=path, n_seqs=3, seq_len=32, min_tokens=16), word_tokenizer()).n_tokens > 0


def test_empty_or_missing_text_file(tmp_path):
    empty = tmp_path / "empty.txt"
    empty.write_text("\n\n   \n")
    with pytest.raises(SwapKLError, match="is empty"):
        load_windows(DataSpec(text_file=str(empty), n_seqs=1), word_tokenizer())
    with pytest.raises(SwapKLError, match="does not exist"):
        load_windows(DataSpec(text_file=str(tmp_path / "nope.txt"), n_seqs=1), word_tokenizer())


def test_select_windows_with_a_plain_tokenize_function():
    pars = ["a b c d e", "a b", "a b c d e f g", "x y z w"]
    tokenize = lambda p: [ord(c) for c in p.split()]  # noqa: E731
    w = select_windows(pars, tokenize, DataSpec(text_file="x", n_seqs=3, seq_len=5, min_tokens=4), pad_id=-7)
    assert w.attention_mask.sum(1).tolist() == [5, 5, 4]
    assert w.input_ids[2].tolist() == [ord("x"), ord("y"), ord("z"), ord("w"), -7]


def test_exactly_one_source_and_positive_sizes(tmp_path):
    with pytest.raises(SwapKLError, match="exactly one data source"):
        load_windows(DataSpec())
    with pytest.raises(SwapKLError, match="exactly one data source"):
        load_windows(DataSpec(tokens="a.npy", text_file="b.txt"))
    with pytest.raises(SwapKLError, match="n_seqs must be at least 1"):
        load_windows(DataSpec(text_file="b.txt", n_seqs=0))
    with pytest.raises(SwapKLError, match="no tokenizer"):
        load_windows(DataSpec(text_file="b.txt"), None)


def test_token_file(tmp_path):
    arr = np.arange(12, dtype=np.int32).reshape(3, 4)
    np.save(tmp_path / "t.npy", arr)
    w = load_token_file(str(tmp_path / "t.npy"))
    assert w.input_ids.dtype == np.int64 and np.array_equal(w.input_ids, arr)
    assert w.attention_mask.all() and w.n_tokens == 12
    for name, bad in [("float", np.zeros((2, 3))), ("1d", np.arange(4)), ("empty", np.zeros((0, 4), dtype=int))]:
        np.save(tmp_path / f"{name}.npy", bad)
        with pytest.raises(SwapKLError, match=f"{name}.npy"):
            load_token_file(str(tmp_path / f"{name}.npy"))
    (tmp_path / "junk.npy").write_bytes(b"not numpy")
    with pytest.raises(SwapKLError, match="not a readable"):
        load_token_file(str(tmp_path / "junk.npy"))
    with pytest.raises(SwapKLError, match="does not exist"):
        load_token_file(str(tmp_path / "missing.npy"))


def test_check_windows(tmp_path):
    np.save(tmp_path / "t.npy", np.array([[0, 5, 96]]))
    w = load_token_file(str(tmp_path / "t.npy"))
    check_windows(w, vocab_size=97, max_positions=3)
    with pytest.raises(SwapKLError, match=r"token id 96 .* outside the model vocabulary \[0, 96\)"):
        check_windows(w, vocab_size=96, max_positions=3)
    with pytest.raises(SwapKLError, match="seq_len 3 exceeds the model's 2 positions"):
        check_windows(w, vocab_size=97, max_positions=2)
    np.save(tmp_path / "neg.npy", np.array([[0, -1]]))
    with pytest.raises(SwapKLError, match="token id -1"):
        check_windows(load_token_file(str(tmp_path / "neg.npy")), vocab_size=97, max_positions=None)
