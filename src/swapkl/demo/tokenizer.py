"""A small byte-level BPE tokenizer trained on the demo corpus, loadable with ``AutoTokenizer``.

Like GPT-NeoX/Pythia's tokenizer: byte-level pre-tokenisation (every byte is representable, nothing is
unknown), ``<|endoftext|>`` as the bos/eos token and ``<|padding|>`` as the pad token.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from swapkl.tables.atomic import claim_folder, move_files_into, write_json_atomic
from swapkl.demo.corpus import corpus_file, read_paragraphs
from swapkl.tables.provenance import file_sha256
from swapkl.errors import SwapKLError

EOS_TOKEN = "<|endoftext|>"
PAD_TOKEN = "<|padding|>"
SPECIAL_TOKENS = (EOS_TOKEN, PAD_TOKEN)
MANIFEST = "demo_tokenizer.json"
OWNER_MARK = ".swapkl-demo-tokenizer"  # marks a folder that train_demo_tokenizer made
#: files a checkpoint directory needs so ``AutoTokenizer.from_pretrained`` works on it
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json")


def _build_bpe(paragraphs: list[str], vocab_size: int, min_frequency: int):
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    tok.post_processor = processors.ByteLevel(trim_offsets=False)
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        min_frequency=min_frequency,
        special_tokens=list(SPECIAL_TOKENS),
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    tok.train_from_iterator(paragraphs, trainer=trainer, length=len(paragraphs))
    return tok


def train_demo_tokenizer(corpus_dir: Path, out_dir: Path, *, vocab_size: int = 2048,
                         min_frequency: int = 2) -> Path:
    """Train a byte-level BPE on ``corpus_dir/train.txt`` and save it to ``out_dir``; return ``out_dir``.

    ``out_dir`` then holds ``tokenizer.json`` and ``tokenizer_config.json`` (a ``PreTrainedTokenizerFast``)
    plus ``demo_tokenizer.json`` (vocab size, corpus hash). Training is deterministic: the same
    ``train.txt`` gives byte-identical files.
    """
    n_base = 256 + len(SPECIAL_TOKENS)
    if vocab_size <= n_base:
        raise SwapKLError(f"`vocab_size` {vocab_size} is too small: byte-level BPE needs more than {n_base}")
    train_path = corpus_file(corpus_dir, "train")
    paragraphs = read_paragraphs(train_path)
    if not paragraphs:
        raise SwapKLError(f"corpus file {train_path} is empty")

    bpe = _build_bpe(paragraphs, vocab_size, min_frequency)

    from transformers import PreTrainedTokenizerFast

    fast = PreTrainedTokenizerFast(
        tokenizer_object=bpe,
        bos_token=EOS_TOKEN,
        eos_token=EOS_TOKEN,
        unk_token=None,
        pad_token=PAD_TOKEN,
        model_max_length=2048,
        clean_up_tokenization_spaces=False,
    )
    out_dir = Path(out_dir)
    claim_folder(out_dir, OWNER_MARK)  # the tokenizer files and the manifest are replaced below
    (out_dir / MANIFEST).unlink(missing_ok=True)
    with tempfile.TemporaryDirectory(prefix=".tokenizer.", dir=out_dir) as tmp:
        fast.save_pretrained(tmp)
        saved = move_files_into(Path(tmp), out_dir)
    write_json_atomic(out_dir / MANIFEST, {
        "type": "byte-level BPE",
        "vocab_size": len(fast),
        "requested_vocab_size": vocab_size,
        "min_frequency": min_frequency,
        "eos_token": EOS_TOKEN,
        "pad_token": PAD_TOKEN,
        "eos_token_id": fast.eos_token_id,
        "pad_token_id": fast.pad_token_id,
        "train_sha256": file_sha256(train_path),
        "files": saved,
    })
    return out_dir


def load_demo_tokenizer(tokenizer_dir: Path):
    """Load the saved tokenizer with ``AutoTokenizer`` (errors name the directory)."""
    tokenizer_dir = Path(tokenizer_dir)
    if not (tokenizer_dir / "tokenizer.json").is_file():
        raise SwapKLError(f"{tokenizer_dir} holds no tokenizer.json (run `swapkl demo-tokenizer`)")
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tokenizer_dir))
