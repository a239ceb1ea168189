"""The sequential probe as a study in one folder (docs/sequential.md): windows drawn from a pool in looks, each
variant measured only while a decision it takes part in is open.

Here: its declaration (below), its job description (``jobs.py``), its runner (``probe.py``), its rules
(``rules.smk``), its config section's schema (``schema.yaml``), its table's caption and its figure (``figures.py``
draws it, ``sequential_decisions.rst`` is its caption). Its statistics are in
:mod:`swapkl.stats.sequential`, its command in :mod:`swapkl.commands.sequential_command`.
"""

from __future__ import annotations

from pathlib import Path

from swapkl.figures.figure_registry import Figure, register
from swapkl.stats.sequential_design import Decisions, Design
from swapkl.studies.sequential.jobs import SEQUENTIAL_DECISIONS, SEQUENTIAL_DESIGN, SequentialJob
from swapkl.study import Stage, Study, register_study, without_nulls


def _settings(params, wildcards) -> dict:
    """The section's design and decision keys become the job's ``design`` and ``decisions``; its ``data`` (the
    pool of windows) defaults to the model's probe windows."""
    section = params.model_config(wildcards)["sequential"]
    pool = without_nulls(section["data"]) if section.get("data") else params.probe_data(wildcards)
    return dict(data=pool, design={k: section[k] for k in SEQUENTIAL_DESIGN},
                decisions={k: section[k] for k in SEQUENTIAL_DECISIONS}, metadata=params.metadata(wildcards))


#: the resume file of a checkpoint's job: a log, not an output, so Snakemake keeps it across attempts
PROGRESS = "logs/{model}/{revision}/probe_sequential.progress.jsonl"


def _inputs(params, wildcards) -> dict:
    """The checkpoint and the text of the pool (the section's own `data`, else the probe windows')."""
    model = params.model_config(wildcards)
    return {"checkpoint": params.checkpoint_input(wildcards),
            "text": params.text_inputs(model["sequential"]["data"] or model["data"])}


def _files(wildcards, output) -> dict:
    """The job's file fields: its two tables and its resume file."""
    return {"out": output.probe, "decisions_out": output.decisions,
            "progress_path": PROGRESS.format(model=wildcards.model, revision=wildcards.revision)}


STUDY = register_study(Study(
    name="sequential", folder=Path(__file__).parent,
    stage=Stage("sequential", SequentialJob, "swapkl.studies.sequential.probe:run_sequential_probe", "sequential",
                ("out", "decisions_out", "progress_path"), _settings),
    summary="probe a pool of windows in looks until the decisions asked for hold at a stated confidence",
    outputs={"probe": "results/sequential/{model}/{revision}/probe.parquet",
             "decisions": "results/sequential/{model}/{revision}/decisions.parquet"},
    tables={"decisions": "decisions_table.rst"},
    rules={"probe_sequential": "checkpoint", "aggregate_decisions": "once"},
    inputs=_inputs, files=_files, members=True,
    defaults=(("pairs", SequentialJob, "pairs"), *((key, Design, key) for key in SEQUENTIAL_DESIGN),
              *((key, Decisions, key) for key in SEQUENTIAL_DECISIONS)),
))

register(Figure("sequential_decisions", "swapkl.studies.sequential.figures:plot_sequential_decisions",
                {"decisions": "results/decisions.parquet"}, "checkpoint", "answer",
                "each decision of the sequential probe with its interval or stability and the windows it took, one "
                "checkpoint", targets="sequential", subcategory="{model}", params={"setup": "model_setup"},
                caption=str(STUDY.folder / "sequential_decisions.rst")))
