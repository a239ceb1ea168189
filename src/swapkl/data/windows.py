"""Token windows for probing: a token array, a `datasets` dataset, or a local text file.

Selection rule for text (documented in the README):

1. Split the text into paragraphs. Dataset rows are paragraphs (WikiText layout: blank
   rows and ``= Heading =`` rows are dropped). A row's text is its ``text`` column, or with
   ``text_fields`` (:func:`row_text`) its named fields joined by a blank line. A text file's
   paragraphs are separated by blank lines.
   With ``text_format: lines`` a text file holds one item (e.g. a prompt) per non-empty line; with
   ``text_format: jsonl`` one JSON string per line, taken verbatim (a prompt may contain newlines).
2. Tokenise each paragraph with the model's tokenizer, without special tokens except the BOS token:
   when the tokenizer adds one by default (Llama-3's ``<|begin_of_text|>``; :func:`default_bos`),
   it is prepended, as the model saw it in training (and counted in ``min_tokens`` and ``seq_len``).
3. Keep paragraphs with at least ``min_tokens`` (>= 2) tokens and cut them to ``seq_len``.
4. Draw ``n_seqs`` of them without replacement with ``numpy.random.default_rng(seed)``
   (a permutation of the eligible paragraphs; the first ``n_seqs`` are kept in corpus order).
   ``selection: first`` keeps the first ``n_seqs`` eligible items in file order instead (no draw), and
   ``selection: paper-qwen3`` applies the rule of :func:`paper_qwen3_items` before step 2.
5. Right-pad shorter windows with the pad id of ``pad_token`` (:func:`resolve_pad_id`); padded
   positions have attention mask 0 and never count (``padding: masked``, the default).

Compatibility mode ``padding: counted`` (the paper's Pythia trajectory: short prompts right-padded
to 128 tokens with end-of-text, no attention mask, KL averaged over every position): the windows are
padded with the id that ``pad_token`` names (``tokenizer``: the tokenizer's pad token, its EOS token
when it has none; ``eos``: the EOS token, as the paper's code ended up using; or an explicit id) and
the attention mask is 1 everywhere, so padded positions are attended to and counted in every mean. The setting is part of
the DataSpec, hence of every provenance record that holds it.

Filled windows (``packing: filled``): steps 3 and 5 leave most of a window empty when paragraphs are short (the
padding is not scored, so the tokens an answer rests on fall below those requested). With ``packing: filled`` the
items of step 1 are joined in order by a blank line and tokenised as one text (no special tokens); the token
stream is cut into consecutive windows of ``seq_len`` tokens (``seq_len - 1`` after the BOS token, when the
tokenizer adds one, which starts every window), the incomplete last piece dropped; step 4 then draws ``n_seqs`` of
these windows (``random``: the sorted first ``n_seqs`` of a ``default_rng(seed)`` permutation; ``first``: the first
``n_seqs``). Every position is scored, so the windows hold exactly ``n_seqs x seq_len`` tokens. ``min_tokens``,
``padding`` and ``pad_token`` do not apply, and ``selection: paper-qwen3`` (a rule about prompts) is refused.
"""

from __future__ import annotations

import hashlib
import json
import sys
from dataclasses import dataclass

import numpy as np

from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import open_input, require_npy
from swapkl.options import require_int
from swapkl.data.text_rules import paper_qwen3_items
from swapkl.data.data_spec import (PACKINGS, SELECTIONS, TEXT_FORMATS, DataSpec, check_pad_token,
                                   check_text_fields, describe_dataset)


#: what joins the fields of a dataset row named by ``text_fields``, and the items of a list-valued field
FIELD_SEPARATOR = "\n\n"


@dataclass
class Windows:
    input_ids: np.ndarray  # [n_seqs, seq_len] int64
    attention_mask: np.ndarray  # [n_seqs, seq_len] int64
    source: str
    bos_token_id: int | None = None  # prepended to every window (the tokenizer adds it by default)
    pad_token_id: int | None = None  # what shorter windows were right-padded with (None: a token file)

    @property
    def sha256(self) -> str:
        h = hashlib.sha256()
        h.update(np.ascontiguousarray(self.input_ids, dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(self.attention_mask, dtype=np.int64).tobytes())
        return h.hexdigest()

    @property
    def n_tokens(self) -> int:
        return int(self.attention_mask.sum())

    def shortfall(self, least: float = 0.5) -> str | None:
        """A warning when the windows hold less than ``least`` of the positions they could (short paragraphs
        are right-padded, and padding is not scored), else None: the scored size is what an answer rests on,
        not the requested one."""
        n, width = self.input_ids.shape
        if n * width == 0 or self.n_tokens >= least * n * width:
            return None
        return (f"{self.source}: the {n} windows of {width} tokens hold {self.n_tokens:,} tokens, "
                f"{100 * self.n_tokens / (n * width):.0f}% of the {n * width:,} requested (short paragraphs are "
                "padded, and padding is not scored); every number rests on the tokens held")


def check_spec(spec: DataSpec) -> None:
    given = [x for x in (spec.tokens, spec.dataset, spec.text_file) if x]
    if len(given) != 1:
        raise SwapKLError("give exactly one data source: `tokens`, `dataset` or `text_file`")
    for name, label, least in (("n_seqs", "n_seqs", 1), ("seq_len", "seq_len", 2), ("seed", "seed (of the window draw)", 0)):
        require_int(label, getattr(spec, name), least)
    require_int("min_tokens", spec.min_tokens, 1)
    if spec.min_tokens < 2:  # as a token file of 1-token windows: no next token to score, nll_mean would be NaN
        raise SwapKLError(f"min_tokens must be at least 2, got {spec.min_tokens}: a window of 1 token has no next "
                          "token to predict (next-token KL and NLL need at least 2)")
    if spec.text_format not in TEXT_FORMATS:
        raise SwapKLError(f"text_format must be one of {', '.join(TEXT_FORMATS)}, got {spec.text_format!r}")
    if spec.selection not in SELECTIONS:
        raise SwapKLError(f"selection must be one of {', '.join(SELECTIONS)}, got {spec.selection!r}")
    check_pad_token(spec.pad_token)
    if spec.packing not in PACKINGS:
        raise SwapKLError(f"packing must be one of {', '.join(PACKINGS)}, got {spec.packing!r}")
    if spec.packing == "filled":
        if spec.tokens:
            raise SwapKLError("packing: filled cuts windows from text; a token file is used as is")
        if spec.selection == "paper-qwen3":
            raise SwapKLError("packing: filled joins the text into full windows, so selection paper-qwen3 (a rule "
                              "about single prompts) does not apply; use random or first")
        if spec.padding != "masked" or spec.pad_token != "tokenizer":
            raise SwapKLError("packing: filled leaves nothing to pad; leave padding and pad_token at their defaults")
    if spec.padding not in ("masked", "counted"):
        raise SwapKLError(f"padding must be 'masked' or 'counted', got {spec.padding!r}")
    if spec.tokens and spec.padding != "masked":
        raise SwapKLError("padding: counted applies to text sources; a token file is used as is")
    if spec.tokens and (spec.pad_token != "tokenizer" or spec.selection != "random"):
        raise SwapKLError("pad_token and selection apply to text sources; a token file is used as is")
    check_text_fields(spec.text_fields, bool(spec.dataset))


def resolve_pad_id(tokenizer, pad_token, padding: str) -> int:
    """The id that right-pads shorter windows.

    ``tokenizer``: the tokenizer's pad token; without one, its EOS token under ``padding: counted`` (where
    the pad is an input the model sees) and 0 under ``masked`` (where it is never attended to nor counted).
    ``eos``: the EOS token (an error when there is none). An int: that id (checked against the vocabulary
    with the windows)."""
    if pad_token == "eos":
        if tokenizer.eos_token_id is None:
            raise SwapKLError("pad_token: eos, but the tokenizer has no EOS token; give the pad id as a number")
        return int(tokenizer.eos_token_id)
    if pad_token != "tokenizer":
        return int(pad_token)
    pad = tokenizer.pad_token_id
    if pad is None and padding == "counted":
        pad = tokenizer.eos_token_id
        if pad is None:
            raise SwapKLError("padding: counted needs a pad or EOS token, and the tokenizer has neither")
    return 0 if pad is None else int(pad)


def wikitext_paragraphs(rows) -> list[str]:
    out = []
    for row in rows:
        t = row.strip()
        if not t or (t.startswith("=") and t.endswith("=")):
            continue
        out.append(t)
    return out


def jsonl_items(text: str, path: str) -> list[str]:
    """One JSON string per line, verbatim (blank lines are skipped); anything else is an error naming the line."""
    items = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            item = json.loads(line)
        except ValueError as e:
            raise SwapKLError(f"{path}:{n}: not a JSON value ({e.msg}); text_format jsonl wants one JSON "
                              "string per line") from None
        if not isinstance(item, str):
            raise SwapKLError(f"{path}:{n}: holds a JSON {type(item).__name__}, not a string")
        items.append(item)
    return items


def text_file_paragraphs(path: str, text_format: str = "paragraphs") -> list[str]:
    """Paragraphs separated by blank lines, with ``text_format="lines"`` one item per non-empty line (runs of
    whitespace collapsed to one space in both), or with ``"jsonl"`` one JSON string per line, verbatim."""
    try:
        with open_input(path, "text file", "r", encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise SwapKLError(f"text file {path!r} is not UTF-8 text: byte 0x{e.object[e.start]:02x} at offset "
                          f"{e.start} is not valid UTF-8") from None
    if text_format == "jsonl":
        return jsonl_items(text, path)
    parts = text.splitlines() if text_format == "lines" else text.split("\n\n")
    return [" ".join(p.split()) for p in parts if p.strip()]


def default_bos(tokenizer) -> int | None:
    """The BOS token id when ``tokenizer`` adds one by default (e.g. Llama-3), else None."""
    bos = getattr(tokenizer, "bos_token_id", None)
    if bos is None:
        return None
    with_special = tokenizer("a")["input_ids"]
    plain = tokenizer("a", add_special_tokens=False)["input_ids"]
    return int(bos) if with_special[:1] == [bos] and plain[:1] != [bos] else None


def tokenize_text(tokenizer, text: str) -> list[int]:
    """``text``'s token ids without special tokens, except the BOS token the tokenizer adds by default."""
    ids = list(tokenizer(text, add_special_tokens=False)["input_ids"])
    bos = default_bos(tokenizer)
    return ids if bos is None else [bos, *ids]


def row_text(row: dict, fields) -> str:
    """A dataset row's text from ``fields``: each field's value (a string, or a list of strings whose items
    count as values), blank values left out, joined in order by :data:`FIELD_SEPARATOR` (a blank line)."""
    parts = []
    for f in fields:
        value = row[f]
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if item is None:
                continue
            if not isinstance(item, str):
                raise SwapKLError(f"field {f!r} holds {type(item).__name__} values, not text")
            if item.strip():
                parts.append(item)
    return FIELD_SEPARATOR.join(parts)


def dataset_paragraphs(spec) -> list[str]:
    """The paragraphs of a hub dataset: the one reader of dataset text (probe, calibration and LM windows,
    perplexity text). ``spec`` has ``dataset``, ``dataset_config``, ``split`` and ``text_fields``."""
    return wikitext_paragraphs(dataset_rows(spec))


def dataset_rows(spec) -> list[str]:
    """The rows of a hub dataset as they are (their ``text`` column, or ``text_fields`` joined by
    :func:`row_text`), before :func:`wikitext_paragraphs` strips them and drops blank and heading rows."""
    try:
        import datasets
    except ImportError as e:  # pragma: no cover - depends on the install
        raise SwapKLError("reading a hub dataset needs the 'datasets' package: pip install 'swapkl[hub]'") from e
    # datasets' own progress bars would clutter logs and error output when stderr is not a TTY
    quiet = not sys.stderr.isatty() and datasets.is_progress_bar_enabled()
    if quiet:
        datasets.disable_progress_bar()
    try:
        ds = datasets.load_dataset(spec.dataset, spec.dataset_config, split=spec.split)
    except Exception as e:
        raise SwapKLError(f"cannot load dataset {spec.dataset}/{spec.dataset_config} split {spec.split!r}: {e}") from e
    finally:
        if quiet:
            datasets.enable_progress_bar()
    fields = getattr(spec, "text_fields", None) or ("text",)
    missing = [f for f in fields if f not in ds.column_names]
    if missing:
        hint = "" if getattr(spec, "text_fields", None) else "; name the fields that hold the text with text_fields"
        raise SwapKLError(f"{describe_dataset(spec)} has no field {missing[0]!r} (its columns: "
                          f"{', '.join(ds.column_names)}){hint}")
    if not getattr(spec, "text_fields", None):
        return list(ds["text"])
    columns = [ds[f] for f in fields]
    try:
        rows = [row_text(dict(zip(fields, values)), fields) for values in zip(*columns)]
    except SwapKLError as e:
        raise SwapKLError(f"{describe_dataset(spec)}: {e}") from None
    return rows


def select_windows(paragraphs: list[str], tokenize, spec: DataSpec, pad_id: int = 0,
                   bos_token_id: int | None = None) -> Windows:
    """Apply the documented selection rule to already-split paragraphs (``tokenize`` already
    prepends ``bos_token_id`` when it is set; it is only recorded here)."""
    if spec.selection == "paper-qwen3":
        paragraphs = paper_qwen3_items(paragraphs, spec.seed)
    in_order = spec.selection != "random"
    eligible = []
    for p in paragraphs:
        if in_order and len(eligible) == spec.n_seqs:
            break  # the first n_seqs eligible items: nothing after them is tokenised
        ids = tokenize(p)
        if len(ids) >= spec.min_tokens:
            eligible.append(ids[: spec.seq_len])
    if len(eligible) < spec.n_seqs:
        raise SwapKLError(
            f"{spec.describe()} has only {len(eligible)} paragraphs with at least {spec.min_tokens} tokens; "
            f"{spec.n_seqs} are needed"
        )
    if in_order:
        chosen = np.arange(spec.n_seqs)
    else:
        chosen = np.sort(np.random.default_rng(spec.seed).permutation(len(eligible))[: spec.n_seqs])
    ids = np.full((spec.n_seqs, spec.seq_len), pad_id, dtype=np.int64)
    mask = np.zeros((spec.n_seqs, spec.seq_len), dtype=np.int64)
    for row, k in enumerate(chosen):
        w = eligible[k]
        ids[row, : len(w)] = w
        mask[row, : len(w)] = 1
    if spec.padding == "counted":
        mask[:] = 1  # compatibility: no attention mask, padded positions count like text
    return Windows(ids, mask, spec.describe(), bos_token_id, int(pad_id))


def fill_windows(stream, spec: DataSpec, bos_token_id: int | None = None) -> Windows:
    """Full windows cut from the token ``stream`` (the module docstring's "Filled windows"), each started by
    ``bos_token_id`` when it is set."""
    body = spec.seq_len - (bos_token_id is not None)
    if body < 1:
        raise SwapKLError(f"seq_len {spec.seq_len} leaves no room for text after the BOS token")
    stream = np.asarray(stream, dtype=np.int64)
    n_pool = len(stream) // body
    if n_pool < spec.n_seqs:
        raise SwapKLError(f"{spec.describe()} holds {len(stream):,} tokens, {n_pool} filled windows of "
                          f"{spec.seq_len} tokens; {spec.n_seqs} are needed")
    if spec.selection == "first":
        chosen = np.arange(spec.n_seqs)
    else:
        chosen = np.sort(np.random.default_rng(spec.seed).permutation(n_pool)[: spec.n_seqs])
    pieces = stream[: n_pool * body].reshape(n_pool, body)[chosen]
    if bos_token_id is not None:
        pieces = np.concatenate([np.full((spec.n_seqs, 1), bos_token_id, dtype=np.int64), pieces], axis=1)
    return Windows(np.ascontiguousarray(pieces), np.ones_like(pieces), spec.describe(), bos_token_id, None)


def load_token_file(path: str) -> Windows:
    require_npy(path, "token file")
    try:
        with open_input(path, "token file") as f:
            arr = np.load(f, allow_pickle=False)
    except Exception as e:
        raise SwapKLError(f"token file {path!r} is not a readable .npy array: {e}") from e
    return token_windows(arr, f"token file {path!r}", f"tokens:{path}")


def token_windows(arr: np.ndarray, what: str, source: str) -> Windows:
    """Windows of the token ids ``arr`` ``[n_seqs, seq_len]``, every position scored; ``what`` names the array in
    an error (``token file 'x.npy'``), ``source`` is what the records call it."""
    if arr.ndim != 2 or not np.issubdtype(arr.dtype, np.integer):
        raise SwapKLError(f"{what} must hold an integer array [n_seqs, seq_len], got {arr.dtype} {arr.shape}")
    if arr.size == 0:
        raise SwapKLError(f"{what} is empty")
    if arr.shape[1] < 2:
        raise SwapKLError(f"{what} has windows of {arr.shape[1]} token; next-token KL needs at least 2")
    if arr.dtype.kind == "u" and int(arr.max()) > np.iinfo(np.int64).max:
        # the cast to int64 below would wrap such an id to a negative number
        raise SwapKLError(f"token id {int(arr.max())} in {source} does not fit in int64 (no vocabulary is that large)")
    arr = arr.astype(np.int64)
    return Windows(arr, np.ones_like(arr), source)


def load_windows(spec: DataSpec, tokenizer=None) -> Windows:
    """Windows for ``spec``; ``tokenizer`` is only needed for text sources."""
    check_spec(spec)
    if spec.tokens:
        return load_token_file(spec.tokens)
    if tokenizer is None:
        raise SwapKLError("this model directory has no tokenizer; give `tokens` (a FILE.npy)")
    paragraphs = (text_file_paragraphs(spec.text_file, spec.text_format) if spec.text_file
                  else dataset_paragraphs(spec))
    if not paragraphs:
        raise SwapKLError(f"{spec.describe()} is empty")
    if spec.packing == "filled":
        stream = tokenizer("\n\n".join(paragraphs), add_special_tokens=False, verbose=False)["input_ids"]
        return fill_windows(stream, spec, default_bos(tokenizer))
    pad = resolve_pad_id(tokenizer, spec.pad_token, spec.padding)
    return select_windows(paragraphs, lambda t: tokenize_text(tokenizer, t), spec, pad, default_bos(tokenizer))


def check_windows(w: Windows, vocab_size: int, max_positions: int | None) -> None:
    """Token ids must lie in the vocabulary and windows must fit the model's positions."""
    lo, hi = int(w.input_ids.min()), int(w.input_ids.max())
    if lo < 0 or hi >= vocab_size:
        bad = hi if hi >= vocab_size else lo
        raise SwapKLError(f"token id {bad} in {w.source} is outside the model vocabulary [0, {vocab_size})")
    if max_positions is not None and w.input_ids.shape[1] > max_positions:
        raise SwapKLError(
            f"seq_len {w.input_ids.shape[1]} exceeds the model's {max_positions} positions (max_position_embeddings)"
        )
