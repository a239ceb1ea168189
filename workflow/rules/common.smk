# Config validation and the get_* helpers of every rule file. This is wiring only (which files exist for
# which model and revision, and which settings each job passes to swapkl); no measurement logic lives here.

import glob
import hashlib
import json
import os
import re
import socket
import sys
import urllib.parse
from types import SimpleNamespace

import jsonschema
from snakemake.exceptions import WorkflowError
from snakemake.logging import logger
from snakemake.utils import validate

PROBE_PROTOCOLS = ("replacement", "interchange", "deletion")
# The schema's `revision` pattern without its anchors (tests/test_workflow_config.py checks they agree).
REVISION_REGEX = r"step(0|[1-9][0-9]*)|[0-9a-f]{40}|(?!step)[A-Za-z][A-Za-z0-9._-]*"
DEMO_DIR = "resources/demo"
DEMO_CORPUS_FILES = ("train.txt", "valid.txt", "test.txt", "corpus.json")


# The workflow's own package (pure modules only: Snakemake may run where torch is not installed).
sys.path.insert(0, os.path.join(workflow.basedir, "src"))


include: "scale_common.smk"


# --------------------------------------------------------------------------------------------------- validation


def _schema_error_message(err):
    """One line that names the offending config field of a jsonschema ValidationError."""
    where = ".".join(str(p) for p in err.absolute_path) or "(top level)"
    if err.validator == "oneOf" and all("required" in s for s in err.validator_value):
        keys = ", ".join(f"`{s['required'][0]}`" for s in err.validator_value)
        return f"{where}: set exactly one of {keys}"
    return f"{where}: {err.message}"


def _step(revision):
    match = re.fullmatch(r"step([0-9]+)", revision)
    return int(match.group(1)) if match else None


def _pair_reach(pair_set):
    """Largest |i-j| of a pair set (`all`: unbounded)."""
    if pair_set == "all":
        return float("inf")
    return 1 if pair_set == "adjacent" else int(pair_set.split(":")[1])


def _check_consistency(cfg):
    """Constraints between fields that JSON schema cannot express; raise naming the field."""

    def fail(where, message):
        raise WorkflowError(f"Invalid config: {where}: {message}")

    _check_model_names(cfg, fail)
    per_model_files = _per_model_files()
    for name, model in cfg["models"].items():
        _check_pruning_texts(name, model, fail)
        _check_revision_names(name, model, per_model_files, fail)
        check_scale_mechanisms(name, model, fail)
        revisions = model["revisions"]
        if model["trajectory"]:
            bad = [r for r in revisions if _step(r) is None]
            if bad:
                fail(f"models.{name}.revisions", f"trajectory models need stepN revisions, got {bad}")
        if model["rope_scaling"] != "config" and (model["covariates"] or model["relevance"]["enabled"]):
            fail(f"models.{name}.rope_scaling", "applies to the probes and pruning only; the covariates and relevance "
                 "jobs would run with the config's RoPE scaling: switch them off for this model")
        prune_revisions = model["prune"]["revisions"]
        if prune_revisions != "all":
            unknown = [r for r in prune_revisions if r not in revisions]
            if unknown:
                fail(f"models.{name}.prune.revisions", f"{unknown} not in models.{name}.revisions")
        relevance = model["relevance"]
        if relevance["enabled"]:
            if relevance["revisions"] != "all":
                unknown = [r for r in relevance["revisions"] if r not in revisions]
                if unknown:
                    fail(f"models.{name}.relevance.revisions", f"{unknown} not in models.{name}.revisions")
            if not (relevance["tasks"] or relevance["demo_tasks"] or "lm" in relevance or relevance["lm_eval_tasks"]
                    or relevance["lm_sets"]):
                fail(f"models.{name}.relevance", "enabled but names no tasks, demo_tasks, lm_eval_tasks or lm data")
            if "lm" in relevance and "lm" in relevance["lm_sets"]:
                fail(f"models.{name}.relevance.lm_sets.lm", "the name lm is the `lm` data's")
            if relevance["demo_tasks"] and "demo" not in model:
                fail(f"models.{name}.relevance.demo_tasks", "demo tasks are built for demo models only")
        spans = model["spans"]
        if spans["enabled"] and spans["revisions"] != "all":
            unknown = [r for r in spans["revisions"] if r not in revisions]
            if unknown:
                fail(f"models.{name}.spans.revisions", f"{unknown} not in models.{name}.revisions")
        if model["max_memory"] is not None and model["device_map"] is None:
            fail(f"models.{name}.max_memory", "caps devices for a device_map; set device_map: auto as well")
        prune = model["prune"]
        if not model["deletion"] and (prune["enabled"] or relevance["enabled"]):
            fail(f"models.{name}.deletion", "pruning and relevance need the deletion probe (and its BI baseline)")
        if prune["score_pairs"] is not None and _pair_reach(prune["score_pairs"]) > max(map(_pair_reach, model["pair_sets"])):
            fail(f"models.{name}.prune.score_pairs", f"{prune['score_pairs']} is wider than the probed pair_sets "
                 f"{model['pair_sets']}")
        if model["heal"]["enabled"] and not (prune["enabled"] and prune["export_guides"]):
            fail(f"models.{name}.heal", "healing starts from the exported pruned models: enable prune and name "
                 "prune.export_guides")
        _check_healed_probes(name, model, fail)
        region = prune["clustered_region"]
        if region is not None and region[0] >= region[1]:
            fail(f"models.{name}.prune.clustered_region", f"{region} is not [lo, hi) with lo < hi")
        owner = model.get("same_weights_as")
        if owner is not None:
            other = cfg["models"].get(owner)
            if other is None or "same_weights_as" in other:
                fail(f"models.{name}.same_weights_as", f"{owner!r} must be another model of this config with its "
                     "own source, local directory or demo block")
    if not any(model["enabled"] for model in cfg["models"].values()):
        fail("models", "no model is enabled")


def _check_healed_probes(name, model, fail):
    """Healed probes need their base protocols and calibration text that is not the probe windows' source."""
    healed = model["healed_probes"]
    if not healed["enabled"]:
        return
    if healed["revisions"] != "all":
        unknown = [r for r in healed["revisions"] if r not in model["revisions"]]
        if unknown:
            fail(f"models.{name}.healed_probes.revisions", f"{unknown} not in models.{name}.revisions")
    if "healed_deletion" in healed["protocols"] and not model["deletion"]:
        fail(f"models.{name}.healed_probes.protocols", "healed_deletion needs the deletion probe")
    source_key = _load_text_sources().source_key
    if "tokens" in model["data"] or source_key(**healed["calibration"]) == source_key(**model["data"]):
        fail(f"models.{name}.healed_probes.calibration", "the calibration text must be another source than the "
             f"probe windows (models.{name}.data)")


def _load_text_sources():
    """swapkl.data.text_sources: the one definition of "the same text"."""
    from swapkl.data import text_sources

    return text_sources


def _expand_seed_families(cfg):
    """Replace every seed family entry by its members (plain models); return the families."""
    from swapkl.config import seed_families

    try:
        cfg["models"], families = seed_families.expand_seed_families(cfg["models"])
    except seed_families.SeedFamilyError as err:
        raise WorkflowError(f"Invalid config: {err}") from None
    return families


def _check_no_duplicate_keys(paths):
    """YAML keeps the last of two equal keys in one mapping without a word (a model listed twice would
    silently lose its first settings): reject them, naming the file, the line and the key."""
    import yaml

    class Duplicate(Exception):
        pass

    class StrictLoader(yaml.SafeLoader):
        def construct_mapping(self, node, deep=False):
            first = {}
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=deep)
                line = key_node.start_mark.line + 1
                if key in first:
                    raise Duplicate(f"line {line}: key {key!r} appears a second time in one mapping (first on "
                                    f"line {first[key]}); YAML would silently keep only the last")
                first[key] = line
            return super().construct_mapping(node, deep=deep)

    for path in paths:
        try:
            with open(path, encoding="utf-8") as f:
                yaml.load(f, Loader=StrictLoader)
        except Duplicate as err:
            raise WorkflowError(f"Invalid config: {path}: {err}") from None
        except yaml.YAMLError:
            pass  # Snakemake has already reported files it cannot parse


# Names that the workflow itself uses next to the per-model folders and files (logs/, benchmarks/, results/...,
# resources/): a model named like one of them would share a path with it. Model names with a file
# extension of the workflow's outputs are refused for the same reason (e.g. logs/aggregate_results.log).
RESERVED_MODEL_NAMES = ("demo", "figures", "probes", "pruning", "checkpoints", "models", "corpus", "tokenizer")
OUTPUT_EXTENSIONS = (".log", ".tsv", ".parquet", ".png", ".pdf", ".jsonl", ".json", ".txt", ".yaml", ".html")


def _check_model_names(cfg, fail):
    lowered = {}
    for name in cfg["models"]:
        if name in RESERVED_MODEL_NAMES:
            fail(f"models.{name}", f"the workflow uses {name!r} for its own folders; choose another model name")
        ext = next((e for e in OUTPUT_EXTENSIONS if name.lower().endswith(e)), None)
        if ext:
            fail(f"models.{name}", f"a model name ending in {ext!r} can collide with the workflow's own files "
                                   "(e.g. logs/aggregate_results.log); choose a name without that extension")
        if name.lower() in lowered:
            fail(f"models.{name}", f"differs from models.{lowered[name.lower()]} only in case; their folders "
                                   "would be the same on a case-insensitive file system")
        lowered[name.lower()] = name


def _per_model_files():
    """{folder: names} of the files the rules write next to the per-revision folders of a model, e.g.
    logs/{model}/plot_gap_trajectory.log beside logs/{model}/{revision}/, read from the rule files."""
    found = {}
    for path in sorted(glob.glob(os.path.join(workflow.basedir, "workflow", "rules", "*.smk"))):
        with open(path, encoding="utf-8") as fh:
            for folder, file in re.findall(r'"([a-z_/]+)/\{model\}/([^{}/"]+)"', fh.read()):
                found.setdefault(folder, set()).add(file)
    for fig in registered_figures().values():  # the plot rules figures.smk makes from the figure registry
        for folder, file in re.findall(r"^([a-z_/]+)/\{model\}/([^{}/]+)$", fig.log_file()):
            found.setdefault(folder, set()).add(file)
    return found


def _check_revision_names(name, model, per_model_files, fail):
    """A revision names a folder (logs/{model}/{revision}/...) or a file stem; it must not be the name of a
    per-model file of the workflow in the same folder, or the two would share one path."""
    for i, revision in enumerate(model["revisions"]):
        for folder, files in sorted(per_model_files.items()):
            clash = sorted(f for f in files if f == revision or f.rsplit(".", 1)[0] == revision)
            if clash:
                fail(f"models.{name}.revisions.{i}",
                     f"revision {revision!r} would share a path with the workflow's own file {folder}/{name}/"
                     f"{clash[0]}; choose another revision name")


def _check_pruning_texts(name, model, fail):
    """The perplexity text of pruning must be held out from the probe windows and the calibration windows."""
    if not model["prune"]["enabled"] or model["prune"]["allow_overlap"]:
        return  # allow_overlap: the paper's protocol, an explicit opt-in recorded in the provenance
    source_key = _load_text_sources().source_key
    evaluation = model["prune"]["eval"]
    for role, field, spec in (("probe", "data", model["data"]), ("calibration", "prune.calibration",
                                                                model["prune"]["calibration"])):
        if source_key(**evaluation) == source_key(**spec):
            fail(f"models.{name}.prune.eval", f"the evaluation text is the {role} text (models.{name}.{field}); "
                                              "perplexity must be measured on held-out text: use another split or file")


_check_no_duplicate_keys([str(p) for p in workflow.configfiles])
try:
    validate(config, "../schemas/config.schema.yaml")
except WorkflowError as err:
    cause = err.__context__
    if not isinstance(cause, jsonschema.ValidationError):
        raise
    raise WorkflowError(f"Invalid config: {_schema_error_message(cause)}") from None
from swapkl.config import checks as _config_checks
from swapkl.figures.registry import figures as registered_figures
try:  # values the schema lets through but that cannot work, named by their key path (swapkl.config.checks)
    _config_checks.check_config(config)
except _config_checks.ConfigError as err:
    raise WorkflowError(f"Invalid config: {err}") from None
# {family: {"varies": both|data|init, "members": {model: seed}}}; the members are plain models from here on
SEED_FAMILIES = _expand_seed_families(config)
_check_consistency(config)


# --------------------------------------------------------------------------------------------------- models


def enabled_models():
    """Models that schedule jobs: enabled, and (for `same_weights_as`) sharing an enabled model's weights."""
    models = config["models"]
    return [name for name, model in models.items()
            if model["enabled"] and models[model.get("same_weights_as", name)]["enabled"]]


def models_with(key):
    """Enabled models configured with `key` (one of source, local, demo)."""
    return [name for name in enabled_models() if key in config["models"][name]]


def trajectory_models():
    return [name for name in enabled_models() if config["models"][name]["trajectory"]]


def get_revisions(model):
    return config["models"][model]["revisions"]


def checkpoints():
    """Every enabled (model, revision)."""
    return [(model, revision) for model in enabled_models() for revision in get_revisions(model)]


def name_regex(names):
    """A wildcard constraint matching exactly `names` (never matching when empty)."""
    return "|".join(re.escape(name) for name in names) if names else "(?!)"


def _weights_owner(wildcards):
    """{model}/{revision} of the model whose checkpoint a `same_weights_as` model shares, else as given."""
    owner = config["models"][wildcards.model].get("same_weights_as")
    return wildcards if owner is None else SimpleNamespace(model=owner, revision=wildcards.revision)


def get_checkpoint_dir(wildcards):
    """The Hugging Face checkpoint directory that swapkl loads for {model}/{revision}."""
    wildcards = _weights_owner(wildcards)
    model = config["models"][wildcards.model]
    if "source" in model:
        return f"resources/checkpoints/{wildcards.model}/{wildcards.revision}"
    if "local" in model:
        return os.path.join(model["local"], wildcards.revision)
    return f"{DEMO_DIR}/models/{wildcards.model}/{wildcards.revision}"


def get_checkpoint_input(wildcards):
    """What a job on {model}/{revision} depends on: the checkpoint directory, or for a demo model the
    directory of the whole training run (which holds every step{N} checkpoint)."""
    wildcards = _weights_owner(wildcards)
    if "demo" in config["models"][wildcards.model]:
        return f"{DEMO_DIR}/models/{wildcards.model}"
    return get_checkpoint_dir(wildcards)


def get_probe_pairs(model):
    """The widest pair set of the model, probed once: `all` covers everything, `within:K` covers
    `adjacent` and every `within:k` with k <= K."""
    sets = config["models"][model]["pair_sets"]
    if "all" in sets:
        return "all"
    widest = max(1 if s == "adjacent" else int(s.split(":")[1]) for s in sets)
    return "adjacent" if widest == 1 else f"within:{widest}"


# --------------------------------------------------------------------------------------------------- hub access

OFFLINE_DEMO = "make demo (snakemake --workflow-profile profiles/demo)"


def hub_unreachable():
    """Why the model hub cannot be reached from this machine (offline mode, or its host name does not
    resolve), or None. A host that resolves may still fail later; download_checkpoint reports that."""
    if os.environ.get("HF_HUB_OFFLINE", "").upper() in ("1", "ON", "YES", "TRUE"):
        return "HF_HUB_OFFLINE is set"
    host = urllib.parse.urlparse(os.environ.get("HF_ENDPOINT", "https://huggingface.co")).hostname
    try:
        socket.getaddrinfo(host, 443)
    except OSError as err:
        return f"{host} does not resolve: {err.strerror}"
    return None


def check_hub_access(dag):
    """onstart: when every enabled model comes from the hub and the hub is unreachable, nothing in the run
    can succeed, so stop before any job starts, one line per checkpoint to download. (With a local or demo
    model too, their jobs run on and each download fails at once, not retried, naming the demo.)"""
    scheduled = {(job.wildcards.model, job.wildcards.revision) for job in dag.needrun_jobs()
                 if job.rule.name == "download_checkpoint"}
    hub = set(models_with("source"))
    from_hub = {m for m in enabled_models() if m in hub or config["models"][m].get("same_weights_as") in hub}
    if not scheduled or from_hub != set(enabled_models()):
        return
    why = hub_unreachable()
    if why is None:
        return
    for model, revision in checkpoints():
        if (model, revision) in scheduled:
            logger.error(f"{model}/{revision}: cannot download {config['models'][model]['source']}@{revision}: "
                         f"the model hub is unreachable ({why})")
    raise WorkflowError(f"No access to the model hub; run the offline demo instead: {OFFLINE_DEMO}")


# --------------------------------------------------------------------------------------------------- data


def canonical(settings):
    """A settings dict with its keys sorted (recursively). Rule parameters go through this, because
    Snakemake compares parameters as text: reordering keys in the config file must not re-run jobs."""
    if isinstance(settings, dict):
        return {key: canonical(settings[key]) for key in sorted(settings)}
    return settings


def without_nulls(spec):
    return canonical({key: value for key, value in spec.items() if value is not None})


def text_files(*specs):
    """Local text files a job reads (so the DAG runs whatever rule produces them first)."""
    return [spec["text_file"] for spec in specs if "text_file" in spec]


def get_probe_data(wildcards):
    """keyword arguments of swapkl.data.windows.DataSpec for the probe windows."""
    return without_nulls(config["models"][wildcards.model]["data"])


def get_probe_inputs(wildcards):
    return {
        "checkpoint": get_checkpoint_input(wildcards),
        "text": text_files(config["models"][wildcards.model]["data"]),
    }


def _settings_hash(settings):
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def get_probe_settings(model):
    """Everything in the config that determines one checkpoint's probe numbers (not the revision list,
    so adding a revision leaves the existing jobs' parameters unchanged, and not the bootstrap settings
    `probe`, which only the aggregates use)."""
    cfg = config["models"][model]
    return {
        "checkpoint": {key: cfg[key] for key in ("source", "local", "demo", "same_weights_as") if key in cfg},
        "pairs": get_probe_pairs(model),
        "data": cfg["data"],
        "dtype": cfg["dtype"],
        "rope_scaling": cfg["rope_scaling"],
        "kl": cfg["kl"],
        "batch_size": cfg["batch_size"],
    }


def get_placement(wildcards):
    """keyword arguments of swapkl.model.loading.load_model that spread a model over devices ({}: one device). Not part of
    the settings hash: a placed model gives the single-device numbers."""
    cfg = config["models"][wildcards.model]
    if cfg["device_map"] is None:
        return {}
    caps = cfg["max_memory"]
    return canonical({"device_map": cfg["device_map"],
                      **({} if caps is None else {"max_memory": {str(k): v for k, v in caps.items()}})})


def job_gpus(wildcards):
    """GPUs an engine job of the model holds: the GPU indices its max_memory names (at least 1)."""
    caps = config["models"][wildcards.model]["max_memory"] or {}
    return max(1, sum(1 for key in caps if str(key).isdigit()))


def get_metadata(wildcards):
    """Provenance that swapkl stores with the results: the config's name for the model, the revision
    label and a hash of the settings that produced them."""
    return {
        "model": wildcards.model,
        "revision": wildcards.revision,
        "config_sha256": _settings_hash(get_probe_settings(wildcards.model)),
    }


def get_demo_settings(wildcards):
    """keyword arguments of the demo model's training (arch, steps, seed, batch_size, seq_len, lr)."""
    demo = canonical(config["models"][wildcards.model]["demo"])
    return {key: value for key, value in demo.items() if key != "save_steps"}


def get_save_steps(wildcards):
    """The training steps a demo model checkpoints: those of its revisions and its demo.save_steps."""
    demo = config["models"][wildcards.model]["demo"]
    return sorted({_step(revision) for revision in get_revisions(wildcards.model)} | set(demo["save_steps"]))


def get_progress_path(protocol):
    """Resume file of a probe job: not a declared log or output, so Snakemake keeps it across attempts."""
    return lambda wildcards: f"logs/{wildcards.model}/{wildcards.revision}/probe_{protocol}.progress.jsonl"


# --------------------------------------------------------------------------------------------------- results


def probe_file(model, revision, protocol):
    return f"results/probes/{model}/{revision}/{protocol}.parquet"


def repr_file(model, revision):
    return f"results/probes/{model}/{revision}/representation.parquet"


def probe_protocols(model):
    """The probe protocols of a model: replacement, interchange, deletion (unless switched off) and its
    weight-changing protocols."""
    cfg = config["models"][model]
    return [p for p in PROBE_PROTOCOLS if p != "deletion" or cfg["deletion"]] + list(cfg["weight_protocols"])


def get_all_probe_files():
    return [probe_file(m, r, p) for m, r in checkpoints() for p in probe_protocols(m)]


def get_all_repr_files():
    return [repr_file(m, r) for m, r in checkpoints() if config["models"][m]["deletion"]]


def get_pair_sets():
    return {model: config["models"][model]["pair_sets"] for model in sorted(enabled_models())}


# --------------------------------------------------------------------------------------------------- pruning


def get_prune_revisions(model):
    prune = config["models"][model]["prune"]
    if not prune["enabled"]:
        return []
    return get_revisions(model) if prune["revisions"] == "all" else prune["revisions"]


def models_with_pruning():
    return [model for model in enabled_models() if get_prune_revisions(model)]


def prune_checkpoints():
    return [(model, revision) for model in enabled_models() for revision in get_prune_revisions(model)]


def pruning_file(model, revision):
    return f"results/pruning/{model}/{revision}/pruning.parquet"


def agreement_file(model, revision):
    return f"results/pruning/{model}/{revision}/agreement.parquet"


def pruning_trajectory_models():
    """Trajectory models pruned at two or more revisions (I/R pruning ratio along training)."""
    return [
        model
        for model in trajectory_models()
        if len([r for m, r in prune_checkpoints() if m == model]) >= 2
    ]


def get_prune_inputs(wildcards):
    model, revision = wildcards.model, wildcards.revision
    prune = config["models"][model]["prune"]
    return {
        "checkpoint": get_checkpoint_input(wildcards),
        "probes": [probe_file(model, revision, protocol) for protocol in PROBE_PROTOCOLS],
        "representation": repr_file(model, revision),
        "text": text_files(prune["eval"], prune["calibration"]),
    }


def get_export_inputs(wildcards):
    return {
        "checkpoint": get_checkpoint_input(wildcards),
        "pruning": pruning_file(wildcards.model, wildcards.revision),
    }


def export_checkpoints():
    """Pruned checkpoints whose guides' choices are exported (prune.export_guides)."""
    return [(m, r) for m, r in prune_checkpoints() if config["models"][m]["prune"]["export_guides"]]


def heal_checkpoints():
    """Exported pruned checkpoints that are healed, with their unpruned control (heal.enabled)."""
    return [(m, r) for m, r in export_checkpoints() if config["models"][m]["heal"]["enabled"]]


def recovery_file(model, revision):
    return f"results/recovery/{model}/{revision}/recovery.parquet"


def healed_checkpoints():
    """Checkpoints whose variants are healed (healed_probes.enabled), with their disagreement map."""
    out = []
    for model in enabled_models():
        healed = config["models"][model]["healed_probes"]
        if healed["enabled"]:
            revisions = config["models"][model]["revisions"] if healed["revisions"] == "all" else healed["revisions"]
            out += [(model, revision) for revision in revisions]
    return out


def healed_file(model, revision):
    return f"results/healed_probes/{model}/{revision}.parquet"


def test_agreement_file(model, revision):
    return f"results/test_agreement/{model}/{revision}.parquet"


def get_prune_settings(model):
    prune = config["models"][model]["prune"]
    settings = {key: value for key, value in prune.items() if key not in ("enabled", "revisions", "export_guides")}
    settings["probe"] = get_probe_settings(model)
    return settings


def get_selection_options(wildcards):
    """Keyword arguments of swapkl.pruning.selection.SelectionOptions for a model's pruning runs."""
    prune = config["models"][wildcards.model]["prune"]
    keys = ("score_pairs", "tie_break", "clustered_region", "fixed_sets", "random_spacing", "random_interior")
    return {key: prune[key] for key in keys}


def get_prune_metadata(wildcards):
    return {
        "model": wildcards.model,
        "revision": wildcards.revision,
        "config_sha256": _settings_hash(get_prune_settings(wildcards.model)),
    }


# --------------------------------------------------------------------------------------------------- relevance

DEMO_TASKS = ("demo_next_word", "demo_continuation")


def get_relevance_revisions(model):
    relevance = config["models"][model]["relevance"]
    if not relevance["enabled"]:
        return []
    return get_revisions(model) if relevance["revisions"] == "all" else relevance["revisions"]


def relevance_checkpoints():
    return [(model, revision) for model in enabled_models() for revision in get_relevance_revisions(model)]


def relevance_file(model, revision):
    return f"results/relevance/{model}/{revision}.parquet"


def get_relevance_tasks(wildcards):
    relevance = config["models"][wildcards.model]["relevance"]
    demo = [f"{DEMO_DIR}/tasks/{task}.yaml" for task in DEMO_TASKS] if relevance["demo_tasks"] else []
    return list(relevance["tasks"]) + demo


def get_relevance_lm(wildcards):
    lm = config["models"][wildcards.model]["relevance"].get("lm")
    return None if lm is None else without_nulls(lm)


def get_relevance_lm_eval_tasks(wildcards):
    return list(config["models"][wildcards.model]["relevance"]["lm_eval_tasks"])


def get_relevance_lm_sets(wildcards):
    """{task name: DataSpec keyword arguments} of the further language-modelling data."""
    sets = config["models"][wildcards.model]["relevance"]["lm_sets"]
    return {name: without_nulls(spec) for name, spec in sorted(sets.items())}


def get_relevance_inputs(wildcards):
    """Inputs of a relevance job; a checkpoint that is also pruned scores its guides' pruned models too."""
    relevance = config["models"][wildcards.model]["relevance"]
    specs = ([relevance["lm"]] if "lm" in relevance else []) + list(relevance["lm_sets"].values())
    inputs = {
        "checkpoint": get_checkpoint_input(wildcards),
        "tasks": get_relevance_tasks(wildcards),
        "text": text_files(*specs),
    }
    if wildcards.revision in get_prune_revisions(wildcards.model) and relevance["pruning_guides"] != []:
        inputs["pruning"] = pruning_file(wildcards.model, wildcards.revision)
    return inputs


def get_relevance_pruning_guides(wildcards):
    """The guides whose pruned models a relevance job scores (None: all of the pruning table's)."""
    guides = config["models"][wildcards.model]["relevance"]["pruning_guides"]
    return None if guides == "all" else list(guides)


# --------------------------------------------------------------------------------------------------- covariates


def covariate_checkpoints():
    """Every (model, revision) of the models with `covariates: true`."""
    return [(model, revision) for model, revision in checkpoints() if config["models"][model]["covariates"]]


def covariate_file(model, revision):
    return f"results/covariates/{model}/{revision}.parquet"


# --------------------------------------------------------------------------------------------------- spans


def span_checkpoints():
    """Every (model, revision) of the models with `spans.enabled` (revisions: `spans.revisions`)."""
    out = []
    for model, revision in checkpoints():
        spans = config["models"][model]["spans"]
        if spans["enabled"] and (spans["revisions"] == "all" or revision in spans["revisions"]):
            out.append((model, revision))
    return out


def span_file(model, revision):
    return f"results/spans/{model}/{revision}.parquet"


def get_span_settings(wildcards):
    """keyword arguments of swapkl.studies.spans.run_spans from the model's `spans` block."""
    spans = config["models"][wildcards.model]["spans"]
    return {key: spans[key] for key in ("variants", "loops", "seed", "min_start", "min_width")}


def describe_spans(model):
    spans = config["models"][model]["spans"]
    return (f"{', '.join(spans['variants'])}; spans [s, L-s) with s >= {spans['min_start']} and at least "
            f"{spans['min_width']} blocks; looped parallel x{', x'.join(map(str, spans['loops']))}; shuffle seed "
            f"{spans['seed']}")


# --------------------------------------------------------------------------------------------------- seeds


def seed_members():
    """Family members other than their entry's own run: in the tables and the across-seed figures, without
    per-model figures of their own."""
    return {member for family in SEED_FAMILIES.values() for member in list(family["members"])[1:]}


def get_seed_families():
    """{family: {"varies", "members": {model: seed}}} over the enabled members, for families with two or more."""
    enabled = set(enabled_models())
    families = {}
    for name, family in SEED_FAMILIES.items():
        members = {m: seed for m, seed in family["members"].items() if m in enabled}
        if len(members) >= 2:
            families[name] = {"varies": family["varies"], "members": members}
    return canonical(families)


def seed_band_families():
    """Families whose members are all trajectory models (gap vs training step)."""
    trajectory = set(trajectory_models())
    return [name for name, f in get_seed_families().items() if set(f["members"]) <= trajectory]


def get_seeds_inputs(wildcards):
    members = {m for f in get_seed_families().values() for m in f["members"]}
    pruned = members & set(models_with_pruning())
    return {"table": "results/swapkl.parquet", **({"pruning": "results/pruning.parquet"} if pruned else {})}


def describe_family(family):
    members = get_seed_families()[family]["members"]
    entry = next(iter(members))
    return f"seeds {sorted(members.values())} ({', '.join(members)}); probes as {describe_setup(entry)}"


# --------------------------------------------------------------------------------------------------- captions


def describe_source(spec):
    """Plain words for where a text spec's text comes from, used in the report captions."""
    if "text_file" in spec:
        return spec["text_file"]
    if spec.get("dataset_config"):
        return f"{spec['dataset']}/{spec['dataset_config']} ({spec['split']} split)"
    return f"{spec['dataset']} ({spec['split']} split)"


def describe_windows(spec):
    source = describe_source(spec)
    padding = ("; right-padded, padding counted as positions, no attention mask (the paper's compatibility mode)"
               if spec.get("padding") == "counted" else "")
    return (
        f"{spec['n_seqs']} windows of up to {spec['seq_len']} tokens (paragraphs of at least "
        f"{spec['min_tokens']} tokens, drawn with seed {spec['seed']}) from {source}{padding}"
    )


def describe_setup(model):
    cfg = config["models"][model]
    owner = config["models"][cfg.get("same_weights_as", model)]
    where = owner.get("source") or owner.get("local") or f"demo {owner['demo']['arch']} model trained by the workflow"
    return (
        f"{model} ({where}); {describe_windows(cfg['data'])}; weights in {cfg['dtype']}, KL in float32; "
        f"pairs probed: {get_probe_pairs(model)}; 95% bootstrap CIs over windows with "
        f"{config['probe']['n_boot']} resamples (seed {config['probe']['seed']})"
    )


def describe_text(spec):
    source = describe_source(spec)
    return (
        f"perplexity on the first {spec['max_words']} words of {source}, sliding window of "
        f"{spec['window']} tokens with stride {spec['stride']}"
    )


def describe_pruning(model):
    prune = config["models"][model]["prune"]
    return (
        f"budgets n = 1..{prune['max_budget']}, removed blocks at least {prune['spacing']} apart "
        f"(spacing Delta), {prune['n_random']} random draws per budget (seed {prune['seed']}); "
        f"{describe_text(prune['eval'])}; calibration: {describe_windows(prune['calibration'])}"
    )


def describe_demo_training():
    corpus = config["demo"]["corpus"]
    parts = [
        f"{model}: {d['arch']}, {d['steps']} steps of {d['batch_size']} windows x {d['seq_len']} tokens, "
        f"peak learning rate {d['lr']}, seed {d['seed']}"
        for model, d in ((m, config["models"][m]["demo"]) for m in models_with("demo"))
    ]
    return (
        "; ".join(parts) + f"; byte-level BPE tokenizer of {config['demo']['tokenizer']['vocab_size']} tokens; "
        f"corpus split with seed {corpus['seed']} ({corpus['valid_fraction']:.0%} valid, "
        f"{corpus['test_fraction']:.0%} test)"
    )


# --------------------------------------------------------------------------------------------------- targets


def get_final_outputs():
    """Every file the README lists as an output, intermediate tables included, so that a deleted one is
    rebuilt (Snakemake would otherwise skip a missing intermediate whose consumers are up to date). The figures
    come from the figure registry (figure_targets, report.smk)."""
    outputs = ["results/swapkl.parquet", "results/paper_scorecard.parquet", *get_all_probe_files(),
               *get_all_repr_files()]
    if get_seed_families():
        outputs.append("results/seeds.parquet")
    outputs += [f"results/exports/{model}/{revision}" for model, revision in export_checkpoints()]
    if heal_checkpoints():
        outputs += ["results/recovery.parquet", *[recovery_file(m, r) for m, r in heal_checkpoints()]]
    if healed_checkpoints():
        outputs += ["results/healed.parquet", "results/test_agreement.parquet"]
        for model, revision in healed_checkpoints():
            outputs += [healed_file(model, revision), test_agreement_file(model, revision)]
    if relevance_checkpoints():
        outputs += ["results/relevance.parquet", "results/relevance_stats.parquet"]
    if covariate_checkpoints():
        outputs += ["results/covariates.parquet", "results/covariate_correlations.parquet",
                    *[covariate_file(m, r) for m, r in covariate_checkpoints()]]
    if span_checkpoints():
        outputs += ["results/spans.parquet", *[span_file(m, r) for m, r in span_checkpoints()]]
    if prune_checkpoints():
        outputs += ["results/pruning.parquet", "results/pruning_agreement.parquet"]
        outputs += [f(model, revision) for model, revision in prune_checkpoints() for f in (pruning_file, agreement_file)]
    outputs += scale_mechanism_outputs() + figure_targets()
    return outputs + table_views(outputs)


# --------------------------------------------------------------------------------------------------- resources


def checkpoint_size_mb(wildcards):
    """Size of the checkpoint's weight files in MB; 0 while it does not exist yet (Snakemake evaluates the
    resources again when the job is ready to run, once the checkpoint is there)."""
    path = get_checkpoint_dir(wildcards)
    if not os.path.isdir(path):
        return 0
    names = [n for n in os.listdir(path) if n.endswith((".safetensors", ".bin"))]
    return sum(os.path.getsize(os.path.join(path, n)) for n in names) // 1_000_000


def gpu_job_mem_mb(wildcards, attempt):
    """Host memory of a GPU job: a float32 copy of the weights plus headroom, more on each retry; a model placed
    with device_map streams its shards to the devices, so the weights' own size covers CPU offload."""
    copies = 1 if config["models"][wildcards.model]["device_map"] is not None else 3
    return (4000 + copies * checkpoint_size_mb(wildcards)) * attempt


def gpu_job_runtime(minutes_per_gb):
    """Runtime in minutes: a base plus a per-GB-of-weights term, doubled on each retry."""

    def runtime(wildcards, attempt):
        return int(30 + minutes_per_gb * checkpoint_size_mb(wildcards) / 1000) * 2 ** (attempt - 1)

    return runtime


wildcard_constraints:
    model=name_regex(enabled_models()),
    revision=REVISION_REGEX,
