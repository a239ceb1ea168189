"""What every job description of a stage shares: the checkpoint, how it is loaded, how the engine batches it.

A job description (``ProbeJob``, ``PruneJob``, ... in each stage's package) is a frozen dataclass whose fields
are the keyword arguments of the stage's package function and whose defaults are the stage's defaults: the
command line builds its options' defaults from it and the workflow scripts build it from the rule's params, so
a result does not depend on which of the two ran it. ``job.run()`` calls the package function with the fields.
"""

from __future__ import annotations

import dataclasses
import inspect
from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Job:
    """Base of every job description: :meth:`arguments` are its fields as keyword arguments."""

    def arguments(self) -> dict:
        """The fields, by name (values as they are: nested options stay objects)."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}

    def coerce(self, name: str, build, *, none: bool = False) -> None:
        """Replace field ``name``, when it is a dict (as a rule's params give it), by ``build(**value)``;
        ``none``: also None, by ``build()`` (the package function's own reading of None)."""
        value = getattr(self, name)
        if isinstance(value, dict) or (none and value is None):
            object.__setattr__(self, name, build(**(value or {})))

    def as_tuple(self, *names: str) -> None:
        """Fields ``names`` as tuples (a list from YAML or the command line compares equal to the default)."""
        for name in names:
            value = getattr(self, name)
            if isinstance(value, list):
                object.__setattr__(self, name, tuple(value))


def default(owner, name: str):
    """The default of field ``name`` of the job description (or other dataclass) ``owner``, or of parameter
    ``name`` of the function ``owner``: what an option's default is built from."""
    if dataclasses.is_dataclass(owner):
        found = {f.name: f.default if f.default_factory is dataclasses.MISSING else f.default_factory()
                 for f in dataclasses.fields(owner)}
    else:
        found = {k: p.default for k, p in inspect.signature(owner).parameters.items()}
    value = found.get(name, dataclasses.MISSING)
    if value is dataclasses.MISSING or value is inspect.Parameter.empty:
        raise KeyError(f"{owner.__name__} has no default for {name!r}")
    return value


@dataclass(frozen=True, kw_only=True)
class ModelJob(Job):
    """The checkpoint and how it is loaded."""

    model: str
    revision: str | None = None
    dtype: str = "float32"
    device: str = "auto"
    allow_pickle: bool = False
    trust_remote_code: bool = False


@dataclass(frozen=True, kw_only=True)
class EngineJob(ModelJob):
    """A checkpoint run on the probe engine: batches, unembedding chunks, placement over devices, the labels
    its rows get (``metadata``: ``model``, ``revision``)."""

    batch_size: int = 8
    chunk_tokens: int = 2048
    placement: dict | None = None
    metadata: dict | None = None


@dataclass(frozen=True, kw_only=True)
class ForwardJob(EngineJob):
    """An engine job whose forward may deviate from transformers' own (:func:`swapkl.model.loading.load_model`):
    weights cast to ``compute_dtype``, RoPE scaling from the config or none, logits rounded to ``logits_dtype``."""

    compute_dtype: str | None = None
    rope_scaling: str = "config"
    logits_dtype: str = "float32"
