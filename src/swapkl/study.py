"""Stages and studies, each declared once: what the workflow, the planner, the report and the docs read.

A :class:`Stage` is one kind of job that runs once per checkpoint: its job description (the frozen dataclass of
its options and their defaults), what runs it (a function named as ``"module:function"``, imported only where
the job runs, so that building the job never imports torch), the model's config section that holds its options
and chooses its revisions (``enabled``, ``revisions``), which of the job's fields are files (the rule gives those
apart) and the settings that are not a config key of their field's name.

A :class:`Study` is a study kept in one folder of :mod:`swapkl.studies`: its stage, the rule file, the schema of
its config section and the captions of its results tables lie beside its declaration, and it says which rules
it adds and how many jobs each makes, so that the planner's counts follow from it. Importing
:mod:`swapkl.studies` imports every such folder, and each registers itself here.

This module imports only the registry type: the workflow reads it where Snakemake runs.
"""

from __future__ import annotations

import hashlib
import importlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from swapkl.registry import Registry


def canonical(settings):
    """A settings dict with its keys sorted (recursively). Rule parameters go through this, because
    Snakemake compares parameters as text: reordering keys in the config file must not re-run jobs."""
    if isinstance(settings, dict):
        return {key: canonical(settings[key]) for key in sorted(settings)}
    return settings


def without_nulls(spec: dict) -> dict:
    """A config spec without its null keys (the job's defaults then apply), keys sorted."""
    return canonical({key: value for key, value in spec.items() if value is not None})


def guides_config_form(names) -> str | list[str]:
    """A job's guide list as the config writes it: None (every guide) as ``all``, else a list."""
    return "all" if names is None else list(names)


def guides_job_form(value) -> list[str] | None:
    """A config's guide list (``all`` or a list) as a job takes it: None (every guide), else a list."""
    return None if value == "all" else list(value)


def settings_hash(settings: dict) -> str:
    """The provenance hash of a job's settings (their JSON with sorted keys)."""
    return hashlib.sha256(json.dumps(settings, sort_keys=True).encode()).hexdigest()


def row_labels(params, wildcards) -> dict:
    """A stage's ``settings`` when its job's only value that no config key gives is ``metadata``: the labels of its
    rows (the config's name for the model, the revision) and the settings' hash."""
    return dict(metadata=params.metadata(wildcards))


def probe_window_inputs(params, wildcards) -> dict:
    """A study's ``inputs`` when its job reads the checkpoint and the model's probe windows, as the probe's."""
    return params.probe_inputs(wildcards)


@dataclass(frozen=True)
class Stage:
    """One stage: ``job`` its description, ``runner`` the function that runs one (``"module:function"``, or the
    function itself), ``section`` the model's config section of its options and revisions (None: the model's
    own keys, every revision), ``files`` the job's fields that are files, ``settings(params, wildcards)`` the
    values of the fields that no config key of their name gives, ``on_checkpoint``: its job runs on one of the
    study's checkpoints (the checkpoint, placement and probe windows come from the model's config)."""

    kind: str
    job: type
    runner: str | Callable
    section: str | None = None
    files: tuple[str, ...] = ()
    settings: Callable | None = None
    on_checkpoint: bool = True

    def job_settings(self, params, wildcards) -> dict:
        """The settings of this stage's job on the wildcards (``params``: the run's
        :class:`~swapkl.config.rule_params.RuleParams`): the explicit ones, then the config keys named like the
        job's fields, in the model's section first, then at the model's level."""
        explicit = self.settings(params, wildcards) if self.settings else {}
        if not self.on_checkpoint:
            return self.job.fields_from(**explicit)
        model = params.model_config(wildcards)
        sources = ([model[self.section]] if self.section else []) + [model]
        explicit = {"model": params.checkpoint_dir(wildcards), "placement": params.placement(wildcards),
                    "data": params.probe_data(wildcards), **explicit}
        return self.job.fields_from(*sources, skip=self.files,
                                    **{k: v for k, v in explicit.items() if k in self.job.field_names()})

    def run(self, job) -> None:
        """Run ``job`` with the stage's runner (imported now: torch, where the job runs)."""
        runner = self.runner
        if isinstance(runner, str):
            module, name = runner.split(":")
            runner = getattr(importlib.import_module(module), name)
        runner(job)


#: every stage that runs one job per checkpoint, by the name its rule gives its job
STAGES: Registry[Stage] = Registry("stage")


def register_stage(stage: Stage) -> Stage:
    return STAGES.add(stage.kind, stage)


#: how many jobs a study's rule makes: one per checkpoint its stage runs on, or one for the whole run (when the
#: stage runs anywhere)
JOB_COUNTS = ("checkpoint", "once")

#: where a study's config section lives: in each model (``models.<model>.<name>``: the study runs on that model's
#: checkpoints) or once at the config's top level (``<name>``: a study of the whole run, over models or a
#: construction of its own, as the position-encoding ablation trains its models)
SCOPES = ("model", "run")

#: how many instances each figure of a study gets (a figure entry whose ``targets`` is the study's name): one per
#: checkpoint its stage runs on, one per model, or one in all; seed family members' checkpoints get none
FIGURE_SCOPES = ("checkpoint", "model", "once")


@dataclass(frozen=True)
class Study:
    """A study in one folder (``folder``): ``name`` is its config section (``models.<model>.<name>``) and the
    name of its stage; ``summary`` its one line in docs/studies.md. ``stage`` is None for a study that runs no
    job per checkpoint (its rules only read what other stages wrote, as the prompt-set convergence reads the
    probes): its section still chooses the checkpoints it reads.

    ``outputs``: {name: path pattern with ``{model}`` and ``{revision}``}, the files its per-checkpoint rules write;
    ``tables``: {results table name (``results/<name>.parquet``): its caption file in the folder}, the tables
    gathered over the checkpoints and shown in the report; ``rules``: {rule: "checkpoint" or "once"}
    (:data:`JOB_COUNTS`), the jobs each of its rules makes; ``inputs(params, wildcards)``: the inputs of the rule
    that runs its stage's job; ``files(wildcards, output)`` (or ``(wildcards, input, output)``): the job's file
    fields, of that rule's outputs (and inputs); ``columns``: {table: {column: what it holds}}, the column notes of
    its tables (docs/studies.md and the report's view of each table take them from here; a study without them
    documents its tables in docs/outputs.md). The folder holds ``rules.smk`` (its rules), ``schema.yaml`` (its
    config section's JSON schema) and the captions. ``answer`` (optional, ``"module:function"``): the study's
    section on a model's answer page, ``function(tables, model, revision) -> HTML`` with ``tables`` the paths of its
    results tables by name (empty: nothing to say there). ``defaults``: (key of its section, the dataclass whose
    field gives the key's default, the field[, how the default reads in the config]) for every key whose default
    is the job's (or a part of it: ``key#part``, one key of the key's object default): the loaded schema takes the
    default from there (:func:`swapkl.config.job_defaults.fill_job_defaults`; by default tuples as lists), and the folder's schema.yaml states
    none of them. ``figures``: how many instances each figure registered for the study (``targets=<name>``) gets
    (:data:`FIGURE_SCOPES`). ``members``: whether it also runs on the seed family members (by default a member's
    section is switched off: the study runs on the entry's own run). ``check(name, model, models)``: the checks of
    an enabled section that its schema cannot state (``model``: the model's config, defaults filled in, ``models``:
    every model's), raising :class:`swapkl.errors.ConfigError` naming the key (run with the config's other checks,
    before any job). ``former``: {a key the model had before this section replaced it: what to write instead}, so
    that a config of the old form is refused with the new one.

    The section's ``revisions`` is a list of the model's revisions, ``all``, or ``last`` (its final checkpoint,
    where the folder's schema allows it). A study whose checkpoints follow another stage's has no ``revisions``
    key: ``follows(plan, model)`` gives the revisions it runs on where its section is enabled (healing: those
    the model prunes and exports). ``only_with``: {rule: key of its section}, a rule that runs only where that key
    is set (on a study of the whole run, its section's; on a model's study, on the checkpoints of the models whose
    section sets it: pruning's export, where `export_guides` names guides). ``units(cfg)``: a study of the whole
    run's units (:meth:`run_units`)."""

    name: str
    folder: Path
    stage: Stage | None
    summary: str
    outputs: dict[str, str] = field(default_factory=dict)
    tables: dict[str, str] = field(default_factory=dict)
    rules: dict[str, str] = field(default_factory=dict)
    inputs: Callable | None = None
    files: Callable | None = None
    columns: dict[str, dict[str, str]] = field(default_factory=dict)
    answer: str = ""
    defaults: tuple[tuple, ...] = ()
    figures: str = "checkpoint"
    members: bool = False
    check: Callable | None = None
    former: dict[str, str] = field(default_factory=dict)
    scope: str = "model"
    units: Callable | None = None
    only_with: dict[str, str] = field(default_factory=dict)
    follows: Callable | None = None

    def __post_init__(self):
        bad = {rule: count for rule, count in self.rules.items() if count not in JOB_COUNTS}
        if bad:
            raise ValueError(f"study {self.name!r}: job counts {bad} are not one of {JOB_COUNTS}")
        if self.figures not in FIGURE_SCOPES:
            raise ValueError(f"study {self.name!r}: figures {self.figures!r} is not one of {FIGURE_SCOPES}")
        if self.scope not in SCOPES:
            raise ValueError(f"study {self.name!r}: scope {self.scope!r} is not one of {SCOPES}")
        if set(self.only_with) - set(self.rules):
            raise ValueError(f"study {self.name!r}: only_with names rules it has not: "
                             f"{sorted(set(self.only_with) - set(self.rules))}")
        if self.scope == "run":
            if self.figures != "once" or self.members or self.former:
                raise ValueError(f"study {self.name!r}: a study of the whole run draws its figures once and has "
                                 "no seed family members or former model keys")
            if self.follows is not None:
                raise ValueError(f"study {self.name!r}: a study of the whole run follows no stage's checkpoints")
            if self.stage is not None and (self.stage.on_checkpoint or self.stage.section is not None):
                raise ValueError(f"study {self.name!r}: its stage {self.stage.kind!r} must run on no model entry's "
                                 "checkpoint (on_checkpoint=False, no section)")
        else:
            if self.units is not None:
                raise ValueError(f"study {self.name!r}: units belong to a study of the whole run")
            if self.stage is not None and (self.stage.section != self.name or self.stage.kind != self.name):
                raise ValueError(f"study {self.name!r}: its stage is {self.stage.kind!r} on the section "
                                 f"{self.stage.section!r}; both must be the study's name")

    @property
    def rule_file(self) -> Path:
        return self.folder / "rules.smk"

    @property
    def schema_file(self) -> Path:
        return self.folder / "schema.yaml"

    def caption(self, table: str) -> str:
        """The caption file of results table ``table``, as a path the report reads."""
        return str(self.folder / self.tables[table])

    def rule_inputs(self, params):
        """The per-checkpoint rule's ``input`` function (``unpack`` it): :attr:`inputs` with the run's params."""
        return lambda wildcards: self.inputs(params, wildcards)

    def run_units(self, cfg: dict) -> list[dict]:
        """A study of the whole run: the wildcards of each unit its jobs run on, none when its section is off."""
        if self.scope != "run":
            raise ValueError(f"study {self.name!r} runs on its models' checkpoints, not on units of its own")
        if not cfg[self.name]["enabled"]:
            return []
        return self.units(cfg) if self.units is not None else [{}]

    def rule_units(self, rule: str, units, cfg: dict | None = None) -> list:
        """The ones of ``units`` (the checkpoints its stage runs on, or a study of the whole run's
        :meth:`run_units`) that ``rule`` runs on: all, or for a rule of :attr:`only_with` those where its key is
        set (``cfg``: the config, its models seed-expanded)."""
        key = self.only_with.get(rule)
        if key is None:
            return list(units)
        if self.scope == "run":
            return list(units) if cfg[self.name].get(key) else []
        return [(model, revision) for model, revision in units if cfg["models"][model][self.name].get(key)]

    def job_counts(self, units, cfg: dict | None = None) -> dict[str, int]:
        """How many jobs each of its rules makes on ``units`` (the checkpoints its stage runs on, or a study of
        the whole run's :meth:`run_units`; ``cfg``: the config, for :attr:`only_with`)."""
        counts = {}
        for rule, per in self.rules.items():
            on = self.rule_units(rule, units, cfg)
            counts[rule] = len(on) if per == "checkpoint" else int(bool(on))
        return counts

    def per_checkpoint(self, output: str, checkpoints) -> list[str]:
        """Output ``output`` of each of ``checkpoints`` ((model, revision) pairs): what a gathering rule reads."""
        return [self.outputs[output].format(model=model, revision=revision) for model, revision in checkpoints]

    def figure_instances(self, checkpoints, members=frozenset()) -> list[dict]:
        """The wildcards of each instance of the study's figures on ``checkpoints`` (those its stage runs on),
        ``members``' aside (seed family members get no figures of their own)."""
        if self.figures == "once":
            return [{}] if checkpoints else []
        own = [(model, revision) for model, revision in checkpoints if model not in members]
        if self.figures == "model":
            return [{"model": model} for model in dict.fromkeys(model for model, _ in own)]
        return [{"model": model, "revision": revision} for model, revision in own]

    def final_outputs(self, units) -> list[str]:
        """The files a full run makes on ``units`` (the (model, revision) checkpoints its stage runs on, or a study
        of the whole run's :meth:`run_units`): the gathered tables, then each unit's outputs; none when it runs
        nowhere."""
        if not units:
            return []
        wildcards = [u if isinstance(u, dict) else {"model": u[0], "revision": u[1]} for u in units]
        return [f"results/{table}.parquet" for table in self.tables] + [
            pattern.format(**unit) for unit in wildcards for pattern in self.outputs.values()]


#: every study kept in a folder of swapkl.studies, by name
STUDIES: Registry[Study] = Registry("study")


def register_study(study: Study) -> Study:
    """Register ``study`` and its stage (where it has one)."""
    if study.stage is not None:
        register_stage(study.stage)
    return STUDIES.add(study.name, study)


def studies_of(scope: str) -> list[Study]:
    """The registered studies of ``scope`` (:data:`SCOPES`): those in each model's config, or those of the whole run."""
    return [study for study in STUDIES.entries() if study.scope == scope]


def studies_markdown(studies=None) -> str:
    """docs/studies.md's table of the studies kept in folders (``studies``: default, every registered one): its
    config section (a model's, or the config's top level), what each runs, its rules with their jobs, its files
    per checkpoint, its results tables and its folder's files.
    tests/test_study_folders.py checks that the docs hold exactly this text."""
    studies = STUDIES.entries() if studies is None else studies
    lines = ["| study (config section) | what it does | rules (jobs) | per checkpoint | results tables | folder |",
             "|---|---|---|---|---|---|"]
    for study in studies:
        rules = ", ".join(f"`{rule}` ({'one per checkpoint' if per == 'checkpoint' else 'one'}"
                          + (f", where `{study.only_with[rule]}` is set" if rule in study.only_with else "") + ")"
                          for rule, per in study.rules.items())
        section = f"`{study.name}`" + (" (top level)" if study.scope == "run" else "")
        outputs = ", ".join(f"`{pattern}`" for pattern in study.outputs.values())
        tables = ", ".join(f"`results/{table}.parquet`" for table in study.tables)
        kept = (".py", ".smk", ".yaml", ".rst")
        files = sorted(p.name for p in study.folder.iterdir() if p.is_file() and p.suffix in kept)
        lines.append(f"| {section} | {study.summary} | {rules} | {outputs} | {tables} | "
                     f"{len(files)} files: {', '.join(f'`{f}`' for f in files)} |")
    for study in studies:
        for table, notes in study.columns.items():
            lines += ["", f"### `results/{table}.parquet` ({study.name})", "", "| column | what it holds |",
                      "|---|---|", *[f"| `{column}` | {note} |" for column, note in notes.items()]]
    return "\n".join(lines) + "\n"


def column_note(table: str, column: str) -> str | None:
    """What ``column`` of a study's results table ``table`` holds, as its declaration says (None: not declared)."""
    for study in STUDIES.values():
        if column in study.columns.get(table, {}):
            return study.columns[table][column]
    return None
