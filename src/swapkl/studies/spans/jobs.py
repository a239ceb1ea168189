"""Job description of the middle-span experiments: ``swapkl spans`` / rule probe_spans (see
:mod:`swapkl.model.model_job`)."""

from __future__ import annotations

from dataclasses import dataclass

from swapkl.data.data_spec import DataSpec
from swapkl.model.model_job import EngineJob

#: every span variant, in the order the tables list them (swapkl.studies.spans)
SPAN_VARIANTS = ("skip", "reverse", "shuffle", "repeat", "parallel", "looped_parallel")


@dataclass(frozen=True, kw_only=True)
class SpansJob(EngineJob):
    """What :func:`swapkl.studies.spans.run.run_spans` measures on one checkpoint (``data``: a DataSpec or its dict;
    ``placement``: as :class:`swapkl.probes.probe_jobs.ProbeJob`'s)."""

    out: str
    data: DataSpec
    variants: tuple[str, ...] = SPAN_VARIANTS
    loops: tuple[int, ...] = (2,)
    seed: int = 0
    min_start: int = 1
    min_width: int = 2

    def __post_init__(self):
        self.coerce("data", DataSpec)
        self.as_tuple("variants", "loops")
