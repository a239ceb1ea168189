"""What a heal is (:class:`HealSettings`, its named presets) and what it trains on (:class:`TrainText`), apart
from the training itself (:mod:`swapkl.recovery.heal`, torch): the jobs that carry them, the command line and
the workflow's config build them without torch."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, fields

from swapkl.data.data_spec import TextSource
from swapkl.errors import SwapKLError
from swapkl.options import require_finite, require_int
from swapkl.pruning.eval_spec import EvalSpec

METHODS = ("lora", "last_k")
LOSSES = ("nll", "kl")

@dataclass(frozen=True)
class HealSettings:
    method: str = "lora"
    rank: int = 16
    alpha: float = 32.0
    targets: tuple[str, ...] = ("q", "k", "v", "o")
    last_k: int = 0
    steps: int = 200
    lr: float = 2e-4
    weight_decay: float = 0.01
    batch_size: int = 1
    seq_len: int = 128
    seed: int = 0
    loss: str = "nll"

    def __post_init__(self):
        if isinstance(self.targets, (list, str)):
            targets = self.targets.split(",") if isinstance(self.targets, str) else self.targets
            object.__setattr__(self, "targets", tuple(t.strip() for t in targets if t.strip()))

    def check(self) -> None:
        if self.method not in METHODS:
            raise SwapKLError(f"heal method must be one of {', '.join(METHODS)}, got {self.method!r}")
        if self.loss not in LOSSES:
            raise SwapKLError(f"heal loss must be one of {', '.join(LOSSES)}, got {self.loss!r}")
        require_int("heal steps", self.steps, 0)
        require_int("heal batch_size", self.batch_size, 1)
        require_int("heal seq_len", self.seq_len, 2)
        require_int("heal seed", self.seed, 0)
        if self.method == "lora":
            require_int("LoRA rank", self.rank, 1)
            if not self.targets:
                raise SwapKLError("LoRA needs at least one target module")
        else:
            require_int("last_k", self.last_k, 1)
        require_finite("heal lr", self.lr, above=0)
        require_finite("heal alpha", self.alpha, above=0)
        require_finite("heal weight_decay", self.weight_decay, least=0)

    def as_dict(self) -> dict:
        d = dataclasses.asdict(self)
        d["targets"] = list(self.targets)
        return d


#: named presets; ``paper`` is the published recovery run, ``demo`` a few-second heal of the tiny demo models
PRESETS: dict[str, HealSettings] = {
    "paper": HealSettings(),
    "demo": HealSettings(rank=4, alpha=8.0, steps=10, lr=1e-3, seq_len=64),
}


def settings_from(preset: str = "paper", **overrides) -> HealSettings:
    """A preset with the given fields replaced (``None`` values keep the preset's)."""
    if preset not in PRESETS:
        raise SwapKLError(f"unknown heal preset {preset!r}: choose from {', '.join(sorted(PRESETS))}")
    known = {f.name for f in fields(HealSettings)}
    unknown = sorted(set(overrides) - known)
    if unknown:
        raise SwapKLError(f"unknown heal settings {unknown}: expected some of {sorted(known)}")
    s = dataclasses.replace(PRESETS[preset], **{k: v for k, v in overrides.items() if v is not None})
    s.check()
    return s


@dataclass(frozen=True)
class TrainText(TextSource):
    """Where the training (calibration) text comes from (a :class:`~swapkl.data.data_spec.TextSource`, by default a
    dataset's train split): the whole text, or its first ``max_words`` words."""

    split: str = "train"
    max_words: int | None = None

    def eval_spec(self) -> EvalSpec:
        return EvalSpec(text_file=self.text_file, dataset=self.dataset, dataset_config=self.dataset_config,
                        split=self.split, max_words=self.max_words, text_fields=self.text_fields)

    def as_dict(self) -> dict:
        return {k: v for k, v in self.eval_spec().as_dict().items() if k not in ("window", "stride")}
