"""Training text for models trained from scratch on a named source instead of the demo corpus.

:func:`prepare_training_text` writes a folder in the demo corpus's layout (``train.txt``, ``valid.txt`` and
``corpus.json``: paragraphs separated by a blank line, :mod:`swapkl.demo.corpus`) and saves a named tokenizer
next to it, so the demo trainer (:func:`swapkl.demo.train.train_demo_model`) reads them as it reads the demo
corpus and the demo tokenizer. The text comes from a hub dataset (read by :func:`swapkl.data.windows.
dataset_paragraphs`, the one reader of dataset text: blank and ``= Heading =`` rows dropped) or from a local
text file (:func:`swapkl.data.windows.text_file_paragraphs`); the training text can be cut at a token budget,
counted with the tokenizer exactly as the trainer's token stream counts
(:func:`swapkl.demo.training_windows.token_stream`).
"""

from __future__ import annotations

import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from swapkl.data.data_spec import TextSource
from swapkl.data.windows import dataset_paragraphs, default_bos, text_file_paragraphs
from swapkl.demo.corpus import CORPUS_FORMAT, MANIFEST, format_paragraphs, normalise_paragraphs
from swapkl.demo.training_windows import PARAGRAPH_SEPARATOR
from swapkl.errors import SwapKLError
from swapkl.tables.atomic import claim_folder, move_files_into, write_json_atomic, write_text_atomic
from swapkl.tables.provenance import file_sha256

OWNER_MARK = ".swapkl-training-text"  # marks a folder that prepare_training_text made
TOKENIZER_MARK = ".swapkl-training-tokenizer"
#: share of a local text file's paragraphs held out as ``valid.txt``: its last paragraphs (at least one)
VALID_FRACTION = 0.05
#: paragraphs tokenised at once while counting the token budget
_CHUNK = 2048


@dataclass(frozen=True, kw_only=True)
class TrainingText(TextSource):
    """Where the training text comes from (a :class:`~swapkl.data.data_spec.TextSource`: a hub dataset, ``split``
    for training and ``valid_split`` for held-out text, or a local ``text_file``); ``tokenizer`` (a hub name or a
    local folder) and ``max_tokens`` (the training text's token budget; None: all of it)."""

    tokenizer: str
    split: str = "train"
    valid_split: str = "validation"
    max_tokens: int | None = None

    def __post_init__(self):
        super().__post_init__()
        if bool(self.dataset) == bool(self.text_file):
            raise SwapKLError("training text needs exactly one of `dataset` and `text_file`")
        if self.max_tokens is not None and (not isinstance(self.max_tokens, int) or self.max_tokens < 1):
            raise SwapKLError(f"`max_tokens` {self.max_tokens!r} must be a positive integer")


def load_training_tokenizer(name: str):
    """The tokenizer ``name`` (hub name or folder) as the trainer uses it: the eos token pads when it has no
    pad token (as the paper's GPT-2 setup did), and it must add no BOS token (the trainer's stream has none)."""
    from transformers import AutoTokenizer

    try:
        tokenizer = AutoTokenizer.from_pretrained(name)
    except Exception as e:
        raise SwapKLError(f"cannot load tokenizer {name!r}: {e}") from e
    if tokenizer.pad_token is None:
        if tokenizer.eos_token is None:
            raise SwapKLError(f"tokenizer {name!r} has neither a pad nor an eos token")
        tokenizer.pad_token = tokenizer.eos_token
    if default_bos(tokenizer) is not None:
        raise SwapKLError(f"tokenizer {name!r} adds a BOS token by default; the trainer's token stream has none")
    return tokenizer


def budget_paragraphs(paragraphs: list[str], tokenizer, max_tokens: int | None) -> tuple[list[str], int]:
    """The leading paragraphs whose token stream (paragraphs joined by the trainer's separator) first reaches
    ``max_tokens`` (all of them when None or never reached), and that stream's length."""
    separator = len(tokenizer(PARAGRAPH_SEPARATOR, add_special_tokens=False)["input_ids"])
    total = 0
    for start in range(0, len(paragraphs), _CHUNK):
        chunk = paragraphs[start: start + _CHUNK]
        for k, ids in enumerate(tokenizer(chunk, add_special_tokens=False)["input_ids"]):
            total += len(ids) + (separator if start + k else 0)
            if max_tokens is not None and total >= max_tokens:
                return paragraphs[: start + k + 1], total
    return list(paragraphs), total


def _source_splits(source: TrainingText) -> dict[str, list[str]]:
    """The train and valid paragraphs, one line each (whitespace collapsed, as in the demo corpus)."""
    if source.dataset:
        return {name: normalise_paragraphs(dataset_paragraphs(replace(source, split=split)))
                for name, split in (("train", source.split), ("valid", source.valid_split))}
    paragraphs = normalise_paragraphs(text_file_paragraphs(source.text_file))
    n_valid = max(1, round(VALID_FRACTION * len(paragraphs))) if len(paragraphs) > 1 else 0
    return {"train": paragraphs[: len(paragraphs) - n_valid], "valid": paragraphs[len(paragraphs) - n_valid:]}


def save_training_tokenizer(tokenizer, name: str, out_dir: Path) -> list[str]:
    """Save ``tokenizer`` into ``out_dir`` (a folder this step owns); return the file names."""
    out_dir = Path(out_dir)
    claim_folder(out_dir, TOKENIZER_MARK)
    with tempfile.TemporaryDirectory(prefix=".tokenizer.", dir=out_dir) as tmp:
        tokenizer.save_pretrained(tmp)
        saved = move_files_into(Path(tmp), out_dir)
    if not (out_dir / "tokenizer.json").is_file():
        raise SwapKLError(f"tokenizer {name!r} has no fast version (tokenizer.json), which the trainer loads")
    return saved


def prepare_training_text(source: TrainingText, out_dir: Path, tokenizer_dir: Path) -> dict:
    """Write ``train.txt``, ``valid.txt`` and ``corpus.json`` into ``out_dir`` and the tokenizer into
    ``tokenizer_dir``; return the manifest. ``corpus.json`` is written last, so it marks a complete folder."""
    out_dir = Path(out_dir)
    tokenizer = load_training_tokenizer(source.tokenizer)
    splits = _source_splits(source)
    for name, paragraphs in splits.items():
        if not paragraphs:
            raise SwapKLError(f"{source.describe()} gives no {name} text")
    splits["train"], train_tokens = budget_paragraphs(splits["train"], tokenizer, source.max_tokens)
    saved = save_training_tokenizer(tokenizer, source.tokenizer, tokenizer_dir)
    claim_folder(out_dir, OWNER_MARK)
    (out_dir / MANIFEST).unlink(missing_ok=True)
    files = {}
    for name, paragraphs in splits.items():
        path = out_dir / f"{name}.txt"
        write_text_atomic(path, format_paragraphs(paragraphs))
        files[name] = {"file": path.name, "sha256": file_sha256(path), "paragraphs": len(paragraphs),
                       "bytes": path.stat().st_size}
    manifest = {
        "format": CORPUS_FORMAT, "source": source.describe(), "tokenizer": source.tokenizer,
        "tokenizer_files": saved, "vocab_size": len(tokenizer), "max_tokens": source.max_tokens,
        "train_tokens": train_tokens, "files": files,
    }
    write_json_atomic(out_dir / MANIFEST, manifest)
    return manifest
