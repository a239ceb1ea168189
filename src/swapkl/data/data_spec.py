"""Where a text comes from (:class:`TextSource`: a local file, or a dataset's split), and what a probe's text
windows are made of (:class:`DataSpec`, a TextSource or a token file) with the checks of its small settings, apart
from the windows themselves (swapkl.data.windows, numpy): the jobs that carry a DataSpec, the command line and the
workflow's config build it without numpy. The pruning evaluation's text (:class:`swapkl.pruning.eval_spec.EvalSpec`)
and the healing's (:class:`swapkl.recovery.heal_settings.TrainText`) are TextSources too."""

from __future__ import annotations

import numbers
from dataclasses import asdict, dataclass

from swapkl.data.text_sources import source_key
from swapkl.errors import SwapKLError

#: ``text_format`` values (swapkl.data.windows, step 1 of the selection rule)
TEXT_FORMATS = ("paragraphs", "lines", "jsonl")
#: ``selection`` values (step 4)
SELECTIONS = ("random", "first", "paper-qwen3")
#: ``packing`` values: one item per window, cut and right-padded (step 3), or the items' text as one token stream
#: cut into full windows (swapkl.data.windows, "Filled windows")
PACKINGS = ("paragraph", "filled")


@dataclass(frozen=True)
class TextSource:
    """Where a text comes from: a local ``text_file``, or the ``split`` of a hub ``dataset`` (its configuration
    ``dataset_config``), whose rows' text is their ``text`` column or their ``text_fields`` joined. Each kind of
    text (probe windows, evaluation, training) adds how it is cut, and its own default split."""

    text_file: str | None = None
    dataset: str | None = None
    dataset_config: str | None = None
    split: str = "validation"
    text_fields: tuple[str, ...] | None = None  # a dataset row's text: these fields (None: the `text` column)

    def __post_init__(self):
        if isinstance(self.text_fields, list):  # from JSON or YAML
            object.__setattr__(self, "text_fields", tuple(self.text_fields))

    def describe(self) -> str:
        """``text_file:PATH`` or ``dataset:NAME/CONFIG:SPLIT`` (with the text fields): the records' name of it."""
        if self.text_file:
            return f"text_file:{self.text_file}"
        return describe_dataset(self)

    def source_key(self) -> tuple:
        """Equal for two sources exactly when they read the same text (:func:`swapkl.data.text_sources.source_key`)."""
        return source_key(text_file=self.text_file, dataset=self.dataset, dataset_config=self.dataset_config,
                          split=self.split, tokens=getattr(self, "tokens", None))

    def check_source(self, what: str) -> None:
        """Exactly one of ``text_file`` and ``dataset``, and ``text_fields`` only for a dataset; ``what`` names the
        text in the message."""
        if bool(self.text_file) == bool(self.dataset):
            raise SwapKLError(f"{what}: give exactly one of text_file or dataset")
        check_text_fields(self.text_fields, bool(self.dataset))


#: the fields of a DataSpec's record (:meth:`DataSpec.as_dict`), in the order its records have always had
_RECORD_ORDER = ("dataset", "dataset_config", "split", "text_file", "n_seqs", "seq_len", "min_tokens", "seed",
                 "text_format", "padding", "text_fields", "pad_token", "selection", "packing")


@dataclass(frozen=True)
class DataSpec(TextSource):
    """A probe's windows: a :class:`TextSource` (the schema's default split is validation: test text is kept for
    perplexity) or a token file (``tokens``), and how they are cut and drawn."""

    tokens: str | None = None
    n_seqs: int = 32
    seq_len: int = 128
    min_tokens: int = 16
    seed: int = 0
    text_format: str = "paragraphs"
    padding: str = "masked"
    pad_token: str | int = "tokenizer"  # `tokenizer`, `eos` or a token id (resolve_pad_id)
    selection: str = "random"  # `random`, `first` or `paper-qwen3` (module docstring, step 4)
    packing: str = "paragraph"  # `paragraph` (one item per window) or `filled` (full windows from the text stream)

    def describe(self) -> str:
        return f"tokens:{self.tokens}" if self.tokens else super().describe()

    def as_dict(self) -> dict:
        """The fields that determine the windows: a token file ignores every selection setting (and
        ``text_fields`` appears only where it is set, so records of the ``text`` column stay as they were)."""
        if self.tokens:
            return {"tokens": self.tokens}
        fields = asdict(self)
        d = {key: fields[key] for key in _RECORD_ORDER}  # the order records have always had
        if self.packing == "paragraph":
            del d["packing"]  # records of paragraph windows stay as they were
        if self.text_fields is None:
            del d["text_fields"]
        else:
            d["text_fields"] = list(self.text_fields)
        if self.text_file:
            del d["dataset"], d["dataset_config"], d["split"]
        else:
            del d["text_file"]
        return d


def describe_dataset(spec) -> str:
    """``dataset:NAME/CONFIG:SPLIT``, with ``[field+field]`` when the text comes from ``text_fields``."""
    fields = "" if not getattr(spec, "text_fields", None) else "[" + "+".join(spec.text_fields) + "]"
    return f"dataset:{spec.dataset}/{spec.dataset_config or ''}:{spec.split}{fields}"


def check_text_fields(text_fields, has_dataset: bool) -> None:
    """``text_fields``: None, or a non-empty list of distinct field names, for a dataset source only."""
    if text_fields is None:
        return
    if not has_dataset:
        raise SwapKLError("text_fields names the fields of a dataset row; it has no effect on a text or token file")
    if (isinstance(text_fields, str) or not text_fields
            or not all(isinstance(f, str) and f for f in text_fields) or len(set(text_fields)) != len(text_fields)):
        raise SwapKLError(f"text_fields must be a non-empty list of distinct field names, got {text_fields!r}")


def check_pad_token(pad_token) -> None:
    """``tokenizer``, ``eos`` or a token id >= 0 (an int, or its decimal text from the command line)."""
    if pad_token in ("tokenizer", "eos"):
        return
    if isinstance(pad_token, bool) or not isinstance(pad_token, numbers.Integral) or pad_token < 0:
        raise SwapKLError(f"pad_token must be 'eos', 'tokenizer' or a token id >= 0, got {pad_token!r}")


def parse_pad_token(text: str) -> str | int:
    """``--pad-token`` value: ``eos``, ``tokenizer`` or a decimal token id."""
    if text in ("eos", "tokenizer"):
        return text
    if text.isdigit():
        return int(text)
    raise SwapKLError(f"`pad_token` must be eos, tokenizer or a token id >= 0, got {text!r}")
