"""Which KL a probe reports: the options of :mod:`swapkl.model.kl`'s one definition, without torch (a job
description holds them, built where torch may be absent)."""

from __future__ import annotations

from dataclasses import asdict, dataclass

from swapkl.errors import SwapKLError


@dataclass(frozen=True)
class KLOptions:
    """Which KL a probe reports (defaults: the clean definition).

    * ``positions``: ``all`` (every valid position, the expectation over prompts and positions) or ``last``
      (only the last valid position of each window: the last-token KL of the paper's weight-changing probes,
      whose prompts were unpadded). Only the KL is restricted; the NLL keeps every position.
    * ``clamp``: clamp each position's KL at 0 before averaging (the paper's Qwen3-8B script did; the exact
      KL is >= 0, so this only removes rounding below 0 and biases the mean up by as much).
    * ``average``: ``tokens`` (sum over prompts and positions / positions) or ``prompts`` (each prompt's mean,
      then the mean over prompts, as the paper's scripts reported).
    """

    positions: str = "all"
    clamp: bool = False
    average: str = "tokens"

    def __post_init__(self):
        if self.positions not in ("all", "last"):
            raise SwapKLError(f"KL positions must be 'all' or 'last', got {self.positions!r}")
        if self.average not in ("tokens", "prompts"):
            raise SwapKLError(f"KL average must be 'tokens' or 'prompts', got {self.average!r}")
        if not isinstance(self.clamp, bool):
            raise SwapKLError(f"KL clamp must be true or false, got {self.clamp!r}")

    def as_dict(self) -> dict:
        return asdict(self)
