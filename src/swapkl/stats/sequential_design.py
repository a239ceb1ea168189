"""What a sequential probe is for and when it looks (:class:`Design`, :class:`Decisions`), without numpy: the
workflow's own process builds them into a job (swapkl.studies.sequential.jobs); swapkl.stats.sequential
evaluates the decisions."""

from __future__ import annotations

from dataclasses import dataclass, field

from swapkl.errors import SwapKLError


@dataclass(frozen=True)
class Design:
    """When a sequential probe looks: first after ``first`` windows, then every ``batch`` windows, up to ``cap``
    (the pool's size bounds it too); ``confidence`` is the stated level of every interval decision."""

    first: int = 16
    batch: int = 16
    cap: int = 128
    confidence: float = 0.95

    def __post_init__(self):
        for name in ("first", "batch", "cap"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise SwapKLError(f"sequential {name} must be a whole number of windows, at least 1, got {value!r}")
        if self.first < 2:
            raise SwapKLError(f"sequential first must be at least 2 windows (an interval needs two), got {self.first}")
        if self.cap < self.first:
            raise SwapKLError(f"sequential cap {self.cap} is below its first look at {self.first} windows")
        if not 0.5 <= self.confidence < 1:
            raise SwapKLError(f"sequential confidence must be in [0.5, 1), got {self.confidence!r}")

    @property
    def looks(self) -> list[int]:
        """The window counts at which decisions are evaluated, the last one the cap."""
        out = list(range(self.first, self.cap, self.batch))
        return out + [self.cap]

    @property
    def alpha_per_look(self) -> float:
        return (1.0 - self.confidence) / len(self.looks)

    def bounded_by(self, pool: int) -> "Design":
        """The same design with its cap lowered to a pool of ``pool`` windows (the looks beyond it dropped)."""
        if pool < self.first:
            raise SwapKLError(f"the window pool holds {pool} windows, fewer than the first look's {self.first}")
        return self if pool >= self.cap else Design(self.first, self.batch, pool, self.confidence)


@dataclass(frozen=True)
class Decisions:
    """What a sequential run is for: ``signs`` (every pair's gap sign), ``halfwidth`` ({pair set: relative
    half-width} of its mean gap), ``sets`` (guides whose removal set at each of ``budgets`` must reach
    ``stability``), with ``spacing`` between removed blocks and ``n_boot`` resamples for the stability."""

    signs: bool = True
    halfwidth: dict = field(default_factory=dict)
    sets: tuple[str, ...] = ()
    budgets: tuple[int, ...] = (1, 2, 3)
    spacing: int = 1
    stability: float = 0.95
    n_boot: int = 200
    seed: int = 0

    def __post_init__(self):
        whole = lambda v, least: isinstance(v, int) and not isinstance(v, bool) and v >= least  # noqa: E731
        if not (whole(self.n_boot, 1) and whole(self.spacing, 0) and all(whole(b, 1) for b in self.budgets)):
            raise SwapKLError(f"sequential decisions: n_boot >= 1, spacing >= 0 and budgets >= 1 must be whole numbers, "
                              f"got {self.n_boot!r}, {self.spacing!r}, {list(self.budgets)!r}")
        if not 0 < self.stability <= 1:
            raise SwapKLError(f"sequential stability must be in (0, 1], got {self.stability!r}")
        bad = [f"{k}={v!r}" for k, v in self.halfwidth.items() if not 0 < v < 1]
        if bad:
            raise SwapKLError(f"a relative half-width must be in (0, 1), got {bad[0]}")
