"""The workflow's config validation called directly (swapkl.config, no Snakemake run), with the workflow's
own schema and rule files, as common.smk calls it."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from types import SimpleNamespace

import yaml

from swapkl.config import ConfigError
from swapkl.config.rule_params import RuleParams
from swapkl.config.study_plan import StudyPlan
from swapkl.config.validation import invalid_config_message, validate_config

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
RULES = REPO / "workflow" / "rules"


def validated(cfg: dict, configfiles=(), base_dir: Path = REPO) -> tuple[dict, dict]:
    """(the config as the workflow sees it: defaults filled in, seed families expanded; the families)."""
    cfg = copy.deepcopy(cfg)
    families = validate_config(cfg, schema_path=str(SCHEMA), rules_dir=str(RULES), configfiles=configfiles,
                               base_dir=str(base_dir))
    return cfg, families


def refusal(cfg: dict, configfiles=(), base_dir: Path = REPO) -> str | None:
    """The workflow's `Invalid config: ...` message for ``cfg`` (None: accepted). ``cfg`` goes through YAML
    first, as a config file would."""
    try:
        validated(yaml.load(yaml.dump(cfg, Dumper=yaml.CSafeDumper, sort_keys=False), Loader=yaml.CSafeLoader),
                  configfiles, base_dir)
    except ConfigError as err:
        return invalid_config_message(err)
    return None


def refusal_of_file(path: Path, base_dir: Path = REPO) -> str | None:
    """The workflow's message for the config file ``path`` given alone (--replace-workflow-config)."""
    return refusal(yaml.load(path.read_text(), Loader=yaml.CSafeLoader) or {}, configfiles=[path], base_dir=base_dir)


def helper_namespace(cfg: dict, families: dict) -> dict:
    """The get_* helpers that common.smk takes from swapkl.config (under common.smk's names), over a validated
    config, without Snakemake."""
    plan = StudyPlan(cfg, families)
    params = RuleParams(plan)
    return {"config": cfg, "checkpoints": plan.checkpoints, "prune_checkpoints": plan.prune_checkpoints,
            "relevance_checkpoints": plan.relevance_checkpoints, "models_with": plan.models_with,
            "enabled_models": plan.enabled_models, "get_pair_sets": plan.pair_sets,
            "get_seed_families": plan.seed_families, "get_probe_pairs": plan.probe_pairs,
            "get_checkpoint_dir": params.checkpoint_dir, "get_probe_data": params.probe_data,
            "get_metadata": params.metadata, "get_prune_metadata": params.prune_metadata,
            "get_prune_inputs": params.prune_inputs, "get_relevance_tasks": params.relevance_tasks,
            "get_relevance_lm_eval_tasks": params.relevance_lm_eval_tasks, "get_relevance_lm": params.relevance_lm,
            "get_relevance_lm_sets": params.relevance_lm_sets, "get_demo_settings": params.demo_settings,
            "get_save_steps": params.save_steps}


def helper_values(g: dict) -> dict:
    """Per checkpoint, what the helpers ``g`` (common.smk's globals, or :func:`helper_namespace`) give the
    probe, pruning, relevance and demo training jobs as parameters, as JSON data."""
    jobs = {}
    for model, revision in g["checkpoints"]():
        wc = SimpleNamespace(model=model, revision=revision)
        jobs[f"{model}/{revision}"] = {
            "checkpoint": g["get_checkpoint_dir"](wc), "pairs": g["get_probe_pairs"](model),
            "data": g["get_probe_data"](wc), "metadata": g["get_metadata"](wc),
        }
    for model, revision in g["prune_checkpoints"]():
        wc = SimpleNamespace(model=model, revision=revision)
        jobs[f"{model}/{revision}"]["prune_metadata"] = g["get_prune_metadata"](wc)
        jobs[f"{model}/{revision}"]["prune_text"] = g["get_prune_inputs"](wc)["text"]
    for model, revision in g["relevance_checkpoints"]():
        wc = SimpleNamespace(model=model, revision=revision)
        jobs[f"{model}/{revision}"]["relevance"] = {
            "tasks": g["get_relevance_tasks"](wc), "lm_eval_tasks": g["get_relevance_lm_eval_tasks"](wc),
            "lm": g["get_relevance_lm"](wc), "lm_sets": g["get_relevance_lm_sets"](wc),
        }
    for model in g["models_with"]("demo"):
        wc = SimpleNamespace(model=model)
        jobs[model] = {"train": g["get_demo_settings"](wc), "save_steps": g["get_save_steps"](wc)}
    jobs["pair_sets"] = g["get_pair_sets"]()
    jobs["seed_families"] = g["get_seed_families"]()
    jobs["sources"] = {m: g["config"]["models"][m].get("source") for m in sorted(g["enabled_models"]())}
    return json.loads(json.dumps(jobs))
