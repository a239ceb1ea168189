"""What every job description of a stage shares: the checkpoint, how it is loaded, how the engine batches it.

A job description (``ProbeJob``, ``PruneJob``, ... in each stage's package) is a frozen dataclass whose fields
are the stage's options and whose defaults are the stage's defaults. Its module imports no torch, so that the
workflow's own process, which may run without it, builds one per job: :mod:`swapkl.config.rule_jobs` takes each
field from the model's config key of the same name (:meth:`Job.fields_from`), the command line from its option of
the same name, so a result does not depend on which of the two ran it, and a new option is the schema's key,
the field, the command-line flag and the code that reads it; the stage function takes its job alone
(``run_probe(job)``).
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

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def fields_from(cls, *sources, skip=(), **explicit) -> dict:
        """Keyword arguments of this job: ``explicit`` (each must be a field), then, for every other field not
        in ``skip``, the value of the first of ``sources`` (mappings: a model's config, a section of it, the
        command line's options) that has a key of the field's name; a field none has keeps its default."""
        names = cls.field_names()
        unknown = sorted(set(explicit) - set(names))
        if unknown:
            raise TypeError(f"{cls.__name__} has no field {', '.join(unknown)}")
        found = dict(explicit)
        for name in names:
            if name in found or name in skip:
                continue
            for source in sources:
                if name in source:
                    found[name] = source[name]
                    break
        return found

    @classmethod
    def checked(cls, job):
        """``job``, which must be a job of this class: a stage function takes its job alone."""
        if not isinstance(job, cls):
            raise TypeError(f"expected a {cls.__name__}, got {type(job).__name__}: build the job, then pass it "
                            f"(its fields are the stage's options)")
        return job

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
