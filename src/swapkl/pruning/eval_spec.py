"""Where a perplexity evaluation's text comes from and how it is windowed (:mod:`swapkl.pruning.perplexity`
evaluates it), without torch: a job description holds it, built where torch may be absent."""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields

from swapkl.data.data_spec import check_text_fields, describe_dataset
from swapkl.errors import SwapKLError

#: ``text_prep`` values: swapkl's clean rule, the published study's matched evaluator, its GPT-2-Medium evaluator
TEXT_PREPS = ("clean", "paper", "paper-gpt2")


@dataclass(frozen=True)
class EvalSpec:
    """Where the evaluation text comes from and how it is windowed."""

    text_file: str | None = None
    dataset: str | None = None
    dataset_config: str | None = None
    split: str = "test"
    window: int = 512
    stride: int = 256
    max_words: int | None = 5000
    text_fields: tuple[str, ...] | None = None  # as in swapkl.data.windows.DataSpec
    text_prep: str = "clean"  # or "paper" / "paper-gpt2": the published study's evaluators (module docstring)

    def __post_init__(self):
        if isinstance(self.text_fields, list):
            object.__setattr__(self, "text_fields", tuple(self.text_fields))

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

    def describe(self) -> str:
        if self.text_file:
            return f"text_file:{self.text_file}"
        return describe_dataset(self)

    def as_dict(self) -> dict:
        d = asdict(self)
        if self.text_prep == "clean":
            del d["text_prep"]  # records of the clean evaluator stay as they were
        if self.text_fields is None:
            del d["text_fields"]  # records of the `text` column stay as they were
        else:
            d["text_fields"] = list(self.text_fields)
        return d

    def check(self) -> None:
        if bool(self.text_file) == bool(self.dataset):
            raise SwapKLError("evaluation text: give exactly one of text_file or dataset")
        if self.window < 2:
            raise SwapKLError(f"evaluation window must be at least 2 tokens, got {self.window}")
        if not 1 <= self.stride <= self.window:
            raise SwapKLError(
                f"evaluation stride must be between 1 and the window ({self.window}), got {self.stride}; "
                "a larger stride would leave tokens unscored"
            )
        if self.max_words is not None and self.max_words < 1:
            raise SwapKLError(f"max_words must be at least 1, got {self.max_words}")
        check_text_fields(self.text_fields, bool(self.dataset))
        if self.text_prep not in TEXT_PREPS:
            raise SwapKLError(f"evaluation text_prep must be one of {', '.join(TEXT_PREPS)}, got {self.text_prep!r}")
