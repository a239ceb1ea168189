"""One set of defaults per stage: its job description (``ProbeJob``, ``PruneJob``, ...).

The config schema's defaults, the command line's and the package functions' are each checked against the job
descriptions, so a result does not depend on whether the workflow, the CLI or a Python call ran it."""

from __future__ import annotations

import dataclasses
import inspect
from pathlib import Path

import pytest
import yaml

from swapkl.cli import build_parser
from swapkl.commands.arguments import SPLIT_DEFAULTS
from swapkl.commands import (aggregate_command, downstream_command, healed_probe_command, probe_command,
                             prune_command, relevance_command, spans_command)
from swapkl.data.data_spec import DataSpec
from swapkl.demo.architectures import DemoSize
from swapkl.demo.corpus import build_corpus
from swapkl.demo.tokenizer import train_demo_tokenizer
from swapkl.demo.train import train_demo_model
from swapkl.model.kl_options import KLOptions
from swapkl.model.model_job import default
from swapkl.probes.aggregate import AggregateJob, aggregate
from swapkl.recovery.healed import run_healed_probe
from swapkl.probes.probe import run_probe
from swapkl.probes.disagreement import DisagreementJob, run_test_agreement
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.recovery.healed_jobs import HealedProbeJob
from swapkl.pruning.eval_spec import EvalSpec
from swapkl.pruning.prune import run_pruning
from swapkl.pruning.prune_jobs import PruneJob
from swapkl.pruning.selection_options import SelectionOptions
from swapkl.pruning.table import AggregatePruningJob, aggregate_pruning
from swapkl.recovery.heal_settings import TrainText, settings_from
from swapkl.relevance.accrel import run_relevance
from swapkl.relevance.relevance_jobs import RelevanceJob
from swapkl.studies.sublayers.jobs import SublayerJob
from swapkl.studies.sublayers.run import run_sublayers
from swapkl.relevance.downstream import run_downstream
from swapkl.config.schema_validation import load_schema
from swapkl.recovery.recovery_jobs import RecoveryJob
from swapkl.recovery.recovery_table import run_recovery
from swapkl.studies.predictor_validity.jobs import PredictorValidityJob
from swapkl.studies.predictor_validity.run import run_predictor_validity
from swapkl.studies.jacobian.jobs import JacobianJob
from swapkl.studies.jacobian.run import run_jacobian
from swapkl.studies.optimal_search.jobs import SearchJob
from swapkl.studies.optimal_search.run import run_optimal_search
from swapkl.studies.task_pruning.jobs import TaskPruningJob
from swapkl.studies.task_pruning.run import run_task_pruning
from swapkl.studies.sequential.jobs import SequentialJob
from swapkl.studies.sequential.probe import run_sequential_probe
from swapkl.relevance.downstream_jobs import DownstreamJob
from swapkl.studies.spans.jobs import SpansJob
from swapkl.studies.spans.run import run_spans

#: the config schema as the workflow reads it (with the sections of the studies kept in folders)
SCHEMA = load_schema(Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml")

same = None  # the schema's value is the job's as it is


def split_of(spec: dict) -> str:
    return spec["split"]


def placement_of(key: str):
    return lambda value: None if value is None else {key: value}


# (schema path: $defs.<definition>.<field>[.<field>] or properties.<section>.<field>, owner of the default, its
# field or parameter, how the schema's value maps to it)
SCHEMA_DEFAULTS = [
    *[(f"windows.{f}", DataSpec, f, same) for f in ("split", "n_seqs", "seq_len", "min_tokens", "seed", "text_format",
                                                      "selection", "pad_token", "padding")],
    *[(f"perplexity_text.{f}", EvalSpec, f, same) for f in ("split", "max_words", "window", "stride", "text_prep")],
    ("model.dtype", ProbeJob, "dtype", same),
    ("model.batch_size", ProbeJob, "batch_size", same),
    ("model.pair_sets", ProbeJob, "pairs", ",".join),
    ("model.rope_scaling", ProbeJob, "rope_scaling", same),
    ("model.logits_dtype", ProbeJob, "logits_dtype", same),
    ("model.logits_dtype", PruneJob, "logits_dtype", same),
    ("model.rope", ProbeJob, "rope", same),
    ("model.device_map", ProbeJob, "placement", placement_of("device_map")),
    ("model.max_memory", ProbeJob, "placement", placement_of("max_memory")),
    *[(f"model.kl.{f}", KLOptions, f, same) for f in ("positions", "clamp", "average")],
    ("prune.max_budget", PruneJob, "budgets", lambda n: tuple(range(1, n + 1))),
    *[(f"prune.{f}", PruneJob, f, same) for f in ("spacing", "n_random", "seed", "compute_dtype", "allow_overlap",
                                                  "angular_metric")],
    *[(f"prune.{f}", SelectionOptions, f, same) for f in ("random_spacing", "random_interior", "score_pairs",
                                                          "tie_break", "clustered_region", "fixed_sets")],
    ("prune.eval", EvalSpec, "split", split_of),
    ("prune.calibration", SPLIT_DEFAULTS, "calib-", split_of),
    *[(f"spans.{f}", SpansJob, f, tuple) for f in ("variants", "loops")],
    ("spans.seed", SpansJob, "seed", same),
    ("spans.min_start", SpansJob, "min_start", same),
    ("spans.min_width", SpansJob, "min_width", same),
    ("healed_probes.protocols", HealedProbeJob, "protocols", tuple),
    ("healed_probes.curve_steps", HealedProbeJob, "curve_steps", tuple),
    ("healed_probes.selection", HealedProbeJob, "selection", same),
    ("healed_probes.k", HealedProbeJob, "k", same),
    ("healed_probes.seed", HealedProbeJob, "select_seed", same),
    ("healed_probes.calibration", TrainText, "split", split_of),
    ("heal.train", TrainText, "split", split_of),
    ("heal_settings.preset", settings_from, "preset", same),
    ("relevance.lm_eval_tasks", RelevanceJob, "harness_tasks", tuple),
    ("relevance.pruning_guides", RelevanceJob, "pruning_guides", lambda g: None if g == "all" else tuple(g)),
    ("downstream.lm_eval_tasks", DownstreamJob, "lm_eval_tasks", tuple),
    ("downstream.limit", DownstreamJob, "limit", same),
    ("downstream.pruning_guides", DownstreamJob, "pruning_guides", lambda g: None if g == "all" else tuple(g)),
    ("properties.probe.n_boot", AggregateJob, "n_boot", same),
    ("properties.probe.seed", AggregateJob, "seed", same),
    ("properties.probe.n_boot", AggregatePruningJob, "n_boot", same),
    ("properties.probe.n_boot", DisagreementJob, "n_boot", same),
    ("properties.probe.seed", DisagreementJob, "seed", same),
    # the demo's stages: their package functions' keyword defaults are their job descriptions (the workflow's
    # demo models are deeper than the command line's: num_layers is not compared)
    *[(f"properties.demo.corpus.{f}", build_corpus, f, same) for f in ("seed", "valid_fraction", "test_fraction")],
    *[(f"properties.demo.tokenizer.{f}", train_demo_tokenizer, f, same) for f in ("vocab_size", "min_frequency")],
    *[(f"demo_model.{f}", train_demo_model, f, same) for f in ("steps", "seed", "batch_size", "seq_len", "lr")],
    *[(f"demo_model.{f}", DemoSize, f, same) for f in ("hidden_size", "intermediate_size")],
]


def schema_default(path: str):
    node = SCHEMA
    keys = path.split(".")
    if keys[0] == "properties":
        keys = keys[1:]
    else:
        node = node["$defs"]
        node, keys = node[keys[0]], keys[1:]
    for key in keys:
        node = node["properties"][key]
    return node["default"]


def owner_default(owner, name):
    return owner[name] if isinstance(owner, dict) else default(owner, name)


def test_schema_defaults_are_the_job_descriptions():
    """Every schema default that a stage's job also has is the job's: the defaults swapkl.config.job_defaults writes
    into the loaded schema read back through this table's own config-to-job conversions (written here by hand, as
    the workflow builds a job from a config value), and the demo's, which the schema states itself."""
    wrong = []
    for path, owner, name, convert in SCHEMA_DEFAULTS:
        value = schema_default(path)
        expected = value if convert is None else convert(value)
        if owner_default(owner, name) != expected:
            wrong.append(f"{path} = {value!r}, but {getattr(owner, '__name__', 'table')}.{name} = "
                         f"{owner_default(owner, name)!r}")
    assert not wrong, "\n".join(wrong)


PROBE = ["--model", "m", "--out", "o.parquet", "--dataset", "wikitext"]
DATA = DataSpec(dataset="wikitext")
# (the command line of each command with only what it requires, the job builder, the job those requirements
# make with every other field at its default)
CLI_JOBS = {
    "probe": (["probe", *PROBE], probe_command.job, ProbeJob(model="m", out="o.parquet", data=DATA)),
    "spans": (["spans", *PROBE], spans_command.job, SpansJob(model="m", out="o.parquet", data=DATA)),
    "prune": (["prune", "--model", "m", "--probe", "p.parquet", "--out", "o.parquet", "--eval-dataset", "wikitext",
               "--calib-dataset", "wikitext"], prune_command.job,
              PruneJob(model="m", probe_files=("p.parquet",), repr_file=None, out="o.parquet",
                       eval_data=EvalSpec(dataset="wikitext"), calib_data=DataSpec(dataset="wikitext", split="train"))),
    "relevance": (["relevance", "--model", "m", "--out", "o.parquet", "--tasks", "t.yaml"], relevance_command.job,
                  RelevanceJob(model="m", task_files=("t.yaml",), out="o.parquet", harness_tasks=())),
    "downstream": (["downstream", "--model", "m", "--out", "o.parquet"], downstream_command.job,
                   DownstreamJob(model="m", out="o.parquet")),
    "healed-probe": (["healed-probe", "--model", "m", "--probe-files", "p.parquet", "--out", "o.parquet",
                      "--dataset", "wikitext", "--train-dataset", "wikitext"], healed_probe_command.job,
                     HealedProbeJob(model="m", probe_files=("p.parquet",), out="o.parquet", data=DATA,
                                    calibration=TrainText(dataset="wikitext"), settings=settings_from())),
    "aggregate": (["aggregate", "--probe", "p.parquet", "--pair-sets", "m=adjacent", "--out", "o.parquet"],
                  aggregate_command.job, AggregateJob(probe_files=("p.parquet",), repr_files=(), out="o.parquet",
                                                      pair_sets={"m": ["adjacent"]})),
    "test-agreement": (["test-agreement", "--probe-files", "p.parquet", "--out", "o.parquet"],
                       healed_probe_command.agreement_job, DisagreementJob(probe_files=("p.parquet",), out="o.parquet")),
    "aggregate-pruning": (["aggregate-pruning", "--inputs", "p.parquet", "--out", "o.parquet"],
                          prune_command.aggregate_job,
                          AggregatePruningJob(inputs=("p.parquet",), out="o.parquet")),
}


@pytest.mark.parametrize("command", CLI_JOBS)
def test_cli_defaults_are_the_job_descriptions(command):
    """A command given only what it requires runs the job whose every other field is the job's default."""
    argv, build, expected = CLI_JOBS[command]
    job = build(build_parser().parse_args(argv))
    differ = {f.name: (getattr(job, f.name), getattr(expected, f.name)) for f in dataclasses.fields(job)
              if getattr(job, f.name) != getattr(expected, f.name)}
    assert not differ, differ


#: the stage functions, each of which takes its job alone (``run_probe(job)``): none repeats the job's signature, so
#: an option is added to the job alone, and a call names every option it sets
TAKE_THE_JOB = [(ProbeJob, run_probe), (SpansJob, run_spans), (PruneJob, run_pruning), (RelevanceJob, run_relevance),
                (DownstreamJob, run_downstream), (HealedProbeJob, run_healed_probe), (AggregateJob, aggregate),
                (AggregatePruningJob, aggregate_pruning), (DisagreementJob, run_test_agreement),
                (SequentialJob, run_sequential_probe), (SublayerJob, run_sublayers), (JacobianJob, run_jacobian),
                (SearchJob, run_optimal_search), (TaskPruningJob, run_task_pruning), (RecoveryJob, run_recovery),
                (PredictorValidityJob, run_predictor_validity)]


@pytest.mark.parametrize("job, function", TAKE_THE_JOB, ids=[j.__name__ for j, _ in TAKE_THE_JOB])
def test_functions_take_their_job_alone(job, function):
    """``function(job)``: one parameter, the job; its fields are the stage's only options. Anything else (the
    fields by position, or a job of another stage) is refused before any work, naming the job it takes."""
    (param,) = inspect.signature(function).parameters.values()
    assert param.name == "job" and param.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    with pytest.raises(TypeError):
        function("model-value", "out-value")
    other = ProbeJob if job is not ProbeJob else SpansJob
    with pytest.raises(TypeError, match=f"expected a {job.__name__}, got {other.__name__}"):
        function(other.__new__(other))


def _leaf_jobs() -> set:
    import importlib
    import pkgutil

    import swapkl
    from swapkl.model.model_job import Job

    for info in pkgutil.walk_packages(swapkl.__path__, "swapkl."):
        if not info.name.endswith("__main__"):  # runs the command line
            importlib.import_module(info.name)
    found, stack = set(), [Job]
    while stack:
        for sub in stack.pop().__subclasses__():
            stack.append(sub)
            if sub.__module__.startswith("swapkl.") and not [s for s in sub.__subclasses__()
                                                            if s.__module__.startswith("swapkl.")]:
                found.add(sub)
    return found


def test_every_stage_job_is_taken_by_its_function():
    """Every job description of the package (a Job that no other job of the package extends: the stages' own, not the shared
    bases) is in TAKE_THE_JOB, so a new stage whose function repeats its job's signature fails here."""
    assert _leaf_jobs() == {job for job, _ in TAKE_THE_JOB}


def test_only_the_aggregation_commands_take_bootstrap_options():
    """The CIs are computed by the aggregations (AggregateJob, AggregatePruningJob), not by the probe or pruning
    runs, which take no bootstrap option."""
    for command in ("probe", "prune"):
        argv = CLI_JOBS[command][0]
        assert not hasattr(build_parser().parse_args(argv), "bootstrap")
    assert not {"n_boot", "seed"} & {f.name for f in dataclasses.fields(ProbeJob)}




def test_the_schema_file_states_no_default_that_a_job_gives():
    """A default is written once: a schema file that states one of a job's defaults itself, or jobs sharing an
    option that disagree on its default, are refused with the path named."""
    import copy

    from swapkl.config import ConfigError
    from swapkl.config.job_defaults import JOB_DEFAULTS, fill_job_defaults, schema_node
    from swapkl.config.schema_validation import _read_yaml

    raw = _read_yaml(Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml")
    for path, _, _ in JOB_DEFAULTS:
        node = schema_node(raw, path)
        key = path.partition("#")[2]
        assert (key not in node["default"]) if key else ("default" not in node), path
    import swapkl.studies  # noqa: F401  (the study folders register themselves)
    from swapkl.study import STUDIES

    for study in STUDIES.entries():
        section = _read_yaml(study.schema_file)["properties"]
        assert study.stage is not None or not study.defaults, study.name  # only a study with a job takes them
        for key, *_ in study.defaults:  # `key#part`: one key of the section key's object default
            key, _, part = key.partition("#")
            assert key in section, (study.name, key)
            assert (part not in section[key]["default"]) if part else ("default" not in section[key]), (study.name, key)
    stated = copy.deepcopy(raw)
    schema_node(stated, "model.batch_size")["default"] = 8
    with pytest.raises(ConfigError, match="model.batch_size: the schema states a default of its own; it is "
                                          "ProbeJob.batch_size's"):
        fill_job_defaults(stated)
    from swapkl.config.job_defaults import study_defaults
    from swapkl.config.schema_validation import load_schema

    split = copy.deepcopy(raw)  # a study folder's schema that states a part of a key's default: its path named
    split["$defs"]["prune"] = _read_yaml(STUDIES["prune"].schema_file)
    split["$defs"]["prune"]["properties"]["eval"]["default"]["split"] = "test"
    with pytest.raises(ConfigError, match="prune.eval#split: the schema states a default of its own"):
        fill_job_defaults(split, study_defaults(STUDIES["prune"]))
    filled = load_schema(Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml")
    assert schema_node(filled, "model.batch_size")["default"] == ProbeJob.batch_size
    assert schema_node(filled, "prune.max_budget")["default"] == len(PruneJob.budgets)


def test_jobs_that_share_an_option_must_agree_on_its_default(monkeypatch):
    from swapkl.config import ConfigError
    from swapkl.config import job_defaults
    from swapkl.config.schema_validation import _read_yaml

    raw = _read_yaml(Path(__file__).resolve().parents[1] / "workflow/schemas/config.schema.yaml")
    monkeypatch.setattr(job_defaults, "JOB_DEFAULTS", [
        ("properties.probe.n_boot", [({"a": 1000}, "a"), ({"b": 500}, "b")], job_defaults.same)])
    with pytest.raises(ConfigError, match=r"properties.probe.n_boot: the jobs that share this option disagree on its "
                                          r"default \(a = 1000, b = 500\)"):
        job_defaults.fill_job_defaults(raw)


#: defaults that docs/configuration.md gives as their effect, where the schema's is null: null -> the trainer's 0.1
DOCUMENTED_EFFECT = {"min_lr_ratio": 0.1}


def test_the_configuration_page_gives_the_schemas_defaults():
    """Every ``\\`key\\` [value]`` of docs/configuration.md whose value is a YAML value (not words such as "WikiText-2
    test") is a default the loaded schema gives a key of that name, so the page cannot drift from the jobs'
    defaults; the check reads at least 60 of them."""
    import re

    names: dict[str, list] = {}

    def walk(node, name=None):
        if isinstance(node, dict):
            if name is not None and "default" in node:
                names.setdefault(name, []).append(node["default"])
            for section in ("properties", "$defs"):
                for key, child in node.get(section, {}).items():
                    walk(child, key)

    walk(SCHEMA)
    page = (Path(__file__).resolve().parents[1] / "docs" / "configuration.md").read_text()
    checked, wrong = 0, []
    for match in re.finditer(r"`(\w+)` \[([^\];]+)[\];]", page):
        key, text = match.group(1), match.group(2).strip().strip("`")
        if key not in names or ":" in text or "\n" in text:
            continue  # a key of no default, or a default described in words
        try:
            value = yaml.safe_load(text)
        except yaml.YAMLError:
            continue
        if isinstance(value, str) and " " in value:
            continue
        checked += 1
        if value not in names[key] and DOCUMENTED_EFFECT.get(key) != value:
            wrong.append(f"`{key}` [{text}]: the schema's defaults of {key} are {names[key]}")
    assert not wrong, "\n".join(wrong)
    assert checked >= 60, checked
