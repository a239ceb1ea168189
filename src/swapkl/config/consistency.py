"""Constraints between the fields of the seed-expanded config that JSON schema cannot express: model and
revision names that would share a path with the workflow's own files, revision lists of each stage, text
that must be held out, and the settings one stage needs from another. Each raises :class:`ConfigError`
naming the key path. (:mod:`swapkl.config.checks` holds the checks of the config as the user wrote it.)"""

from __future__ import annotations

import glob
import os
import re

import swapkl.studies  # noqa: F401  (every study folder registers itself)
from swapkl.config import ConfigError
from swapkl.hub.revision_names import step_of
from swapkl.data.text_sources import source_key
from swapkl.figures.figure_registry import figures as registered_figures
from swapkl.study import studies_of

# Names that the workflow itself uses next to the per-model folders and files (logs/, benchmarks/, results/...,
# resources/): a model named like one of them would share a path with it. Model names with a file
# extension of the workflow's outputs are refused for the same reason (e.g. logs/aggregate_results.log).
RESERVED_MODEL_NAMES = ("demo", "figures", "probes", "pruning", "checkpoints", "models", "corpus", "tokenizer")
OUTPUT_EXTENSIONS = (".log", ".tsv", ".parquet", ".png", ".pdf", ".jsonl", ".json", ".txt", ".yaml", ".html")
#: demo architectures with rotary position embeddings (what `rope: off` can switch off)
ROPE_ARCHS = ("gpt_neox", "llama", "qwen3")


def _fail(where: str, message: str):
    raise ConfigError(f"{where}: {message}")


def per_model_files(rules_dir: str) -> dict[str, set[str]]:
    """{folder: names} of the files the rules write next to the per-revision folders of a model, e.g.
    logs/{model}/plot_gap_trajectory.log beside logs/{model}/{revision}/, read from the rule files."""
    found: dict[str, set[str]] = {}
    for path in sorted(glob.glob(os.path.join(rules_dir, "*.smk"))):
        with open(path, encoding="utf-8") as fh:
            for folder, file in re.findall(r'"([a-z_/]+)/\{model\}/([^{}/"]+)"', fh.read()):
                found.setdefault(folder, set()).add(file)
    for fig in registered_figures().values():  # the plot rules figures.smk makes from the figure registry
        for folder, file in re.findall(r"^([a-z_/]+)/\{model\}/([^{}/]+)$", fig.log_file()):
            found.setdefault(folder, set()).add(file)
    return found


def rope_is_on(model: dict) -> bool:
    """`rope: off` (or YAML's bare off, read as false) switches rotary embeddings off."""
    return model.get("rope", "on") not in ("off", False)


def _check_model_names(models: dict) -> None:
    lowered = {}
    for name in models:
        if name in RESERVED_MODEL_NAMES:
            _fail(f"models.{name}", f"the workflow uses {name!r} for its own folders; choose another model name")
        ext = next((e for e in OUTPUT_EXTENSIONS if name.lower().endswith(e)), None)
        if ext:
            _fail(f"models.{name}", f"a model name ending in {ext!r} can collide with the workflow's own files "
                                    "(e.g. logs/aggregate_results.log); choose a name without that extension")
        if name.lower() in lowered:
            _fail(f"models.{name}", f"differs from models.{lowered[name.lower()]} only in case; their folders "
                                    "would be the same on a case-insensitive file system")
        lowered[name.lower()] = name


def _check_revision_names(name: str, model: dict, files: dict[str, set[str]]) -> None:
    """A revision names a folder (logs/{model}/{revision}/...) or a file stem; it must not be the name of a
    per-model file of the workflow in the same folder, or the two would share one path."""
    for i, revision in enumerate(model["revisions"]):
        for folder, names in sorted(files.items()):
            clash = sorted(f for f in names if f == revision or f.rsplit(".", 1)[0] == revision)
            if clash:
                _fail(f"models.{name}.revisions.{i}",
                      f"revision {revision!r} would share a path with the workflow's own file {folder}/{name}/"
                      f"{clash[0]}; choose another revision name")


def _check_pruning_texts(name: str, model: dict) -> None:
    """The perplexity text of pruning must be held out from the probe windows and the calibration windows."""
    if not model["prune"]["enabled"] or model["prune"]["allow_overlap"]:
        return  # allow_overlap: the paper's protocol, an explicit opt-in recorded in the provenance
    evaluation = model["prune"]["eval"]
    for role, field, spec in (("probe", "data", model["data"]),
                              ("calibration", "prune.calibration", model["prune"]["calibration"])):
        if source_key(**evaluation) == source_key(**spec):
            _fail(f"models.{name}.prune.eval", f"the evaluation text is the {role} text (models.{name}.{field}); "
                                               "perplexity must be measured on held-out text: use another split or file")


def _check_sequential(name: str, model: dict) -> None:
    """A sequential probe runs transformers' forward in the load dtype with the default KL: a model whose probes
    deviate from it would get decisions about another measurement than its probes'."""
    section = model["sequential"]
    if not section["enabled"]:
        return
    deviating = [key for key, plain in (("rope_scaling", "config"), ("logits_dtype", "float32"), ("rope", "on"))
                 if model.get(key, plain) != plain]
    if deviating:
        _fail(f"models.{name}.{deviating[0]}", "applies to the probes only; the sequential probe would run "
              "the config's forward: switch sequential off for this model")
    if (model["kl"]["positions"], model["kl"]["clamp"], model["kl"]["average"]) != ("all", False, "tokens"):
        _fail(f"models.{name}.kl", "applies to the probes only; the sequential probe decides on the token-weighted "
              "KL over every position: switch sequential off for this model")
    if section["cap"] < section["first"]:
        _fail(f"models.{name}.sequential.cap", f"{section['cap']} is below the first look's {section['first']} "
              "windows")


def _check_listed(name: str, model: dict, key: str, revisions) -> None:
    """A stage's revision list (or `all`, or `last`) names only revisions of the model."""
    if revisions not in ("all", "last"):
        unknown = [r for r in revisions if r not in model["revisions"]]
        if unknown:
            _fail(f"models.{name}.{key}.revisions", f"{unknown} not in models.{name}.revisions")


def _check_scale_mechanisms(name: str, model: dict, models: dict) -> None:
    """Consistency of a model's scaling / rope / domain-slice settings."""
    if not rope_is_on(model) and "demo" in model and model["demo"]["arch"] not in ROPE_ARCHS:
        _fail(f"models.{name}.rope", "rope off needs a RoPE architecture")


def _check_pruning(name: str, model: dict) -> None:
    prune, relevance = model["prune"], model["relevance"]
    if not model["deletion"] and (prune["enabled"] or relevance["enabled"]):
        _fail(f"models.{name}.deletion", "pruning and relevance need the deletion probe (and its BI baseline)")


def _check_model(name: str, model: dict, models: dict, files: dict[str, set[str]]) -> None:
    _check_pruning_texts(name, model)
    _check_revision_names(name, model, files)
    _check_scale_mechanisms(name, model, models)
    if model["trajectory"]:
        bad = [r for r in model["revisions"] if step_of(r) is None]
        if bad:
            _fail(f"models.{name}.revisions", f"trajectory models need stepN revisions, got {bad}")
    if model["rope_scaling"] != "config" and (model["covariates"] or model["relevance"]["enabled"]):
        _fail(f"models.{name}.rope_scaling", "applies to the probes and pruning only; the covariates and relevance "
              "jobs would run with the config's RoPE scaling: switch them off for this model")
    if model["logits_dtype"] != "float32" and (model["covariates"] or model["relevance"]["enabled"]):
        _fail(f"models.{name}.logits_dtype", "applies to the probes and pruning only; the covariates and relevance "
              "jobs would form float32 logits: switch them off for this model")
    for study in studies_of("model"):  # the studies kept in folders run on revisions of the model, and check the rest
        if model[study.name]["enabled"]:
            if study.follows is None:  # (one whose checkpoints follow another stage's has no list of its own)
                _check_listed(name, model, study.name, model[study.name]["revisions"])
            if study.check is not None:
                study.check(name, model, models)
    _check_sequential(name, model)
    if model["max_memory"] is not None and model["device_map"] is None:
        _fail(f"models.{name}.max_memory", "caps devices for a device_map; set device_map: auto as well")
    _check_pruning(name, model)
    owner = model.get("same_weights_as")
    if owner is not None:
        other = models.get(owner)
        if other is None or "same_weights_as" in other:
            _fail(f"models.{name}.same_weights_as", f"{owner!r} must be another model of this config with its "
                  "own source, local directory, GGUF or demo block")


def check_consistency(cfg: dict, files: dict[str, set[str]]) -> None:
    """Every check above on the seed-expanded config (``files``: :func:`per_model_files`), in the order the
    messages have always come in: names first, then each model, then that some model is enabled."""
    models = cfg["models"]
    _check_model_names(models)
    for name, model in models.items():
        _check_model(name, model, models, files)
    if not any(model["enabled"] for model in models.values()):
        _fail("models", "no model is enabled")

