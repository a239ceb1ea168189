"""The settings of a pruning run's selection (:mod:`swapkl.pruning.selection` selects by them), without numpy,
pandas or torch: a job description holds them, built where the workflow's process runs."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from swapkl.errors import SwapKLError
from swapkl.probes.pair_sets import parse_pair_set


@dataclass(frozen=True)
class SelectionOptions:
    """Settings of a pruning run's selection beyond budget and spacing (defaults: the clean protocol).

    * ``score_pairs``: the partner pair set of the per-layer scores (None: every probed pair);
    * ``tie_break``: ``"deletion"`` (equal scores ordered by single-block deletion KL, then index)
      or ``"index"`` (lower index first);
    * ``clustered_region``: ``(lo, hi)``; adds the guides ``interchange_clustered`` and
      ``replacement_max_clustered`` (the same greedy over the layers lo <= i < hi), None: not run;
    * ``fixed_sets``: name -> list of layer sets, each evaluated as guide ``fixed`` at budget
      len(set), with ``fixed_set`` = name;
    * ``random_spacing``: the random baseline's spacing (None: the guides' spacing; the paper: 0);
    * ``random_interior``: random draws from the interior blocks ``1 .. L-2`` only (default, as the paper's
      random baselines did); False draws from every block;
    * ``guides``: the guides to run (names of the guide registry; None: every guide). The ``base`` row is always
      written, ``random_mean`` whenever ``random`` runs.
    """

    score_pairs: str | None = None
    tie_break: str = "deletion"
    clustered_region: tuple[int, int] | None = None
    fixed_sets: Mapping[str, Sequence[Sequence[int]]] = field(default_factory=dict)
    random_spacing: int | None = None
    random_interior: bool = True
    guides: tuple[str, ...] | None = None

    def __post_init__(self):
        if self.guides is not None:
            if isinstance(self.guides, str) or not all(isinstance(g, str) and g for g in self.guides):
                raise SwapKLError(f"guides must be a list of guide names, got {self.guides!r}")
            object.__setattr__(self, "guides", tuple(dict.fromkeys(self.guides)))
        if self.tie_break not in ("deletion", "index"):
            raise SwapKLError(f"tie_break must be 'deletion' or 'index', got {self.tie_break!r}")
        if self.score_pairs is not None:
            parse_pair_set(self.score_pairs)
        if self.clustered_region is not None:
            r = tuple(int(v) for v in self.clustered_region)
            if len(r) != 2 or r[0] < 0 or r[0] >= r[1]:
                raise SwapKLError(f"clustered_region must be [lo, hi) with 0 <= lo < hi, got {self.clustered_region!r}")
            object.__setattr__(self, "clustered_region", r)
        if self.random_spacing is not None and self.random_spacing < 0:
            raise SwapKLError(f"random_spacing must be >= 0, got {self.random_spacing}")
        object.__setattr__(self, "fixed_sets", {str(k): [list(map(int, s)) for s in v]
                                                for k, v in dict(self.fixed_sets).items()})

    def as_dict(self) -> dict:
        return dict(score_pairs=self.score_pairs, tie_break=self.tie_break,
                    clustered_region=None if self.clustered_region is None else list(self.clustered_region),
                    fixed_sets=self.fixed_sets, random_spacing=self.random_spacing,
                    random_interior=bool(self.random_interior),
                    guides=None if self.guides is None else list(self.guides))
