"""Where a perplexity evaluation's text comes from and how it is windowed (:mod:`swapkl.pruning.perplexity`
evaluates it), without torch: a job description holds it, built where torch may be absent."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from swapkl.data.data_spec import TextSource
from swapkl.errors import SwapKLError

#: ``text_prep`` values: swapkl's clean rule, the published study's matched evaluator, its GPT-2-Medium evaluator
TEXT_PREPS = ("clean", "paper", "paper-gpt2")


#: the fields of an EvalSpec's record (:meth:`EvalSpec.as_dict`), in the order its records have always had
_RECORD_ORDER = ("text_file", "dataset", "dataset_config", "split", "window", "stride", "max_words", "text_fields",
                 "text_prep")


@dataclass(frozen=True)
class EvalSpec(TextSource):
    """Where the evaluation text comes from (a :class:`~swapkl.data.data_spec.TextSource`, by default a dataset's
    test split) and how it is windowed."""

    split: str = "test"
    window: int = 512
    stride: int = 256
    max_words: int | None = 5000
    text_prep: str = "clean"  # or "paper" / "paper-gpt2": the published study's evaluators (module docstring)

    @classmethod
    def from_dict(cls, d: "dict | EvalSpec") -> "EvalSpec":
        if isinstance(d, EvalSpec):
            return d
        if not isinstance(d, dict):
            raise SwapKLError(f"eval_data must be a dict or EvalSpec, got {type(d).__name__}")
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise SwapKLError(f"unknown eval_data keys {unknown}: expected some of {sorted(known)}")
        return cls(**d)

    def as_dict(self) -> dict:
        fields_ = asdict(self)
        d = {key: fields_[key] for key in _RECORD_ORDER}  # the order records have always had
        if self.text_prep == "clean":
            del d["text_prep"]  # records of the clean evaluator stay as they were
        if self.text_fields is None:
            del d["text_fields"]  # records of the `text` column stay as they were
        else:
            d["text_fields"] = list(self.text_fields)
        return d

    def check(self) -> None:
        self.check_source("evaluation text")
        if self.window < 2:
            raise SwapKLError(f"evaluation window must be at least 2 tokens, got {self.window}")
        if not 1 <= self.stride <= self.window:
            raise SwapKLError(
                f"evaluation stride must be between 1 and the window ({self.window}), got {self.stride}; "
                "a larger stride would leave tokens unscored"
            )
        if self.max_words is not None and self.max_words < 1:
            raise SwapKLError(f"max_words must be at least 1, got {self.max_words}")
        if self.text_prep not in TEXT_PREPS:
            raise SwapKLError(f"evaluation text_prep must be one of {', '.join(TEXT_PREPS)}, got {self.text_prep!r}")
