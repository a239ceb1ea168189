"""The exact removal-set search, as a study in one folder: at a checkpoint, each budget's blocks removed four
ways (greedy as SLEB iterates, a beam, best-first search, and exhaustive enumeration where it is affordable),
every removal set scored by the calibration NLL of the pruned model (docs/optimal_search.md).

Here: its declaration (below), its job (``jobs.py``), its measurement (``run.py``: torch), its rules
(``rules.smk``), its config section's schema (``schema.yaml``) and its table's caption. The searches themselves are
:mod:`swapkl.pruning.optimal` and the cost model that projects them to large models
:mod:`swapkl.pruning.search_cost`; its figure is the folder's (``figures.py`` draws it, ``optimal_search.rst`` is
its caption).
"""

from __future__ import annotations

from pathlib import Path

from swapkl.figures.figure_registry import Figure, register
from swapkl.studies.optimal_search.jobs import SearchJob
from swapkl.study import Stage, Study, register_study, without_nulls


def _settings(params, wildcards) -> dict:
    """The calibration windows, without their null keys (the job's defaults then apply), and the rows' labels."""
    section = params.model_config(wildcards)["optimal_search"]
    return dict(calibration=without_nulls(section["calibration"]), metadata=params.metadata(wildcards))


def _inputs(params, wildcards) -> dict:
    section = params.model_config(wildcards)["optimal_search"]
    return {"checkpoint": params.checkpoint_input(wildcards), "text": params.text_inputs(section["calibration"])}


def _files(wildcards, output) -> dict:
    return {"out": output.search}


STUDY = register_study(Study(
    name="optimal_search", folder=Path(__file__).parent,
    stage=Stage("optimal_search", SearchJob, "swapkl.studies.optimal_search.run:run_optimal_search",
                "optimal_search", ("out",), _settings),
    summary="greedy, beam, best-first and exhaustive removal-set search compared by the calibration NLL of the "
            "pruned model",
    outputs={"search": "results/optimal_search/{model}/{revision}.parquet"},
    tables={"optimal_search": "optimal_search_table.rst"},
    rules={"search_removal_sets": "checkpoint", "combine_optimal_search": "once"},
    inputs=_inputs, files=_files, figures="once",
    defaults=tuple((key, SearchJob, key) for key in ("budgets", "beam_width", "max_evals")),
))

register(Figure("optimal_search", "swapkl.studies.optimal_search.figures:plot_optimal_search",
                {"optimal_search": "results/optimal_search.parquet"}, "global", "pruning",
                "calibration NLL and evaluations of greedy, beam, best-first and exhaustive removal-set search",
                targets="optimal_search", caption=str(STUDY.folder / "optimal_search.rst")))
