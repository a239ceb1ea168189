"""The workflow's config validation called directly (swapkl.config, no Snakemake run), with the workflow's
own schema and rule files, as common.smk calls it."""

from __future__ import annotations

import copy
import json
import tempfile
from functools import lru_cache
from pathlib import Path
from types import SimpleNamespace

import yaml

from swapkl.config import ConfigError
from swapkl.config.rule_params import RuleParams
from swapkl.config.schema_validation import load_schema
from swapkl.config.study_plan import StudyPlan
from swapkl.config.validation import invalid_config_message, validate_config
from swapkl.study import STUDIES

REPO = Path(__file__).resolve().parents[1]
SCHEMA = REPO / "workflow" / "schemas" / "config.schema.yaml"
RULES = REPO / "workflow" / "rules"


@lru_cache(maxsize=None)
def composed_schema_file() -> str:
    """The schema the workflow validates against (workflow/schemas/config.schema.yaml with the sections of the
    studies kept in folders, swapkl.config.schema_validation.load_schema) as a file, written once per test process
    into a fresh temporary folder: for Snakemake's own validate, which reads a path."""
    path = Path(tempfile.mkdtemp(prefix="swapkl-schema-")) / "config.schema.yaml"
    path.write_text(yaml.safe_dump(load_schema(SCHEMA), sort_keys=False))
    return str(path)


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
    """What common.smk builds over a validated config (its PLAN and PARAMS, under its names), without
    Snakemake."""
    plan = StudyPlan(cfg, families)
    return {"config": cfg, "PLAN": plan, "PARAMS": RuleParams(plan)}


def helper_values(g: dict) -> dict:
    """Per checkpoint, what the plan and rule params ``g`` (common.smk's globals, or :func:`helper_namespace`)
    give the probe, pruning, relevance and demo training jobs as parameters, as JSON data."""
    plan, params = g["PLAN"], g["PARAMS"]
    jobs = {}
    for model, revision in plan.checkpoints():
        wc = SimpleNamespace(model=model, revision=revision)
        jobs[f"{model}/{revision}"] = {
            "checkpoint": params.checkpoint_dir(wc), "pairs": plan.probe_pairs(model),
            "data": params.probe_data(wc), "metadata": params.metadata(wc), "probe_job": params.job("probe")(wc),
        }
    for model, revision in plan.stage_checkpoints("prune"):
        wc = SimpleNamespace(model=model, revision=revision)
        jobs[f"{model}/{revision}"]["prune_metadata"] = params.prune_metadata(wc)
        jobs[f"{model}/{revision}"]["prune_text"] = STUDIES["prune"].inputs(params, wc)["text"]
        jobs[f"{model}/{revision}"]["prune_job"] = params.job("prune")(wc)
    for model, revision in plan.stage_checkpoints("relevance"):
        wc = SimpleNamespace(model=model, revision=revision)
        job = params.job("relevance")(wc)
        jobs[f"{model}/{revision}"]["relevance"] = {
            "tasks": job["task_files"], "lm_eval_tasks": job["harness_tasks"], "lm": job["lm_data"],
            "lm_sets": job["lm_sets"],
        }
    for model in plan.models_with("demo"):
        wc = SimpleNamespace(model=model)
        jobs[model] = {"train": params.demo_settings(wc), "save_steps": params.save_steps(wc)}
    jobs["pair_sets"] = plan.pair_sets()
    jobs["seed_families"] = plan.seed_families()
    jobs["sources"] = {m: g["config"]["models"][m].get("source") for m in sorted(plan.enabled_models())}
    return json.loads(json.dumps(jobs))
