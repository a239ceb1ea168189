"""swapkl.config.rule_jobs: a rule's job is built from the config keys named like its fields, and a new option
costs four places (the schema's key, the job's field, the command line's flag, the code that reads it) and the
row of swapkl.config.job_defaults that gives the schema's key the job's default.

The toy option ``toy_scale`` is added here in exactly those four places, each as the test's own copy (a copy of
the schema with the key, a subclass of ProbeJob with the field, the probe command's parser with the flag, a
runner that reads it), and reaches the job along both roads with no other file changed: the workflow's
(config -> rule_jobs.job_settings -> the rule's params -> run_job.py's run_rule_job) and the command line's."""

from __future__ import annotations

import copy
import dataclasses
from dataclasses import dataclass
from types import SimpleNamespace

import pytest
import yaml

from direct_config import RULES, SCHEMA
from swapkl.cli import build_parser
from swapkl.commands import probe_command
from swapkl.config import ConfigError, job_defaults, rule_jobs
from swapkl.config.rule_params import RuleParams
from swapkl.config.stages import STAGES
from swapkl.config.study_plan import StudyPlan
from swapkl.config.validation import validate_config
from swapkl.probes.probe_jobs import ProbeJob

CONFIG = {"models": {"m": {"source": "org/model", "revisions": ["main"], "toy_scale": 2.5}}}
WILDCARDS = SimpleNamespace(model="m", revision="main")
FILES = {"out": {"replacement": "replacement.parquet"}, "protocols": ["replacement"]}


@dataclass(frozen=True, kw_only=True)
class ToyProbeJob(ProbeJob):
    """Place 2 of 4: the job's field (in the package, a line of ProbeJob)."""

    toy_scale: float = 1.0


def schema_with_toy(tmp_path, monkeypatch):
    """Place 1 of 4: the schema's key, on each model (in the package, a key of config.schema.yaml), without a
    default: its row in swapkl.config.job_defaults gives it the job's."""
    schema = yaml.safe_load(SCHEMA.read_text())
    schema["$defs"]["model"]["properties"]["toy_scale"] = {"type": "number"}
    path = tmp_path / "config.schema.yaml"
    path.write_text(yaml.safe_dump(schema, sort_keys=False))
    row = ("model.toy_scale", [(ToyProbeJob, "toy_scale")], job_defaults.same)
    if row not in job_defaults.JOB_DEFAULTS:
        monkeypatch.setattr(job_defaults, "JOB_DEFAULTS", [*job_defaults.JOB_DEFAULTS, row])
    return path


def rule_params(cfg, schema) -> RuleParams:
    cfg = copy.deepcopy(cfg)
    families = validate_config(cfg, schema_path=str(schema), rules_dir=str(RULES), base_dir=str(SCHEMA.parents[2]))
    return RuleParams(StudyPlan(cfg, families))


def test_the_schema_is_where_a_new_key_is_allowed(tmp_path, monkeypatch):
    with pytest.raises(ConfigError, match="toy_scale"):
        rule_params(CONFIG, SCHEMA)
    schema = schema_with_toy(tmp_path, monkeypatch)
    assert rule_params(CONFIG, schema).model_config(WILDCARDS)["toy_scale"] == 2.5
    without = {"models": {"m": {k: v for k, v in CONFIG["models"]["m"].items() if k != "toy_scale"}}}
    assert rule_params(without, schema).model_config(WILDCARDS)["toy_scale"] == 1.0  # the job's default


def test_a_new_option_reaches_the_rule_job_from_the_config_key_of_its_name(tmp_path, monkeypatch):
    seen = []
    toy = dataclasses.replace(STAGES["probe"], job=ToyProbeJob,
                              runner=lambda job: seen.append(job.toy_scale))  # place 4: the use
    monkeypatch.setitem(STAGES, "probe", toy)
    params = rule_params(CONFIG, schema_with_toy(tmp_path, monkeypatch))
    settings = params.job("probe")(WILDCARDS)  # the rule's `job` param, as probe.smk names it
    assert settings["kind"] == "probe" and settings["toy_scale"] == 2.5
    assert yaml.safe_load(yaml.safe_dump(settings)) == settings, "a plain value, for Snakemake's params trigger"
    rule_jobs.run_rule_job(settings, FILES, [])  # what run_job.py does
    assert seen == [2.5]

    unset = rule_params({"models": {"m": {**CONFIG["models"]["m"], "toy_scale": 1.0}}},
                        schema_with_toy(tmp_path, monkeypatch))
    assert rule_jobs.build_job(unset.job("probe")(WILDCARDS), FILES).toy_scale == 1.0


def test_a_new_option_reaches_the_job_from_the_command_line_flag_of_its_name(monkeypatch):
    original = probe_command.add_parser

    def add_parser(sub):  # place 3 of 4: the flag (in the package, a line of probe_command.add_parser)
        original(sub)
        sub.choices["probe"].add_argument("--toy-scale", type=float, default=ToyProbeJob.toy_scale)

    monkeypatch.setattr(probe_command, "add_parser", add_parser)
    monkeypatch.setattr(probe_command, "ProbeJob", ToyProbeJob)
    argv = ["probe", "--model", "ckpt", "--tokens", "t.npy", "--out", "o.parquet"]
    parser = build_parser(["probe"])
    job = probe_command.job(parser.parse_args([*argv, "--toy-scale", "2.5"]))
    assert isinstance(job, ToyProbeJob) and job.toy_scale == 2.5
    assert probe_command.job(parser.parse_args(argv)).toy_scale == 1.0


def test_the_workflow_and_the_command_line_build_the_same_probe_job(tmp_path):
    """The demo-like checkpoint's probe job from the config equals the job of the equivalent flags."""
    cfg = {"models": {"m": {"source": "org/model", "revisions": ["main"], "rope": "off", "dtype": "bfloat16",
                            "batch_size": 4,
                            "data": {"text_file": "c.txt", "n_seqs": 8, "seq_len": 64, "min_tokens": 4}}}}
    params = rule_params(cfg, SCHEMA)
    from_config = rule_jobs.build_job(params.job("probe")(WILDCARDS), {**FILES, "out": "o.parquet"})
    model = params.checkpoint_dir(WILDCARDS)
    args = build_parser(["probe"]).parse_args(
        ["probe", "--model", model, "--text-file", "c.txt", "--n-seqs", "8", "--seq-len", "64", "--min-tokens", "4",
         "--out", "o.parquet", "--rope", "off",
         "--dtype", "bfloat16", "--batch-size", "4", "--protocols", "replacement",
         "--pairs", from_config.pairs, "--label", "m", "--revision-label", "main"])
    from_flags = probe_command.job(args)
    differ = {f for f in ProbeJob.field_names() if getattr(from_config, f) != getattr(from_flags, f)}
    assert differ == {"metadata", "placement"}, differ  # the workflow's records and device map, none on the CLI
    assert (from_config.rope, from_config.dtype, from_config.batch_size) == ("off", "bfloat16", 4)


def test_the_workflow_and_the_command_line_build_the_same_healed_probe_job(tmp_path):
    """The healed-probe job from a model's ``healed_probes`` section (every key set off its default) equals the
    job of the equivalent flags: no key of the section or the model's level reaches a field of another meaning
    (the section's ``seed`` is the selection's seed; the heal's own seed is ``settings.seed``)."""
    from swapkl.commands import healed_probe_command

    section = {"enabled": True, "protocols": ["healed_interchange"], "selection": "random", "k": 3, "seed": 7,
               "curve_steps": [2, 4], "settings": {"preset": "demo", "steps": 6, "seed": 5, "rank": 2},
               "calibration": {"text_file": "train.txt", "max_words": 500}}
    cfg = {"models": {"m": {"source": "org/model", "revisions": ["main"], "dtype": "bfloat16", "batch_size": 4,
                            "data": {"text_file": "c.txt", "n_seqs": 8, "seq_len": 64, "min_tokens": 4},
                            "healed_probes": section}}}
    params = rule_params(cfg, SCHEMA)
    files = {"probe_files": ["interchange.parquet"], "out": "o.parquet"}
    from_config = rule_jobs.build_job(params.job("healed_probes")(WILDCARDS), files)
    args = build_parser(["healed-probe"]).parse_args(
        ["healed-probe", "--model", params.checkpoint_dir(WILDCARDS), "--probe-files", "interchange.parquet",
         "--out", "o.parquet", "--text-file", "c.txt", "--n-seqs", "8", "--seq-len", "64", "--min-tokens", "4",
         "--dtype", "bfloat16", "--batch-size", "4", "--protocols", "healed_interchange",
         "--pair-selection", "random", "--k", "3", "--select-seed", "7", "--curve-steps", "2,4",
         "--preset", "demo", "--steps", "6", "--heal-seed", "5", "--rank", "2",
         "--train-text-file", "train.txt", "--train-max-words", "500", "--label", "m", "--revision-label", "main"])
    from_flags = healed_probe_command.job(args)
    differ = {f for f in from_config.field_names() if getattr(from_config, f) != getattr(from_flags, f)}
    assert not differ, differ
    assert (from_config.select_seed, from_config.settings.seed, from_config.k) == (7, 5, 3)


def test_the_workflow_and_the_command_line_build_the_same_sequential_job(tmp_path):
    """The sequential job from a model's ``sequential`` section (every key set off its default) equals the job of
    the equivalent flags; without a ``data`` of its own the pool is the model's probe windows."""
    from swapkl.commands import sequential_command
    from swapkl.studies.sequential.jobs import SequentialJob

    pool = {"text_file": "pool.txt", "n_seqs": 64, "seq_len": 32, "packing": "filled", "seed": 3}
    section = {"enabled": True, "data": pool, "pairs": "within:2", "first": 8, "batch": 4, "cap": 32,
               "confidence": 0.9, "signs": False, "halfwidth": {"adjacent": 0.2}, "sets": ["interchange"],
               "budgets": [1, 2], "spacing": 0, "stability": 0.8, "n_boot": 30, "seed": 5}
    cfg = {"models": {"m": {"source": "org/model", "revisions": ["main"], "dtype": "bfloat16", "batch_size": 4,
                            "data": {"text_file": "c.txt", "n_seqs": 8, "seq_len": 64, "min_tokens": 4},
                            "sequential": section}}}
    params = rule_params(cfg, SCHEMA)
    files = {"out": "o.parquet", "decisions_out": "d.parquet", "progress_path": "p.jsonl"}
    from_config = rule_jobs.build_job(params.job("sequential")(WILDCARDS), files)
    args = build_parser(["probe-sequential"]).parse_args(
        ["probe-sequential", "--model", params.checkpoint_dir(WILDCARDS), "--out", "o.parquet",
         "--decisions-out", "d.parquet", "--progress-file", "p.jsonl", "--text-file", "pool.txt", "--n-seqs", "64",
         "--seq-len", "32", "--packing", "filled", "--seed", "3", "--pairs", "within:2", "--first", "8",
         "--batch", "4", "--cap", "32", "--confidence", "0.9", "--no-signs", "--halfwidth", "adjacent=0.2",
         "--sets", "interchange", "--budgets", "1,2", "--spacing", "0", "--stability", "0.8", "--bootstrap", "30",
         "--stability-seed", "5", "--dtype", "bfloat16", "--batch-size", "4", "--label", "m",
         "--revision-label", "main"])
    from_flags = sequential_command.job(args)
    differ = {f for f in SequentialJob.field_names() if getattr(from_config, f) != getattr(from_flags, f)}
    assert differ == {"metadata", "placement"}, differ  # the workflow's records and device map, none on the CLI
    assert from_config.decisions.seed == 5 and from_config.design.cap == 32 and from_config.data.packing == "filled"
    own = rule_params({"models": {"m": {**cfg["models"]["m"], "sequential": {"enabled": True}}}}, SCHEMA)
    assert rule_jobs.build_job(own.job("sequential")(WILDCARDS), files).data.text_file == "c.txt"


def test_rule_files_read_the_config_only_through_the_declarations_and_params():
    """No rule file looks a value up in the config itself (``config[...]``, ``config.get(...)``): a rule's values
    come from the stage declarations, RuleParams and the planner, where the tests reach them; the config as a whole
    may still be handed to a function of the package (the position-encoding ablation's)."""
    import re

    repo = RULES.parents[1]
    files = [repo / "Snakefile", *sorted(RULES.glob("*.smk")), *sorted((repo / "src/swapkl/studies").glob("*/rules.smk"))]
    lookup = re.compile(r"\bconfig\s*(\[|\.get\b|\.items\b|\.keys\b|\.values\b)")
    assert lookup.search('x = config["models"]') and lookup.search("config.get('probe')")  # the check can fail
    found = [f"{path.relative_to(repo)}:{n}: {line.strip()}" for path in files
             for n, line in enumerate(path.read_text().splitlines(), 1) if lookup.search(line.split("#")[0])]
    assert not found, "rule files reading the config directly:\n" + "\n".join(found)
