"""The position-encoding ablation's training text from a named source (swapkl.demo.training_text, rule
prepare_pe_text): a hub dataset (datasets.load_dataset answered from memory: no hub here) or a local text file,
with a tokenizer built in the test; the prepared folder against an independent reading of the rows, the demo
trainer on it, the config block and the workflow's dry run."""

from __future__ import annotations

import hashlib
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from direct_config import refusal, validated
from swapkl.studies.pe_ablation.models import pe_metadata, pe_text_inputs, pe_text_mem_mb, pe_training_text
from swapkl.demo.training_text import TrainingText, prepare_training_text
from swapkl.demo.architectures import DemoSize
from swapkl.demo.train import train_demo_model
from swapkl.demo.training_windows import token_stream
from swapkl.errors import SwapKLError

REPO = Path(__file__).resolve().parents[1]
EOS = "<|endoftext|>"
WORDS = ("the river", "a stone", "bridges", "of old towns", "north", "was built", "in 1820", "and rebuilt")


def _rows(n: int, seed: int) -> list[str]:
    """WikiText-like rows: prose lines with stray spaces, blank rows and `= Heading =` rows."""
    rows = []
    for k in range(n):
        if k % 7 == 0:
            rows.append(f" = Section {seed}.{k} = \n")
        elif k % 5 == 0:
            rows.append(" \n")
        else:
            words = [WORDS[(k * 3 + j * seed) % len(WORDS)] for j in range(4 + k % 6)]
            rows.append(" " + "  ".join(words) + f" {k} .\n")
    return rows


def _tokenizer_folder(path: Path) -> Path:
    """A byte-level BPE with only an eos token (like GPT-2's: no pad token, no BOS added), saved to ``path``."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    bpe = Tokenizer(models.BPE())
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(_rows(60, 1), trainer=trainers.BpeTrainer(
        vocab_size=300, special_tokens=[EOS], initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False))
    PreTrainedTokenizerFast(tokenizer_object=bpe, bos_token=EOS, eos_token=EOS).save_pretrained(path)
    return path


@pytest.fixture
def hub(monkeypatch):
    """datasets.load_dataset answering from memory: {(name, config, split): rows}; the calls it got."""
    import datasets

    tables, calls = {}, []

    def load_dataset(name, config=None, split=None):
        calls.append((name, config, split))
        return datasets.Dataset.from_dict({"text": tables[(name, config, split)]})

    monkeypatch.setattr(datasets, "load_dataset", load_dataset)
    return tables, calls


def _kept(rows: list[str]) -> list[str]:
    """The paragraphs of WikiText rows, computed here: blank and heading rows dropped, whitespace collapsed."""
    out = []
    for row in rows:
        text = " ".join(row.split())
        if text and not re.fullmatch(r"=+ .* =+", text):
            out.append(text)
    return out


def _paragraphs(path: Path) -> list[str]:
    return [p.strip() for p in path.read_text(encoding="utf-8").split("\n\n") if p.strip()]


def test_a_dataset_is_prepared_cut_at_the_token_budget_and_trains_the_matched_model(tmp_path, hub):
    from transformers import AutoTokenizer

    tables, calls = hub
    tables[("wiki", "raw", "train")] = _rows(400, 3)
    tables[("wiki", "raw", "validation")] = _rows(120, 5)
    tok_src = _tokenizer_folder(tmp_path / "tok_src")
    tok = AutoTokenizer.from_pretrained(tok_src)
    budget = 1500
    source = TrainingText(tokenizer=str(tok_src), dataset="wiki", dataset_config="raw", max_tokens=budget)
    manifest = prepare_training_text(source, tmp_path / "text", tmp_path / "tok")
    assert calls == [("wiki", "raw", "train"), ("wiki", "raw", "validation")]

    # the budget, counted here on the joined text: the shortest prefix of paragraphs reaching it
    kept = _kept(tables[("wiki", "raw", "train")])
    n = next(k for k in range(1, len(kept) + 1)
             if len(tok("\n\n".join(kept[:k]), add_special_tokens=False)["input_ids"]) >= budget)
    assert n < len(kept)  # the budget cuts
    assert _paragraphs(tmp_path / "text" / "train.txt") == kept[:n]
    assert _paragraphs(tmp_path / "text" / "valid.txt") == _kept(tables[("wiki", "raw", "validation")])
    saved = AutoTokenizer.from_pretrained(tmp_path / "tok")
    assert saved.pad_token == EOS and len(saved) == len(tok)
    stream = token_stream(_paragraphs(tmp_path / "text" / "train.txt"), saved)
    assert manifest["train_tokens"] == stream.numel() >= budget
    assert manifest["source"] == "dataset:wiki/raw:train"

    size = DemoSize(num_layers=4, hidden_size=16, num_heads=2, num_kv_heads=2, intermediate_size=64,
                    max_position_embeddings=32)
    summary = train_demo_model("matched", tmp_path / "text", tmp_path / "tok", tmp_path / "run", steps=3,
                               size=size, batch_size=4, seq_len=32, eval_windows=2, position_encoding="rope",
                               threads=1, progress=False)
    assert summary["vocab_size"] == len(tok) and summary["train_windows"] == stream.numel() // 32
    assert summary["corpus_sha256"]["train"] == hashlib.sha256((tmp_path / "text" / "train.txt").read_bytes()).hexdigest()
    assert AutoTokenizer.from_pretrained(tmp_path / "run" / "step3").pad_token == EOS


def test_a_local_text_file_holds_out_its_last_twentieth(tmp_path):
    paragraphs = _kept(_rows(300, 7))
    text_file = tmp_path / "my.txt"
    text_file.write_text("\n\n".join(p.replace(" ", "\n", 1) for p in paragraphs) + "\n")
    tok_src = _tokenizer_folder(tmp_path / "tok_src")
    prepare_training_text(TrainingText(tokenizer=str(tok_src), text_file=str(text_file)), tmp_path / "text",
                          tmp_path / "tok")
    n_valid = round(len(paragraphs) / 20)
    assert n_valid > 1
    assert _paragraphs(tmp_path / "text" / "valid.txt") == paragraphs[-n_valid:]
    assert _paragraphs(tmp_path / "text" / "train.txt") == paragraphs[:-n_valid]


def test_sources_and_tokenizers_that_cannot_work_are_refused(tmp_path, hub):
    tok_src = _tokenizer_folder(tmp_path / "tok_src")
    with pytest.raises(SwapKLError, match="exactly one of `dataset` and `text_file`"):
        TrainingText(tokenizer=str(tok_src), dataset="wiki", text_file="x.txt")
    with pytest.raises(SwapKLError, match="`max_tokens` 0"):
        TrainingText(tokenizer=str(tok_src), dataset="wiki", max_tokens=0)
    with pytest.raises(SwapKLError, match="cannot load tokenizer"):
        prepare_training_text(TrainingText(tokenizer=str(tmp_path / "none"), dataset="wiki"), tmp_path / "t",
                              tmp_path / "k")
    tables, _ = hub
    tables[("wiki", None, "train")] = _rows(20, 1)
    tables[("wiki", None, "validation")] = [" = Only = \n", "\n"]
    with pytest.raises(SwapKLError, match="gives no valid text"):
        prepare_training_text(TrainingText(tokenizer=str(tok_src), dataset="wiki"), tmp_path / "t", tmp_path / "k")


def _cfg(**block) -> dict:
    return {"models": {"m": {"demo": {"arch": "llama"}, "revisions": ["step10"]}},
            "pe_ablation": {"enabled": True, **block}}


def test_the_config_block_names_the_text_and_leaves_the_demo_as_it_was():
    demo, _ = validated(_cfg())
    explicit, _ = validated(_cfg(train_text=None, warmup_steps=None))
    assert pe_training_text(demo) is None and pe_text_inputs(demo)["tokenizer"] == "resources/demo/tokenizer"
    assert pe_metadata(demo, "pe-rope-6L") == pe_metadata(explicit, "pe-rope-6L")
    named, _ = validated(_cfg(train_text={"dataset": "wikitext", "dataset_config": "wikitext-103-raw-v1",
                                          "tokenizer": "gpt2", "max_tokens": 1000}))
    assert pe_training_text(named) == {"dataset": "wikitext", "dataset_config": "wikitext-103-raw-v1",
                                       "max_tokens": 1000, "tokenizer": "gpt2"}
    assert pe_text_inputs(named) == {"corpus_dir": "resources/pe_ablation/text", "tokenizer":
                                     "resources/pe_ablation/tokenizer", "corpus": [
                                         f"resources/pe_ablation/text/{n}" for n in ("train.txt", "valid.txt",
                                                                                     "corpus.json")]}
    assert pe_metadata(named, "pe-rope-6L") != pe_metadata(demo, "pe-rope-6L")
    assert pe_text_mem_mb(demo) == 0 and pe_text_mem_mb(named) == 1  # 1000 tokens of 80 bytes, in whole MiB


@pytest.mark.parametrize("block, message", [
    (dict(train_text={"tokenizer": "gpt2", "max_tokens": 9}), "pe_ablation.train_text: give exactly one of"),
    (dict(train_text={"dataset": "wikitext", "text_file": "a.txt", "tokenizer": "gpt2", "max_tokens": 9}),
     "exactly one of"),
    (dict(train_text={"dataset": "wikitext", "max_tokens": 9}), "pe_ablation.train_text.tokenizer"),
    (dict(train_text={"text_file": "a.txt", "tokenizer": "gpt2", "text_fields": ["a"], "max_tokens": 9}),
     "text_fields"),
    (dict(train_text={"dataset": "wikitext", "tokenizer": "gpt2", "max_tokens": 0}), "max_tokens"),
    (dict(train_text={"dataset": "wikitext", "tokenizer": "gpt2"}), "pe_ablation.train_text.max_tokens: give"),
    (dict(warmup_steps=400), "pe_ablation.warmup_steps: 400 warmup steps exceed the 300 steps"),
])
def test_the_config_block_refuses_a_text_that_cannot_work(block, message):
    got = refusal(_cfg(**block))
    assert got is not None and message in got, got


def test_the_study_dry_run_trains_every_pe_model_on_the_prepared_text():
    """config.yaml: one prepare_pe_text job (WikiText-103, GPT-2 tokenizer) whose outputs every training job
    reads, and probes on its validation text."""
    cfg = yaml.safe_load((REPO / "config.yaml").read_text())
    assert cfg["pe_ablation"]["train_text"]["tokenizer"] == "gpt2"
    result = subprocess.run([sys.executable, "-m", "snakemake", "--nolock", "--cores", "1", "--dry-run", "--forceall",
                             "--configfile", "config.yaml"], cwd=REPO, capture_output=True, text=True, timeout=300)
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    jobs = {}
    for block in re.split(r"^\[.*\]$", out, flags=re.M):
        rule = re.search(r"^(?:local)?rule (\w+):$", block, re.M)
        if rule:
            field = lambda name: set((re.findall(rf"^    {name}: (.*)$", block, re.M) or [""])[0].split(", "))  # noqa: E731
            jobs.setdefault(rule.group(1), []).append((field("input"), field("output")))
    prepared = {"resources/pe_ablation/text/train.txt", "resources/pe_ablation/text/valid.txt",
                "resources/pe_ablation/text/corpus.json", "resources/pe_ablation/tokenizer"}
    assert [out for _, out in jobs["prepare_pe_text"]] == [prepared]
    n_models = len(cfg["pe_ablation"]["encodings"]) * len(cfg["pe_ablation"]["depths"])
    assert len(jobs["train_pe_model"]) == n_models and all(prepared <= inp for inp, _ in jobs["train_pe_model"])
    assert all("resources/pe_ablation/text/valid.txt" in inp for inp, _ in jobs["probe_pe_model"])
    # nothing of the ablation reads the demo corpus or tokenizer (the study builds them for the snowball's task)
    assert not any(p.startswith(("resources/demo/corpus", "resources/demo/tokenizer"))
                   for inp, _ in jobs["train_pe_model"] + jobs["probe_pe_model"] for p in inp)
