# Config validation and the get_* helpers of every rule file. This is wiring only (which files exist for
# which model and revision, and which settings each job passes to swapkl); no measurement logic lives here.

import hashlib
import json
import os
import re
from types import SimpleNamespace

import jsonschema
from snakemake.exceptions import WorkflowError
from snakemake.utils import validate

PROBE_PROTOCOLS = ("replacement", "interchange", "deletion")
FIGURE_FORMATS = ("png", "pdf")
# The schema's `revision` pattern without its anchors (tests/test_workflow_config.py checks they agree).
REVISION_REGEX = r"step(0|[1-9][0-9]*)|[0-9a-f]{40}|(?!step)[A-Za-z][A-Za-z0-9._-]*"
DEMO_DIR = "resources/demo"
DEMO_CORPUS_FILES = ("train.txt", "valid.txt", "test.txt", "corpus.json")


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

    for name, model in cfg["models"].items():
        revisions = model["revisions"]
        if model["trajectory"]:
            bad = [r for r in revisions if _step(r) is None]
            if bad:
                fail(f"models.{name}.revisions", f"trajectory models need stepN revisions, got {bad}")
        prune_revisions = model["prune"]["revisions"]
        if prune_revisions != "all":
            unknown = [r for r in prune_revisions if r not in revisions]
            if unknown:
                fail(f"models.{name}.prune.revisions", f"{unknown} not in models.{name}.revisions")
        prune = model["prune"]
        if prune["score_pairs"] is not None and _pair_reach(prune["score_pairs"]) > max(map(_pair_reach, model["pair_sets"])):
            fail(f"models.{name}.prune.score_pairs", f"{prune['score_pairs']} is wider than the probed pair_sets "
                 f"{model['pair_sets']}")
        region = prune["clustered_region"]
        if region is not None and region[0] >= region[1]:
            fail(f"models.{name}.prune.clustered_region", f"{region} is not [lo, hi) with lo < hi")
        owner = model.get("same_weights_as")
        if owner is not None:
            other = cfg["models"].get(owner)
            if other is None or "same_weights_as" in other:
                fail(f"models.{name}.same_weights_as", f"{owner!r} must be another model of this config with its "
                     "own source, local directory or demo block")
        if "demo" in model:
            steps = model["demo"]["steps"]
            bad = [r for r in revisions if _step(r) is None or _step(r) > steps]
            if bad:
                fail(f"models.{name}.revisions", f"demo models save stepN with N <= demo.steps={steps}, got {bad}")
            late = [step for step in model["demo"]["save_steps"] if step > steps]
            if late:
                fail(f"models.{name}.demo.save_steps", f"{late} beyond demo.steps={steps}")
    if not any(model["enabled"] for model in cfg["models"].values()):
        fail("models", "no model is enabled")


try:
    validate(config, "../schemas/config.schema.yaml")
except WorkflowError as err:
    cause = err.__context__
    if not isinstance(cause, jsonschema.ValidationError):
        raise
    raise WorkflowError(f"Invalid config: {_schema_error_message(cause)}") from None
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
    """keyword arguments of swapkl.data.DataSpec for the probe windows."""
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
    so adding a revision leaves the existing jobs' parameters unchanged)."""
    cfg = config["models"][model]
    return {
        "checkpoint": {key: cfg[key] for key in ("source", "local", "demo", "same_weights_as") if key in cfg},
        "pairs": get_probe_pairs(model),
        "data": cfg["data"],
        "dtype": cfg["dtype"],
        "batch_size": cfg["batch_size"],
        "probe": config["probe"],
    }


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


def get_all_probe_files():
    return [probe_file(m, r, p) for m, r in checkpoints() for p in PROBE_PROTOCOLS]


def get_all_repr_files():
    return [repr_file(m, r) for m, r in checkpoints()]


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


def get_prune_settings(model):
    prune = config["models"][model]["prune"]
    settings = {key: value for key, value in prune.items() if key not in ("enabled", "revisions")}
    settings["probe"] = get_probe_settings(model)
    return settings


def get_selection_options(wildcards):
    """Keyword arguments of swapkl.selection.SelectionOptions for a model's pruning runs."""
    prune = config["models"][wildcards.model]["prune"]
    keys = ("score_pairs", "tie_break", "clustered_region", "fixed_sets", "random_spacing")
    return {key: prune[key] for key in keys}


def get_prune_metadata(wildcards):
    return {
        "model": wildcards.model,
        "revision": wildcards.revision,
        "config_sha256": _settings_hash(get_prune_settings(wildcards.model)),
    }


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


def figure_files(stem):
    return [f"results/figures/{stem}.{ext}" for ext in FIGURE_FORMATS]


def get_final_outputs():
    outputs = ["results/swapkl.parquet"]
    for model in trajectory_models():
        outputs += figure_files(f"gap_trajectory/{model}")
        outputs += figure_files(f"gap_trajectory_fwd/{model}")
    for model in enabled_models():
        outputs += figure_files(f"ratio_by_distance/{model}")
        outputs += figure_files(f"ratio_by_distance_fwd/{model}")
    for model, revision in checkpoints():
        outputs += figure_files(f"heatmaps/{model}/{revision}")
        outputs += figure_files(f"deletion_vs_bi/{model}/{revision}")
    if models_with("demo"):
        outputs += figure_files("training_curves")
    if prune_checkpoints():
        outputs += ["results/pruning.parquet", "results/pruning_agreement.parquet"]
        outputs += figure_files("pruning_ratio")
        for model, revision in prune_checkpoints():
            outputs += figure_files(f"pruning_cost/{model}/{revision}")
            outputs += figure_files(f"pruning_agreement/{model}/{revision}")
            outputs += figure_files(f"rank_confusion/{model}/{revision}")
        for model in pruning_trajectory_models():
            outputs += figure_files(f"pruning_trajectory/{model}")
    return outputs


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
    """Host memory of a GPU job: a float32 copy of the weights plus headroom, more on each retry."""
    return (4000 + 3 * checkpoint_size_mb(wildcards)) * attempt


def gpu_job_runtime(minutes_per_gb):
    """Runtime in minutes: a base plus a per-GB-of-weights term, doubled on each retry."""

    def runtime(wildcards, attempt):
        return int(30 + minutes_per_gb * checkpoint_size_mb(wildcards) / 1000) * 2 ** (attempt - 1)

    return runtime


wildcard_constraints:
    model=name_regex(enabled_models()),
    revision=REVISION_REGEX,
