"""The toy study's job: a checkpoint, a scale (the section's key of that name) and the output file."""

from dataclasses import dataclass

from swapkl.model.model_job import ModelJob


@dataclass(frozen=True, kw_only=True)
class ToyJob(ModelJob):
    out: str
    scale: float = 1.0
