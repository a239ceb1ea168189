"""Seed families: one config entry that stands for several training runs of the same recipe.

A model entry with a ``seeds`` block is a *family*, named ``seeds.family`` (default: the entry's
name). Its members are

* the entry's own run, under the entry's name, with seed label ``seeds.seed`` (for a demo model
  ``demo.seed``);
* one model per value of ``seeds.values``, named ``seeds.name`` with ``{model}`` and ``{seed}``
  filled in (default ``{model}-seed{seed}``), with the entry's settings except: its checkpoints come
  from ``seeds.source`` with ``{seed}`` filled in (hub entries) or from a demo training with that
  ``seed`` (demo entries); its revisions are ``seeds.revisions`` and its ``deletion`` is
  ``seeds.deletion`` when given; accuracy relevance, healing and the span experiments stay with the entry's
  own run.

:func:`expand_seed_families` turns a validated config's ``models`` into plain models (every member an
ordinary model of the workflow) and the family table that the across-seed statistics read. It is
pure (no Snakemake, no torch): :func:`swapkl.config.validation.validate_config` calls it once, after the schema has filled the defaults.
"""

from __future__ import annotations

import copy
import re
import string

from swapkl.errors import ConfigError
#: what differs between the members of a family (PolyPythias: `seed{N}` both, `data-seed{N}` data
#: order only, `weight-seed{N}` initialisation only)
VARIES = ("both", "data", "init")
#: the schema's pattern of model names (workflow/schemas/config.schema.yaml, models.propertyNames)
MODEL_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]*")


class SeedFamilyError(ConfigError):
    """A seeds block that cannot be expanded; the message names the config field."""


def _fields(pattern: str) -> set[str]:
    try:
        return {name for _, name, _, _ in string.Formatter().parse(pattern) if name is not None}
    except ValueError as err:
        raise SeedFamilyError(f"{pattern!r} is not a valid pattern: {err}") from None


def _check_pattern(where: str, pattern: str, allowed: set[str], required: set[str]) -> None:
    try:
        fields = _fields(pattern)
    except SeedFamilyError as err:
        raise SeedFamilyError(f"{where}: {err}") from None
    unknown = fields - allowed
    if unknown:
        raise SeedFamilyError(f"{where}: {pattern!r} uses {sorted(unknown)}; only "
                              f"{', '.join('{' + a + '}' for a in sorted(allowed))} may appear")
    missing = required - fields
    if missing:
        raise SeedFamilyError(f"{where}: {pattern!r} must contain "
                              f"{', '.join('{' + m + '}' for m in sorted(missing))}")


def _own_seed(name: str, model: dict) -> int:
    seeds = model["seeds"]
    if "demo" in model:
        own = model["demo"]["seed"]
        if seeds.get("seed") is not None and seeds["seed"] != own:
            raise SeedFamilyError(f"models.{name}.seeds.seed: {seeds['seed']} differs from the demo training's "
                                  f"seed models.{name}.demo.seed={own}; leave it out for demo models")
        return own
    if seeds.get("seed") is None:
        raise SeedFamilyError(f"models.{name}.seeds.seed: required: the seed of this entry's own run "
                              "(e.g. 1234 for the original Pythia runs)")
    return seeds["seed"]


def _member(name: str, model: dict, seed: int, entry_only) -> dict:
    seeds = model["seeds"]
    member = copy.deepcopy({key: value for key, value in model.items() if key != "seeds"})
    if "demo" in model:
        member["demo"]["seed"] = seed
    else:
        for key in ("source", "local", "gguf", "same_weights_as"):
            member.pop(key, None)
        member["source"] = seeds["source"].format(seed=seed)
    if seeds.get("revisions") is not None:
        member["revisions"] = list(seeds["revisions"])
    if seeds.get("deletion") is not None:
        member["deletion"] = seeds["deletion"]
    for key in entry_only:  # experiments on the entry's own run, not the across-seed statistics
        member[key] = {**member.get(key, {}), "enabled": False}
    return member


def expand_seed_families(models: dict, entry_only=()) -> tuple[dict, dict]:
    """(models with every family member as a plain model, families).

    ``entry_only``: the sections a member gets switched off (the studies on the entry's own run; the config passes
    those of the studies kept in folders, :attr:`swapkl.study.Study.members`).

    ``families`` maps each family name to ``{"varies": ..., "members": {model name: seed}}`` (the
    entry first, then in ``values`` order).
    Models without ``seeds`` pass through unchanged (in their order, members right after their
    entry). Raises :class:`SeedFamilyError` naming the field.
    """
    out: dict = {}
    families: dict = {}
    for name, model in models.items():
        if "seeds" not in model:
            out[name] = model
            continue
        seeds = model["seeds"]
        where = f"models.{name}.seeds"
        if "demo" in model:
            if seeds.get("source") is not None:
                raise SeedFamilyError(f"{where}.source: a demo model's members are trained with each seed; "
                                      "leave `source` out")
        elif "local" in model or "gguf" in model:
            raise SeedFamilyError(f"{where}: local checkpoint directories and GGUF files have no per-seed "
                                  "pattern; list each run as its own model")
        elif seeds.get("source") is None:
            raise SeedFamilyError(f"{where}.source: required: the hub repository of seed {{seed}}, e.g. "
                                  "EleutherAI/pythia-160m-seed{seed}")
        else:
            _check_pattern(f"{where}.source", seeds["source"], {"seed"}, {"seed"})
        _check_pattern(f"{where}.name", seeds["name"], {"model", "seed"}, {"seed"})
        own = _own_seed(name, model)
        if own in seeds["values"]:
            raise SeedFamilyError(f"{where}.values: {own} is the seed of the entry's own run ({name})")
        plain = {key: value for key, value in model.items() if key != "seeds"}
        out[name] = plain
        members = {name: own}
        for seed in seeds["values"]:
            member_name = seeds["name"].format(model=name, seed=seed)
            if not MODEL_NAME.fullmatch(member_name):
                raise SeedFamilyError(f"{where}.name: member name {member_name!r} (seed {seed}) is not a valid "
                                      "model name (letters, digits, '.', '_', '-'; no '/')")
            if member_name in models or member_name in out:
                raise SeedFamilyError(f"{where}.name: member {member_name!r} (seed {seed}) is already a model "
                                      "of this config")
            out[member_name] = _member(name, model, seed, entry_only)
            members[member_name] = seed
        family = seeds.get("family") or name
        if family in families:
            raise SeedFamilyError(f"{where}.family: {family!r} is also the family of another entry")
        families[family] = {"varies": seeds["varies"], "members": members}
    return out, families


def family_of(families: dict) -> dict:
    """{member model name: (family, seed)}."""
    return {member: (family, seed) for family, spec in families.items()
            for member, seed in spec["members"].items()}
