"""The demo corpus: prose paragraphs from Python's own documentation, split train/valid/test.

Every machine can build it offline, and two machines with the same Python version build the same bytes
(``corpus.json`` records the version, the sources visited and a sha256 per file so this can be checked).

* ``train.txt`` trains the tokenizer and the demo models;
* ``valid.txt`` is probe/calibration text (KL probes, held-out loss during training);
* ``test.txt`` is perplexity-evaluation text.

Paragraphs are separated by one blank line; each paragraph is one line of whitespace-normalised text.
The split is decided per paragraph by a seeded hash of its text, so the three files are disjoint
(paragraphs are deduplicated first) and the assignment of a paragraph never depends on the others.
"""

from __future__ import annotations

import hashlib
import json
import platform
import re
from pathlib import Path

from swapkl.tables.atomic import claim_folder, write_json_atomic, write_text_atomic
from swapkl.demo.stdlib_docs import EXCLUDED_MODULES, collect_stdlib_docs
from swapkl.errors import SwapKLError
from swapkl.tables.provenance import file_sha256

SPLITS = ("train", "valid", "test")
MANIFEST = "corpus.json"
OWNER_MARK = ".swapkl-demo-corpus"  # marks a folder that build_corpus made (and may overwrite files in)
CORPUS_FORMAT = 1

_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def normalise_paragraphs(texts) -> list[str]:
    """Split texts at blank lines and collapse each paragraph's whitespace to single spaces."""
    out = []
    for text in texts:
        for block in _BLANK_LINE.split(text.replace("\r\n", "\n").replace("\r", "\n")):
            paragraph = " ".join(block.split())
            if paragraph:
                out.append(paragraph)
    return out


def is_prose(paragraph: str, *, min_words: int = 3, min_alpha: float = 0.7) -> bool:
    """True for a paragraph that reads as English prose rather than code, a doctest or a table."""
    if ">>>" in paragraph:
        return False
    if len(paragraph.split()) < min_words:
        return False
    chars = paragraph.replace(" ", "")
    return sum(c.isalpha() for c in chars) / len(chars) >= min_alpha


def dedupe(paragraphs) -> list[str]:
    """Drop repeated paragraphs, keeping the first occurrence and the order."""
    seen: set[str] = set()
    out = []
    for p in paragraphs:
        if p not in seen:
            seen.add(p)
            out.append(p)
    return out


def assign_split(paragraph: str, *, seed: int, valid_fraction: float, test_fraction: float) -> str:
    """The split of one paragraph: a uniform number from sha256(seed, text) against the fractions."""
    digest = hashlib.sha256(f"{seed}\x00{paragraph}".encode("utf-8")).digest()
    u = int.from_bytes(digest[:8], "big") / 2**64
    if u < valid_fraction:
        return "valid"
    if u < valid_fraction + test_fraction:
        return "test"
    return "train"


def split_paragraphs(paragraphs, *, seed: int = 0, valid_fraction: float = 0.05,
                     test_fraction: float = 0.05) -> dict[str, list[str]]:
    """Assign each paragraph to train/valid/test (order within a split follows the input)."""
    if not (0 < valid_fraction < 1 and 0 < test_fraction < 1 and valid_fraction + test_fraction < 1):
        raise SwapKLError(
            f"corpus split fractions valid={valid_fraction} test={test_fraction} must be in (0, 1) "
            "and sum to less than 1")
    out: dict[str, list[str]] = {s: [] for s in SPLITS}
    for p in paragraphs:
        out[assign_split(p, seed=seed, valid_fraction=valid_fraction, test_fraction=test_fraction)].append(p)
    return out


def format_paragraphs(paragraphs) -> str:
    """File text: paragraphs separated by one blank line, ending in a newline."""
    return "\n\n".join(paragraphs) + "\n" if paragraphs else ""


def read_paragraphs(path: Path) -> list[str]:
    """Paragraphs of a corpus file (the inverse of :func:`format_paragraphs`)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SwapKLError(f"cannot read corpus file {path}: {exc.strerror or exc}") from exc
    return [p.strip() for p in _BLANK_LINE.split(text) if p.strip()]


def build_corpus(out_dir: Path, *, seed: int = 0, valid_fraction: float = 0.05,
                 test_fraction: float = 0.05) -> dict:
    """Build ``train.txt``, ``valid.txt``, ``test.txt`` and ``corpus.json`` in ``out_dir``; return the manifest.

    Each file is written atomically, and ``corpus.json`` last, so its presence marks a complete corpus.
    """
    out_dir = Path(out_dir)
    if out_dir.exists() and not out_dir.is_dir():
        raise SwapKLError(f"corpus output {out_dir} exists and is not a directory")
    claim_folder(out_dir, OWNER_MARK)  # train/valid/test.txt and the manifest are replaced below
    docs = collect_stdlib_docs()
    paragraphs = normalise_paragraphs(docs.texts)
    n_raw = len(paragraphs)
    prose = dedupe(p for p in paragraphs if is_prose(p))
    splits = split_paragraphs(prose, seed=seed, valid_fraction=valid_fraction, test_fraction=test_fraction)
    (out_dir / MANIFEST).unlink(missing_ok=True)
    files = {}
    for name in SPLITS:
        path = out_dir / f"{name}.txt"
        text = format_paragraphs(splits[name])
        write_text_atomic(path, text)
        files[name] = {
            "file": path.name,
            "sha256": file_sha256(path),
            "paragraphs": len(splits[name]),
            "bytes": path.stat().st_size,
        }
    manifest = {
        "format": CORPUS_FORMAT,
        "source": "Python standard-library docstrings and pydoc_data language-reference topics",
        "python_version": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "seed": seed,
        "valid_fraction": valid_fraction,
        "test_fraction": test_fraction,
        "paragraphs_raw": n_raw,
        "paragraphs_kept": len(prose),
        "excluded_modules": sorted(EXCLUDED_MODULES),
        "parsed_files": len(docs.parsed_files),
        "imported_compiled_modules": docs.imported_modules,
        "unavailable_modules": docs.unavailable_modules,
        "pydoc_topics": docs.topics,
        "files": files,
    }
    write_json_atomic(out_dir / MANIFEST, manifest)
    return manifest


def load_corpus_manifest(corpus_dir: Path, *, verify: bool = False) -> dict:
    """Read ``corpus.json`` (optionally re-hashing the files); errors name the culprit."""
    corpus_dir = Path(corpus_dir)
    path = corpus_dir / MANIFEST
    if not path.is_file():
        raise SwapKLError(f"{corpus_dir} is not a demo corpus (no {MANIFEST}; run `swapkl demo-corpus`)")
    try:
        manifest = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise SwapKLError(f"cannot read corpus manifest {path}: {exc}") from exc
    if verify:
        for name in SPLITS:
            entry = manifest["files"][name]
            file = corpus_dir / entry["file"]
            if not file.is_file():
                raise SwapKLError(f"corpus file {file} is missing")
            if file_sha256(file) != entry["sha256"]:
                raise SwapKLError(f"corpus file {file} does not match the sha256 in {path}")
    return manifest


def corpus_file(corpus_dir: Path, split: str) -> Path:
    """Path of one split's text file, checked to exist."""
    if split not in SPLITS:
        raise SwapKLError(f"unknown corpus split {split!r} (expected one of {', '.join(SPLITS)})")
    path = Path(corpus_dir) / f"{split}.txt"
    if not path.is_file():
        raise SwapKLError(f"corpus file {path} is missing (run `swapkl demo-corpus --out {corpus_dir}`)")
    return path
