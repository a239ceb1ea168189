"""Token windows: .npy token arrays and the text-file path (a hand-built word-level tokenizer)."""

from __future__ import annotations

import numpy as np
import pytest

from swapkl.data.data_spec import DataSpec
from swapkl.data.windows import (
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
    with pytest.raises(SwapKLError, match="expected .npy"):
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


# -- a dataset row's text from named fields (the instruction-tuning sets) -----------------------------------------

def _instruction_rows(n: int, seed: int = 0):
    """CodeAlpaca-like rows (instruction / input, often empty / output) and LIMA-like rows (a list of turns)."""
    rng = np.random.default_rng(seed)
    words = lambda k: " ".join(WORDS[j] for j in rng.integers(0, len(WORDS), size=k))  # noqa: E731
    alpaca = {"instruction": [words(int(rng.integers(2, 8))) for _ in range(n)],
              "input": ["" if k % 3 else words(4) for k in range(n)],
              "output": [words(int(rng.integers(3, 25))) for _ in range(n)]}
    lima = {"conversations": [[words(int(rng.integers(2, 12))) for _ in range(int(rng.integers(1, 4)))]
                              for _ in range(n)], "source": ["x"] * n}
    return alpaca, lima


@pytest.fixture
def hub(monkeypatch):
    """datasets.load_dataset answering from in-memory datasets (no hub): {name: {column: values}}."""
    import datasets

    tables, calls = {}, []

    def load_dataset(name, config=None, split=None):
        calls.append((name, config, split))
        return datasets.Dataset.from_dict(tables[name])

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return tables, calls


def test_text_fields_join_a_rows_fields_and_give_the_documented_windows(hub):
    from swapkl.data.windows import dataset_paragraphs, default_bos

    tables, calls = hub
    alpaca, lima = _instruction_rows(60)
    tables |= {"sahil2801/CodeAlpaca-20k": alpaca, "GAIR/lima": lima}
    tok = word_tokenizer()
    cases = (("sahil2801/CodeAlpaca-20k", ["instruction", "input", "output"],
              ["\n\n".join(v for v in (a, b, c) if v) for a, b, c in zip(*alpaca.values())]),
             ("GAIR/lima", ["conversations"], ["\n\n".join(turns) for turns in lima["conversations"]]))
    for name, fields, want_text in cases:
        spec = DataSpec(dataset=name, split="train", text_fields=fields, n_seqs=10, seq_len=12, min_tokens=6, seed=3)
        assert dataset_paragraphs(spec) == want_text
        # the windows by the documented rule, computed directly from the joined rows
        assert default_bos(tok) is None
        eligible = [ids[:12] for ids in (tok(t, add_special_tokens=False)["input_ids"] for t in want_text)
                    if len(ids) >= 6]
        chosen = np.sort(np.random.default_rng(3).permutation(len(eligible))[:10])
        w = load_windows(spec, tok)
        for row, k in enumerate(chosen):
            n = len(eligible[k])
            assert w.input_ids[row, :n].tolist() == eligible[k] and w.attention_mask[row].tolist() == [1] * n + [0] * (12 - n)
        assert w.source == f"dataset:{name}/:train[{'+'.join(fields)}]"
        assert spec.as_dict()["text_fields"] == fields
    assert calls[-1] == ("GAIR/lima", None, "train")
    # without text_fields nothing changes in the record; the `text` column is read
    assert "text_fields" not in DataSpec(dataset="wikitext").as_dict()


def test_perplexity_text_reads_the_same_text_source(hub):
    from swapkl.data.windows import dataset_paragraphs
    from swapkl.pruning.perplexity import eval_paragraphs, first_words, load_eval_windows
    from swapkl.pruning.eval_spec import EvalSpec

    tables, _ = hub
    tables["TIGER-Lab/MathInstruct"] = {"instruction": ["w1 w2", "w3"], "output": ["w4  w5", ""], "source": ["a", "b"]}
    spec = EvalSpec(dataset="TIGER-Lab/MathInstruct", split="train", text_fields=["instruction", "output"], window=4,
                    stride=2, max_words=None)
    assert eval_paragraphs(spec) == dataset_paragraphs(spec) == ["w1 w2\n\nw4  w5", "w3"]
    ew = load_eval_windows(spec, word_tokenizer())
    assert first_words(eval_paragraphs(spec), None) == "w1 w2 w4 w5\n\nw3"
    ids = word_tokenizer()("w1 w2 w4 w5\n\nw3", add_special_tokens=False)["input_ids"]
    assert ew.n_text_tokens == 5 and ew.input_ids[0].tolist() == ids[:4] and ew.input_ids[1, :3].tolist() == ids[2:]
    assert spec.as_dict()["text_fields"] == ["instruction", "output"]
    assert "text_fields" not in EvalSpec(dataset="wikitext").as_dict()


@pytest.mark.parametrize("fields,message", [
    (["instruction", "response"], "no field 'response' (its columns: instruction, input, output)"),
    (None, "no field 'text' (its columns: instruction, input, output); name the fields"),
])
def test_a_missing_field_is_one_line_naming_it_and_the_columns(hub, fields, message):
    tables, _ = hub
    tables["sahil2801/CodeAlpaca-20k"] = _instruction_rows(5)[0]
    spec = DataSpec(dataset="sahil2801/CodeAlpaca-20k", split="train", text_fields=fields)
    with pytest.raises(SwapKLError) as e:
        load_windows(spec, word_tokenizer())
    assert message in str(e.value) and "\n" not in str(e.value)


@pytest.mark.parametrize("spec,message", [
    (DataSpec(text_file="a.txt", text_fields=("x",)), "no effect on a text or token file"),
    (DataSpec(dataset="d", text_fields=()), "non-empty list"),
    (DataSpec(dataset="d", text_fields=("a", "a")), "distinct"),
    (DataSpec(dataset="d", text_fields="abc"), "non-empty list"),
])
def test_bad_text_fields_are_refused(spec, message):
    from swapkl.data.windows import check_spec

    with pytest.raises(SwapKLError, match=message):
        check_spec(spec)


def test_a_non_text_field_is_refused(hub):
    tables, _ = hub
    tables["d"] = {"q": ["w1", "w2"], "n": [1, 2]}
    with pytest.raises(SwapKLError, match=r"dataset:d/:train\[q\+n\]: field 'n' holds int values, not text"):
        load_windows(DataSpec(dataset="d", split="train", text_fields=["q", "n"], n_seqs=1, min_tokens=2),
                     word_tokenizer())


def test_text_fields_on_the_command_line(tmp_path, capsys):
    from swapkl import cli
    from swapkl.commands.probe_command import add_data_arguments, data_spec

    import argparse

    p = argparse.ArgumentParser()
    add_data_arguments(p, prefix="lm-")
    args = p.parse_args(["--lm-dataset", "d", "--lm-text-fields", "instruction, input,output"])
    assert data_spec(args, "lm-").text_fields == ("instruction", "input", "output")
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text("{}")  # the paths pass; the option is what is refused
    (tmp_path / "a.txt").write_text("text")
    code = cli.main(["relevance", "--model", str(tmp_path / "m"), "--lm-text-file", str(tmp_path / "a.txt"),
                     "--lm-text-fields", "x",
                     "--out", str(tmp_path / "r.parquet")])
    errors = [line for line in capsys.readouterr().err.split("\n") if line.startswith("swapkl:")]
    assert code == 2 and len(errors) == 1 and "--lm-text-fields" in errors[0], errors


def test_held_out_checks_treat_the_same_rows_as_the_same_text():
    """Two specs that read the same rows of one dataset split overlap, whichever fields make their text (an
    instruction seen by the probe and its answer scored by perplexity are not held out from each other)."""
    from swapkl.data.text_sources import source_key

    a = dict(dataset="TIGER-Lab/MathInstruct", split="train")
    assert source_key(**a, text_fields=["instruction"]) == source_key(**a, text_fields=["output"]) == source_key(**a)
    assert source_key(**a) != source_key(**(a | {"split": "test"}))


def test_windows_far_below_the_requested_size_are_said():
    """The scored size, not the requested one: windows holding under half their positions give a warning that
    counts what they hold (issue 48, item 3)."""
    from swapkl.data.windows import Windows

    ids = np.zeros((4, 10), dtype=np.int64)
    mask = np.zeros((4, 10), dtype=np.int64)
    mask[:, :4] = 1  # 16 of 40 positions
    assert Windows(ids, mask, "text_file:t.txt").shortfall() == (
        "text_file:t.txt: the 4 windows of 10 tokens hold 16 tokens, 40% of the 40 requested (short paragraphs are "
        "padded, and padding is not scored); every number rests on the tokens held")
    mask[:, :5] = 1  # half
    assert Windows(ids, mask, "text_file:t.txt").shortfall() is None


def bos_word_tokenizer():
    """word_tokenizer() that adds a BOS token ('[BOS]' = 42) by default, as Llama-3's does."""
    from tokenizers import Tokenizer, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {"[UNK]": 0, "[PAD]": 1, **{w: k + 2 for k, w in enumerate(WORDS)}, "[BOS]": 42}
    tok = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    tok.post_processor = processors.TemplateProcessing(single="[BOS] $A", special_tokens=[("[BOS]", 42)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, unk_token="[UNK]", pad_token="[PAD]", bos_token="[BOS]")


@pytest.mark.parametrize("selection", ["random", "first"])
@pytest.mark.parametrize("bos", [False, True])
def test_filled_windows_are_consecutive_full_cuts_of_the_text(tmp_path, selection, bos):
    """packing: filled: every window is full (n_seqs x seq_len tokens scored), and its tokens are a consecutive
    piece of the whole text's words, in order; the pieces are those of the documented draw (issue 48, item 3)."""
    pars = corpus(40, seed=7, min_len=1, max_len=9)  # short paragraphs: one per window would leave most unscored
    path = write_text(tmp_path / "c.txt", pars)
    tok = bos_word_tokenizer() if bos else word_tokenizer()
    spec = DataSpec(text_file=path, n_seqs=5, seq_len=12, seed=3, selection=selection, packing="filled")
    w = load_windows(spec, tok)

    stream = [WORDS.index(x) + 2 for p in pars for x in p]  # the words in file order
    body = 11 if bos else 12
    pool = [stream[k * body:(k + 1) * body] for k in range(len(stream) // body)]
    keep = (range(5) if selection == "first"
            else np.sort(np.random.default_rng(3).permutation(len(pool))[:5]))
    expected = [([42] if bos else []) + pool[k] for k in keep]
    assert w.input_ids.tolist() == expected
    assert w.attention_mask.tolist() == [[1] * 12] * 5 and w.n_tokens == 60 and w.shortfall() is None
    assert w.bos_token_id == (42 if bos else None)
    paragraph = load_windows(DataSpec(text_file=path, n_seqs=5, seq_len=12, min_tokens=2, seed=3), tok)
    assert paragraph.n_tokens < 60 and paragraph.shortfall() is not None  # what filling is for
    assert "packing" not in DataSpec(text_file=path).as_dict()  # records of paragraph windows as before
    assert spec.as_dict()["packing"] == "filled"


def test_filled_windows_refuse_what_they_cannot_honour(tmp_path):
    path = write_text(tmp_path / "c.txt", corpus(3, seed=1, min_len=5, max_len=6))  # 15 words
    tok = word_tokenizer()
    with pytest.raises(SwapKLError, match=r"holds 15 tokens, 3 filled windows of 5 tokens; 4 are needed"):
        load_windows(DataSpec(text_file=path, n_seqs=4, seq_len=5, packing="filled"), tok)
    assert load_windows(DataSpec(text_file=path, n_seqs=3, seq_len=5, packing="filled"), tok).n_tokens == 15
    for bad, message in (({"selection": "paper-qwen3"}, "paper-qwen3"), ({"padding": "counted"}, "nothing to pad"),
                         ({"packing": "stuffed"}, "packing must be one of paragraph, filled")):
        with pytest.raises(SwapKLError, match=message):
            load_windows(DataSpec(text_file=path, n_seqs=1, seq_len=5, **({"packing": "filled"} | bad)), tok)
    np.save(tmp_path / "t.npy", np.zeros((2, 4), dtype=np.int64))
    with pytest.raises(SwapKLError, match="token file is used as is"):
        load_windows(DataSpec(tokens=str(tmp_path / "t.npy"), packing="filled"))


def test_every_kind_of_text_names_its_source_the_same_way(tmp_path):
    """The probe windows, the evaluation text, the healing text and a trained model's text are one TextSource
    each (swapkl.data.data_spec): the same source describes itself and compares (source_key) the same whichever
    kind of text reads it, the split's default is each kind's own, and a source needs exactly one of a file and a
    dataset."""
    from swapkl.data.data_spec import TextSource
    from swapkl.demo.training_text import TrainingText
    from swapkl.pruning.eval_spec import EvalSpec
    from swapkl.recovery.heal_settings import TrainText

    text = tmp_path / "t.txt"
    text.write_text("one paragraph\n\nanother one\n")
    copy = tmp_path / "copy.txt"
    copy.write_text(text.read_text())
    kinds = (DataSpec, EvalSpec, TrainText, lambda **kw: TrainingText(tokenizer="tok", **kw))
    for source in ({"text_file": str(text)}, {"dataset": "wikitext", "dataset_config": "wikitext-2-raw-v1",
                                               "split": "test", "text_fields": ["title", "text"]}):
        specs = [kind(**source) for kind in kinds]
        assert all(isinstance(s, TextSource) for s in specs)
        assert len({s.describe() for s in specs}) == 1 and len({s.source_key() for s in specs}) == 1
    assert DataSpec(text_file=str(copy)).source_key() == EvalSpec(text_file=str(text)).source_key()  # same bytes
    assert DataSpec(dataset="d", split="validation").source_key() != EvalSpec(dataset="d").source_key()
    assert [k(dataset="d").split for k in kinds] == ["validation", "test", "train", "train"]
    assert DataSpec(tokens="t.npy").describe() == "tokens:t.npy"
    with pytest.raises(SwapKLError, match="evaluation text: give exactly one of text_file or dataset"):
        EvalSpec(text_file=str(text), dataset="d").check()
    with pytest.raises(SwapKLError, match="text_fields names the fields of a dataset row"):
        TextSource(text_file=str(text), text_fields=("a",)).check_source("the text")
