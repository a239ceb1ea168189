"""Step schedules of demo training: which steps are checkpointed, and the learning rate per step."""

from __future__ import annotations

import math

from swapkl.errors import SwapKLError


def checkpoint_schedule(total_steps: int, n_even: int) -> list[int]:
    """Pythia-like checkpoint steps: ``0``, powers of two below the first even step, then ``n_even`` even steps.

    The even steps are ``total_steps * k // n_even`` for ``k = 1..n_even`` (the last is ``total_steps``).
    ``checkpoint_schedule(143000, 143)`` is exactly Pythia's 154 revisions (step0, step1 ... step512,
    step1000 ... step143000); ``checkpoint_schedule(400, 8)`` is 0, 1, 2, 4, ..., 32, 50, 100, ..., 400.
    """
    if not isinstance(total_steps, int) or total_steps < 1:
        raise SwapKLError(f"checkpoint schedule: total steps {total_steps!r} must be a positive integer")
    if not isinstance(n_even, int) or n_even < 1:
        raise SwapKLError(f"checkpoint schedule: n_even {n_even!r} must be a positive integer")
    n_even = min(n_even, total_steps)
    even = {total_steps * k // n_even for k in range(1, n_even + 1)}
    first = min(even)
    log_spaced = set()
    power = 1
    while power < first:
        log_spaced.add(power)
        power *= 2
    return sorted({0} | log_spaced | even)


def parse_steps(text: str) -> list[int]:
    """Parse an explicit comma-separated step list such as ``"0,1,2,4,50,100"`` (sorted, deduplicated)."""
    try:
        steps = sorted({int(part) for part in text.split(",") if part.strip()})
    except ValueError as exc:
        raise SwapKLError(f"`save_steps` {text!r} is not a comma-separated list of integers") from exc
    if not steps or steps[0] < 0:
        raise SwapKLError(f"`save_steps` {text!r} must list non-negative steps")
    return steps


def lr_at(step: int, *, total_steps: int, peak_lr: float, warmup_steps: int, min_lr_ratio: float) -> float:
    """Learning rate of update ``step`` (1-based): linear warmup to ``peak_lr``, then cosine to ``min_lr``."""
    min_lr = peak_lr * min_lr_ratio
    if warmup_steps > 0 and step <= warmup_steps:
        return peak_lr * step / warmup_steps
    span = max(1, total_steps - warmup_steps)
    progress = min(1.0, (step - warmup_steps) / span)
    return min_lr + 0.5 * (peak_lr - min_lr) * (1.0 + math.cos(math.pi * progress))
