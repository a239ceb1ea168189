"""The config schema's defaults that are a stage's own, taken from its job description when the schema is loaded.

A stage's option has one default, the field's in its job description (``ProbeJob.batch_size``, ...), which the
command line uses too. The schema (workflow/schemas/config.schema.yaml) does not repeat it: :func:`fill_job_defaults`
writes each default of :data:`JOB_DEFAULTS` into the loaded schema, converted to the config's form (a tuple as a
list, ``None`` pruning guides as ``"all"``, ...), and refuses a schema that states one itself, so the two cannot
drift apart. The job descriptions import no numpy, pandas or torch, so this runs where Snakemake runs.

A path is ``<definition>.<key>[.<key>]`` under the schema's ``$defs``, or ``properties.<section>.<key>`` for a
top-level section; ``path#key`` is one key of an object default (the split of a text source whose dataset the
schema names). Where several jobs share an option, the first owner gives the default and the others must agree.
The demo's training functions and model shape, which are not stages (and import torch), keep their defaults in the
schema (``tests/test_cli_defaults.py`` checks those).
"""

from __future__ import annotations

from swapkl.config import ConfigError
from swapkl.data.data_spec import DataSpec
from swapkl.model.kl_options import KLOptions
from swapkl.model.model_job import default
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.probes.table_jobs import AggregateJob, DisagreementJob
from swapkl.pruning.eval_spec import EvalSpec
from swapkl.pruning.prune_jobs import AggregatePruningJob, PruneJob
from swapkl.recovery.heal_settings import settings_from


def same(value):
    return value


def config_form(value):
    """A default as the config writes it: a tuple as a list."""
    return list(value) if isinstance(value, tuple) else value


def pair_sets(pairs: str) -> list[str]:
    """ProbeJob's pair set (one string, sets joined by commas) as the config's list of pair sets."""
    return pairs.split(",")


def placement(key: str):
    """ProbeJob's placement (None, or the keyword arguments of the model's loading) as one of its config keys."""
    return lambda value: None if value is None else value.get(key)


#: (schema path, owners of the default: (job description, dataclass or function; its field or parameter), how the
#: owner's default reads in the config)
JOB_DEFAULTS = [
    *[(f"windows.{f}", [(DataSpec, f)], same) for f in ("split", "n_seqs", "seq_len", "min_tokens", "seed",
                                                        "text_format", "selection", "pad_token", "padding")],
    *[(f"perplexity_text.{f}", [(EvalSpec, f)], same) for f in ("split", "max_words", "window", "stride",
                                                                "text_prep")],
    ("model.dtype", [(ProbeJob, "dtype")], same),
    ("model.batch_size", [(ProbeJob, "batch_size")], same),
    ("model.pair_sets", [(ProbeJob, "pairs")], pair_sets),
    ("model.rope_scaling", [(ProbeJob, "rope_scaling")], same),
    ("model.logits_dtype", [(ProbeJob, "logits_dtype"), (PruneJob, "logits_dtype")], same),
    ("model.rope", [(ProbeJob, "rope")], same),
    ("model.device_map", [(ProbeJob, "placement")], placement("device_map")),
    ("model.max_memory", [(ProbeJob, "placement")], placement("max_memory")),
    *[(f"model.kl.{f}", [(KLOptions, f)], same) for f in ("positions", "clamp", "average")],
    ("heal_settings.preset", [(settings_from, "preset")], same),
    ("properties.probe.n_boot", [(AggregateJob, "n_boot"), (AggregatePruningJob, "n_boot"),
                                 (DisagreementJob, "n_boot")], same),
    ("properties.probe.seed", [(AggregateJob, "seed"), (DisagreementJob, "seed")], same),
]


def owner_default(owner, name: str):
    """The default of ``name`` in ``owner``: a job description or other dataclass, a function, or a mapping."""
    return owner[name] if isinstance(owner, dict) else default(owner, name)


def _owner_name(owner, name: str) -> str:
    return f"{owner.__name__}.{name}" if hasattr(owner, "__name__") else name


def schema_node(schema: dict, path: str) -> dict:
    """The schema node of ``path`` (without its ``#key``)."""
    keys = path.split("#")[0].split(".")
    node = schema if keys[0] == "properties" else schema["$defs"]
    node, keys = (node["properties"][keys[1]], keys[2:]) if keys[0] == "properties" else (node[keys[0]], keys[1:])
    for key in keys:
        node = node["properties"][key]
    return node


def study_defaults(study) -> list:
    """The rows of a study kept in a folder (its declaration's ``defaults``), under its section's definition."""
    return [(f"{study.name}.{key}", [(owner, name)], form[0] if form else config_form)
            for key, owner, name, *form in study.defaults]


def fill_job_defaults(schema: dict, rows=None) -> None:
    """Write every default of ``rows`` (default :data:`JOB_DEFAULTS`) into ``schema`` (in place); a schema that
    states one of them itself, or owners that disagree, is an error naming the path."""
    for path, owners, to_config in JOB_DEFAULTS if rows is None else rows:
        values = [to_config(owner_default(owner, name)) for owner, name in owners]
        if any(v != values[0] for v in values[1:]):
            found = ", ".join(f"{_owner_name(o, n)} = {v!r}" for (o, n), v in zip(owners, values))
            raise ConfigError(f"config schema {path}: the jobs that share this option disagree on its default ({found})")
        node = schema_node(schema, path)
        _, _, key = path.partition("#")
        target = node.get("default") if key else node
        if key and not isinstance(target, dict):
            raise ConfigError(f"config schema {path}: the schema gives no object default to add {key!r} to")
        if (key or "default") in target:
            raise ConfigError(f"config schema {path}: the schema states a default of its own; it is "
                              f"{_owner_name(*owners[0])}'s (swapkl.config.job_defaults)")
        target[key or "default"] = values[0]
