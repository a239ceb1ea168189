"""What a guide may look at: the probe and representation rows, the budgets and spacing, and (for
guides that measure) the engine and the calibration windows, with shared measurements cached."""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from swapkl.data.windows import Windows
from swapkl.pruning.selection_options import SelectionOptions

log = logging.getLogger(__name__)


@dataclass
class GuideContext:
    probe: pd.DataFrame
    rep: pd.DataFrame | None
    n_layers: int
    budgets: list[int]
    spacing: int
    n_random: int = 0
    seed: int = 0
    angular_metric: str = "angular"
    engine: object | None = None  # a swapkl.model.engine.ProbeEngine; None: measuring guides are skipped
    calib: Windows | None = None
    batch_size: int = 8
    device: str = "cpu"
    options: SelectionOptions = field(default_factory=SelectionOptions)  # the paper's settings
    _cache: dict = field(default_factory=dict, repr=False)

    @property
    def measures(self) -> bool:
        """True when guides that run the model (calibration windows) can run."""
        return self.engine is not None and self.calib is not None

    def cached(self, key: str, compute: Callable):
        """``compute()`` once per run; guides that share a measurement (SLEB's scores) share it."""
        if key not in self._cache:
            self._cache[key] = compute()
        return self._cache[key]

    def measured(self, key: str):
        """A shared measurement if some guide made it, else None."""
        return self._cache.get(key)

    def protocols(self) -> set[str]:
        return set(self.probe["protocol"])

    def calibration_nll(self, sets: list[tuple[int, ...]]) -> tuple[float, list[float]]:
        """Calibration NLL of the base model and of each removal set (:func:`swapkl.pruning.sleb.calibration_nll`)."""
        from swapkl.pruning.sleb import calibration_nll  # torch side: the figures read the guides without torch

        return calibration_nll(self.engine, self.calib, sets, batch_size=self.batch_size, device=self.device)

    def skip(self, guide: str, why: str) -> None:
        log.warning("guide %s skipped: %s", guide, why)
        return None
