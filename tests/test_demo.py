"""The offline demo: corpus, tokenizer, checkpoint schedule and tiny-model training."""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import platform

import pytest
import torch

from swapkl.demo.architectures import DemoSize
from swapkl.demo.corpus import (
    SPLITS, build_corpus, dedupe, is_prose, load_corpus_manifest, normalise_paragraphs, read_paragraphs,
    split_paragraphs,
)
from swapkl.demo.schedule import checkpoint_schedule, lr_at, parse_steps
from swapkl.demo.tokenizer import EOS_TOKEN, PAD_TOKEN, train_demo_tokenizer
from swapkl.demo.train import mean_nll, train_demo_model
from swapkl.demo.training_windows import BatchOrder, file_windows, token_stream
from swapkl.data.windows import text_file_paragraphs, tokenize_text
from swapkl.pruning.perplexity import first_words
from swapkl.errors import SwapKLError

TINY = DemoSize(num_layers=2, hidden_size=32, num_heads=2, num_kv_heads=1, intermediate_size=64,
                max_position_embeddings=64)
MODEL_CLASSES = {"gpt_neox": "GPTNeoXForCausalLM", "llama": "LlamaForCausalLM", "qwen3": "Qwen3ForCausalLM"}


def _sha(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    out = tmp_path_factory.mktemp("corpus")
    build_corpus(out)
    return out


@pytest.fixture(scope="module")
def mini_corpus(corpus, tmp_path_factory):
    """The corpus with train.txt cut to its first 2000 paragraphs, so tiny trainings tokenise it fast."""
    out = tmp_path_factory.mktemp("mini_corpus")
    manifest = json.loads((corpus / "corpus.json").read_text())
    for split in SPLITS:
        paragraphs = read_paragraphs(corpus / f"{split}.txt")
        if split == "train":
            paragraphs = paragraphs[:2000]
        (out / f"{split}.txt").write_text("\n\n".join(paragraphs) + "\n", encoding="utf-8")
        manifest["files"][split]["sha256"] = _sha(out / f"{split}.txt")
    (out / "corpus.json").write_text(json.dumps(manifest))
    return out


@pytest.fixture(scope="module")
def tokenizer_dir(mini_corpus, tmp_path_factory):
    out = tmp_path_factory.mktemp("tokenizer")
    train_demo_tokenizer(mini_corpus, out, vocab_size=512)
    return out


# --- corpus ---------------------------------------------------------------------------------------------

def test_corpus_is_deterministic_and_hashes_match(corpus, tmp_path):
    manifest = load_corpus_manifest(corpus, verify=True)
    assert manifest["python_version"] == platform.python_version()
    for split in SPLITS:
        assert manifest["files"][split]["sha256"] == _sha(corpus / f"{split}.txt")
    again = build_corpus(tmp_path)
    for split in SPLITS:
        assert (tmp_path / f"{split}.txt").read_bytes() == (corpus / f"{split}.txt").read_bytes()
        assert again["files"][split]["sha256"] == manifest["files"][split]["sha256"]


def test_corpus_splits_are_disjoint_prose_and_large_enough(corpus):
    paragraphs = {s: read_paragraphs(corpus / f"{s}.txt") for s in SPLITS}
    sets = {s: set(p) for s, p in paragraphs.items()}
    assert not sets["valid"] & sets["test"]
    assert not sets["train"] & (sets["valid"] | sets["test"])
    for s in SPLITS:
        assert len(sets[s]) == len(paragraphs[s]), f"{s}.txt has duplicate paragraphs"
        assert all(is_prose(p) and "\n" not in p for p in paragraphs[s])
    total = sum(len(p) for p in paragraphs.values())
    assert total > 5000
    assert 0.03 < len(paragraphs["valid"]) / total < 0.07
    assert 0.03 < len(paragraphs["test"]) / total < 0.07
    # blank-line separated, one paragraph per line
    text = (corpus / "valid.txt").read_text(encoding="utf-8")
    assert text == "\n\n".join(paragraphs["valid"]) + "\n"
    assert sum(len(p) for p in paragraphs["train"]) > 1_000_000


def test_corpus_contains_known_stdlib_docstrings(corpus):
    import json as json_module
    import textwrap

    text = "\n".join((corpus / f"{s}.txt").read_text(encoding="utf-8") for s in SPLITS)
    # first paragraphs of two docstrings, normalised independently of the corpus code
    for doc in (json_module.dumps.__doc__, textwrap.dedent.__doc__):
        first = " ".join(doc.strip().split("\n\n")[0].split())
        assert first in text


def test_paragraph_helpers():
    texts = ["First line\n   continues here.\n\n\n  Second  paragraph\tis here.\r\n\r\nx", ""]
    assert normalise_paragraphs(texts) == ["First line continues here.", "Second paragraph is here.", "x"]
    assert is_prose("Return the number of items in a container.")
    assert not is_prose(">>> len([1, 2]) 2 is the answer here")
    assert not is_prose("a = b[1] + c[2] * (d / 3)")
    assert not is_prose("Two words")
    assert dedupe(["a", "b", "a", "c", "b"]) == ["a", "b", "c"]
    paras = [f"paragraph number {i} of the test" for i in range(2000)]
    split = split_paragraphs(paras, seed=1, valid_fraction=0.1, test_fraction=0.2)
    assert sorted(sum(split.values(), [])) == sorted(paras)
    assert 150 < len(split["valid"]) < 250 and 320 < len(split["test"]) < 480
    # the assignment of a paragraph does not depend on the others, and the seed changes it
    assert split_paragraphs(paras[:100], seed=1, valid_fraction=0.1, test_fraction=0.2)["valid"] == \
        [p for p in split["valid"] if p in set(paras[:100])]
    assert split_paragraphs(paras, seed=2, valid_fraction=0.1, test_fraction=0.2)["valid"] != split["valid"]
    with pytest.raises(SwapKLError):
        split_paragraphs(paras, valid_fraction=0.6, test_fraction=0.6)


def test_missing_corpus_is_a_user_error(tmp_path):
    with pytest.raises(SwapKLError, match="corpus.json"):
        load_corpus_manifest(tmp_path)


# --- tokenizer -----------------------------------------------------------------------------------------

def test_tokenizer_loads_with_autotokenizer_and_round_trips(mini_corpus, tokenizer_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    assert len(tok) == 512
    assert tok.eos_token == EOS_TOKEN and tok.pad_token == PAD_TOKEN
    assert tok.eos_token_id != tok.pad_token_id
    text = "Return the number of items.\n  Ünïcode — and tabs\there: 3.14 ✓"
    ids = tok(text, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == text
    # a valid paragraph round-trips too, and BPE compresses it (fewer tokens than bytes)
    paragraph = read_paragraphs(mini_corpus / "valid.txt")[0]
    ids = tok(paragraph, add_special_tokens=False)["input_ids"]
    assert tok.decode(ids) == paragraph
    assert len(ids) < len(paragraph.encode("utf-8"))
    assert tok.convert_ids_to_tokens(tok.eos_token_id) == EOS_TOKEN


def test_tokenizer_is_deterministic(mini_corpus, tokenizer_dir, tmp_path):
    train_demo_tokenizer(mini_corpus, tmp_path, vocab_size=512)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        assert (tmp_path / name).read_bytes() == (tokenizer_dir / name).read_bytes()
    with pytest.raises(SwapKLError, match="`vocab_size`"):
        train_demo_tokenizer(mini_corpus, tmp_path / "small", vocab_size=100)


# --- schedule and windows ------------------------------------------------------------------------------

def test_checkpoint_schedule_reproduces_pythia():
    pythia = [0] + [2 ** k for k in range(10)] + list(range(1000, 143001, 1000))
    assert checkpoint_schedule(143000, 143) == pythia
    assert len(pythia) == 154
    assert checkpoint_schedule(400, 8) == [0, 1, 2, 4, 8, 16, 32, 50, 100, 150, 200, 250, 300, 350, 400]
    assert checkpoint_schedule(5, 10) == [0, 1, 2, 3, 4, 5]
    assert parse_steps("4, 0,1,4") == [0, 1, 4]
    with pytest.raises(SwapKLError):
        checkpoint_schedule(0, 4)
    with pytest.raises(SwapKLError):
        parse_steps("1,x")


def test_lr_schedule():
    kw = dict(total_steps=100, peak_lr=1.0, warmup_steps=10, min_lr_ratio=0.1)
    assert lr_at(5, **kw) == pytest.approx(0.5)
    assert lr_at(10, **kw) == pytest.approx(1.0)
    assert lr_at(55, **kw) == pytest.approx(0.55)  # half-way down the cosine: (1 + 0.1) / 2
    assert lr_at(100, **kw) == pytest.approx(0.1)
    values = [lr_at(s, **kw) for s in range(10, 101)]
    assert all(a >= b for a, b in zip(values, values[1:]))


def test_windows_are_contiguous_slices_of_the_token_stream(mini_corpus, tokenizer_dir):
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    paragraphs = read_paragraphs(mini_corpus / "valid.txt")
    stream = token_stream(paragraphs, tok)
    # the text the perplexity evaluation reads (swapkl's reader of a text file, its join, its tokenisation),
    # tokenised as one string: the training stream holds exactly these ids
    text = first_words(text_file_paragraphs(str(mini_corpus / "valid.txt")), None)
    assert stream.tolist() == tokenize_text(tok, text)
    assert int((stream == tok.eos_token_id).sum()) == 0
    newline = tok.convert_tokens_to_ids("\u010a")  # the byte-level token of "\n"
    assert int((stream == newline).sum()) == 2 * (len(paragraphs) - 1)
    expected = tok.encode(paragraphs[0], add_special_tokens=False) + [newline, newline]
    expected += tok.encode(paragraphs[1], add_special_tokens=False)
    assert stream[: len(expected)].tolist() == expected
    windows = file_windows(mini_corpus / "valid.txt", tok, 64, min_windows=64)
    assert windows.shape[0] >= 64 and windows.shape[1] == 64
    assert torch.equal(windows.reshape(-1), stream[: windows.numel()])
    assert file_windows(mini_corpus / "test.txt", tok, 64, min_windows=64).shape[0] >= 64
    with pytest.raises(SwapKLError, match="windows"):
        file_windows(mini_corpus / "valid.txt", tok, 64, min_windows=10 ** 6)


def test_batch_order_is_seeded_permutation():
    a, b = BatchOrder(10, 3, seed=7), BatchOrder(10, 3, seed=7)
    batches = [a.next() for _ in range(6)]
    assert all(torch.equal(x, b.next()) for x in batches)
    first_epoch = torch.cat(batches[:3])
    assert len(set(first_epoch.tolist())) == 9  # no repeats within an epoch, tail of 1 dropped
    assert a.epoch == 2
    with pytest.raises(SwapKLError):
        BatchOrder(2, 3, seed=0)


# --- training ------------------------------------------------------------------------------------------

def _tiny_run(arch, corpus, tokenizer_dir, out, **kw):
    args = dict(steps=4, n_even=2, seed=3, size=TINY, batch_size=4, seq_len=32, eval_windows=8, threads=1,
                progress=False)
    args.update(kw)
    return train_demo_model(arch, corpus, tokenizer_dir, out, **args)


@pytest.mark.parametrize("arch", ["gpt_neox", "llama", "qwen3"])
def test_checkpoints_load_with_automodel_and_match_the_architecture(arch, mini_corpus, tokenizer_dir, tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    summary = _tiny_run(arch, mini_corpus, tokenizer_dir, tmp_path)
    assert summary["save_steps"] == [0, 1, 2, 4]
    assert sorted(p.name for p in tmp_path.iterdir() if p.is_dir()) == ["step0", "step1", "step2", "step4"]
    step0 = tmp_path / "step0"
    assert (step0 / "model.safetensors").is_file()
    assert not list(step0.glob("*.bin"))
    model = AutoModelForCausalLM.from_pretrained(str(step0))
    assert type(model).__name__ == MODEL_CLASSES[arch]
    cfg = model.config
    assert cfg.model_type == arch
    assert cfg.num_hidden_layers == 2 and cfg.hidden_size == 32 and cfg.num_attention_heads == 2
    assert cfg.max_position_embeddings == 64
    assert cfg.tie_word_embeddings is False
    head = model.get_output_embeddings().weight
    assert head.data_ptr() != model.get_input_embeddings().weight.data_ptr()
    if arch == "gpt_neox":
        assert cfg.use_parallel_residual is True
        assert cfg.rope_parameters["partial_rotary_factor"] == 0.25
    else:
        assert cfg.num_key_value_heads == 1
    if arch == "qwen3":
        assert hasattr(model.model.layers[0].self_attn, "q_norm")
    tok = AutoTokenizer.from_pretrained(str(step0))
    assert len(tok) == cfg.vocab_size == 512

    # the log's step0 held-out loss, recomputed independently from the saved checkpoint
    log = (tmp_path / "training_log.csv").read_text().splitlines()
    assert log[0] == "step,tokens,lr,heldout_loss,train_loss,train_batch_loss"
    assert [int(r.split(",")[0]) for r in log[1:]] == [0, 1, 2, 4]
    heldout = file_windows(mini_corpus / "valid.txt", tok, 32, max_windows=8)
    with torch.no_grad():
        logits = model(input_ids=heldout).logits
    logp = torch.log_softmax(logits[:, :-1].double(), dim=-1)
    nll = -logp.gather(-1, heldout[:, 1:, None]).mean().item()
    assert float(log[1].split(",")[3]) == pytest.approx(nll, rel=1e-5)
    assert summary["initial_heldout_loss"] == pytest.approx(nll, rel=1e-5)
    assert nll == pytest.approx(math.log(512), abs=0.5)  # an untrained model is near-uniform
    meta = json.loads((tmp_path / "demo_model.json").read_text())
    assert meta["arch"] == arch and meta["seed"] == 3 and meta["config"]["model_type"] == arch


def test_training_is_reproducible(mini_corpus, tokenizer_dir, tmp_path):
    deterministic_before, threads_before = torch.are_deterministic_algorithms_enabled(), torch.get_num_threads()
    _tiny_run("llama", mini_corpus, tokenizer_dir, tmp_path / "a")
    _tiny_run("llama", mini_corpus, tokenizer_dir, tmp_path / "b")
    for step in ("step0", "step4"):
        assert (tmp_path / "a" / step / "model.safetensors").read_bytes() == \
            (tmp_path / "b" / step / "model.safetensors").read_bytes()
    assert (tmp_path / "a" / "training_log.csv").read_text() == (tmp_path / "b" / "training_log.csv").read_text()
    # training changed the weights, and another seed gives another initialisation
    assert (tmp_path / "a" / "step0" / "model.safetensors").read_bytes() != \
        (tmp_path / "a" / "step4" / "model.safetensors").read_bytes()
    _tiny_run("llama", mini_corpus, tokenizer_dir, tmp_path / "c", seed=4, save_steps=[0])
    assert (tmp_path / "c" / "step0" / "model.safetensors").read_bytes() != \
        (tmp_path / "a" / "step0" / "model.safetensors").read_bytes()
    # the torch process settings are restored
    assert torch.are_deterministic_algorithms_enabled() == deterministic_before
    assert torch.get_num_threads() == threads_before


def test_rerun_with_another_schedule_removes_stale_checkpoints(mini_corpus, tokenizer_dir, tmp_path):
    _tiny_run("gpt_neox", mini_corpus, tokenizer_dir, tmp_path, save_steps=[0, 3, 4])
    (tmp_path / ".step3.123.0123456789ab.tmp").mkdir()  # as a killed run leaves it
    _tiny_run("gpt_neox", mini_corpus, tokenizer_dir, tmp_path, save_steps=["step0", 2])
    assert sorted(p.name for p in tmp_path.iterdir()) == \
        [".swapkl-demo-model", "demo_model.json", "step0", "step2", "training_log.csv"]


@pytest.mark.parametrize("step", ["corpus", "tokenizer"])
def test_corpus_and_tokenizer_never_write_into_a_folder_they_did_not_make(step, mini_corpus, tmp_path):
    """A folder with someone's train.txt / tokenizer.json: refused before any work, left as it was."""
    name, mark = ("train.txt", ".swapkl-demo-corpus") if step == "corpus" else ("tokenizer.json",
                                                                                ".swapkl-demo-tokenizer")
    (tmp_path / name).write_text("theirs")
    with pytest.raises(SwapKLError) as e:
        build_corpus(tmp_path) if step == "corpus" else train_demo_tokenizer(mini_corpus, tmp_path, vocab_size=512)
    assert str(e.value) == (f"refusing to write into {tmp_path}: it holds files that swapkl did not write "
                            f"(no {mark}); give an empty or new folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == [name] and (tmp_path / name).read_text() == "theirs"


@pytest.mark.parametrize("option, value, message", [
    ("seed", -1, "seed must be at least 0, got -1"),
    ("batch_size", 0, "batch_size must be at least 1, got 0"),
    ("seq_len", 1.5, "seq_len must be an integer, got 1.5"),
])
def test_training_options_are_checked_before_any_work(option, value, message, tmp_path):
    with pytest.raises(SwapKLError) as e:
        _tiny_run("llama", tmp_path / "no-corpus", tmp_path / "no-tokenizer", tmp_path / "out", **{option: value})
    assert str(e.value) == message
    assert list(tmp_path.iterdir()) == []


def test_training_never_cleans_up_a_folder_it_did_not_make(mini_corpus, tokenizer_dir, tmp_path):
    """A folder with someone else's step1000 checkpoint: refused, and nothing in it is touched."""
    theirs = tmp_path / "step1000"
    theirs.mkdir()
    (theirs / "model.safetensors").write_bytes(b"their weights")
    with pytest.raises(SwapKLError) as e:
        _tiny_run("gpt_neox", mini_corpus, tokenizer_dir, tmp_path, save_steps=[0])
    assert str(e.value) == (f"refusing to write into {tmp_path}: it holds files that swapkl did not write "
                            "(no .swapkl-demo-model); give an empty or new folder")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["step1000"]
    assert (theirs / "model.safetensors").read_bytes() == b"their weights"


def test_training_rejects_bad_arguments(mini_corpus, tokenizer_dir, tmp_path):
    with pytest.raises(SwapKLError, match="architecture"):
        _tiny_run("gpt2", mini_corpus, tokenizer_dir, tmp_path)
    with pytest.raises(SwapKLError, match="save steps"):
        _tiny_run("llama", mini_corpus, tokenizer_dir, tmp_path, save_steps=[0, 9])
    with pytest.raises(SwapKLError, match="save steps"):
        _tiny_run("llama", mini_corpus, tokenizer_dir, tmp_path, save_steps=["main"])
    with pytest.raises(SwapKLError, match="max_position_embeddings"):
        _tiny_run("llama", mini_corpus, tokenizer_dir, tmp_path, seq_len=128)
    with pytest.raises(SwapKLError, match="no tokenizer.json"):
        _tiny_run("llama", mini_corpus, tmp_path, tmp_path / "out")
    with pytest.raises(SwapKLError, match="divisible"):
        _tiny_run("llama", mini_corpus, tokenizer_dir, tmp_path,
                  size=DemoSize(num_layers=1, hidden_size=30, num_heads=4))


def test_mean_nll_matches_direct_computation(mini_corpus, tokenizer_dir):
    from transformers import AutoTokenizer

    from swapkl.demo.architectures import demo_config, demo_model_class

    tok = AutoTokenizer.from_pretrained(str(tokenizer_dir))
    torch.manual_seed(0)
    model = demo_model_class("gpt_neox")(demo_config("gpt_neox", TINY, vocab_size=512, eos_token_id=0,
                                                     pad_token_id=1))
    windows = file_windows(mini_corpus / "test.txt", tok, 16, max_windows=5)
    with torch.no_grad():
        direct = model(input_ids=windows, labels=windows).loss.item()  # transformers' own mean NLL
    assert mean_nll(model, windows, batch_size=2) == pytest.approx(direct, rel=1e-5)


def test_short_training_lowers_heldout_loss(mini_corpus, tokenizer_dir, tmp_path):
    summary = _tiny_run("gpt_neox", mini_corpus, tokenizer_dir, tmp_path, steps=40, save_steps=[0, 40],
                        batch_size=8, lr=1e-2)
    assert summary["final_heldout_loss"] < summary["initial_heldout_loss"] - 1.0


@pytest.mark.slow
def test_default_demo_model_learns(corpus, tmp_path):
    tok = tmp_path / "tok"
    train_demo_tokenizer(corpus, tok)
    summary = train_demo_model("gpt_neox", corpus, tok, tmp_path / "model", steps=300, threads=2,
                               progress=False)
    assert summary["initial_heldout_loss"] == pytest.approx(math.log(2048), abs=0.3)
    assert summary["final_heldout_loss"] < summary["initial_heldout_loss"] - 2.0


# --- command line --------------------------------------------------------------------------------------

def _parser():
    from swapkl.commands import demo_command as demo

    parser = argparse.ArgumentParser(prog="swapkl")
    demo.add_parser(parser.add_subparsers(dest="command", required=True))
    return parser


@pytest.mark.parametrize("command", ["demo-corpus", "demo-tokenizer", "demo-train"])
def test_cli_help(command, capsys):
    with pytest.raises(SystemExit) as exc:
        _parser().parse_args([command, "--help"])
    assert exc.value.code == 0
    assert "--out" in capsys.readouterr().out


def test_cli_train(mini_corpus, tokenizer_dir, tmp_path, capsys):
    args = _parser().parse_args([
        "demo-train", "--arch", "qwen3", "--corpus", str(mini_corpus), "--tokenizer", str(tokenizer_dir),
        "--out", str(tmp_path), "--steps", "2", "--save-steps", "0,2", "--layers", "1", "--hidden", "32",
        "--heads", "2", "--kv-heads", "1", "--intermediate", "64", "--seq-len", "16", "--batch-size", "2",
        "--eval-windows", "4", "--threads", "1"])
    args.func(args)
    assert "held-out loss" in capsys.readouterr().out
    assert sorted(p.name for p in tmp_path.glob("step*")) == ["step0", "step2"]
    args = _parser().parse_args(["demo-tokenizer", "--corpus", str(tmp_path), "--out", str(tmp_path / "t")])
    with pytest.raises(SwapKLError, match="train.txt"):
        args.func(args)


def test_demo_tasks_are_the_same_in_every_process(corpus, tmp_path):
    """``swapkl demo-tasks`` run by two processes with different string hashes (PYTHONHASHSEED) writes the same
    bytes: the choices' order and the gold index follow the seed alone (a set of choices took its order from the
    strings' hashes, so the demo's task files, and the snowball's BI on them, changed from run to run)."""
    import os
    import subprocess
    import sys

    outs = []
    for hash_seed in ("1", "2"):
        out = tmp_path / f"tasks{hash_seed}"
        subprocess.run([sys.executable, "-m", "swapkl", "demo-tasks", "--corpus", str(corpus), "--out", str(out),
                        "--n-docs", "60"], check=True, capture_output=True, timeout=300,
                       env={**os.environ, "PYTHONHASHSEED": hash_seed})
        outs.append(out)
    for name in ("demo_next_word.jsonl", "demo_continuation.jsonl"):
        assert (outs[0] / name).read_bytes() == (outs[1] / name).read_bytes(), name
    docs = [json.loads(line) for line in (outs[0] / "demo_next_word.jsonl").read_text().splitlines()]
    assert len(docs) == 60 and all(len(set(d["choices"])) == 4 for d in docs)
    assert len({d["gold"] for d in docs}) == 4  # the gold answer is not always in one place
