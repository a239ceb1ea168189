"""Predictor validity, as a study in one folder: does a pair's swap score predict what removing one of its blocks
costs? Per checkpoint, one job removes each block alone, measures the perplexity on the model's ``prune.eval``
text, and gives per protocol Spearman's rho between the pairs' scores (from the aggregate) and the cost of removing
the cheaper of their two blocks (docs/scale_and_mechanisms.md).

Here: its declaration (below), its job (``jobs.py``), its measurement and statistics (``run.py``: torch), its rules
(``rules.smk``), its config section's schema (``schema.yaml``) and its table's caption. Its figure is the folder's
(``figures.py`` draws it, ``predictor_validity.rst`` is its caption).
"""

from __future__ import annotations

from pathlib import Path

from swapkl.figures.figure_registry import AGGREGATE, Figure, register
from swapkl.studies.predictor_validity.jobs import PredictorValidityJob
from swapkl.study import Stage, Study, register_study


def _settings(params, wildcards) -> dict:
    return dict(metadata=params.metadata(wildcards), eval_data=params.prune_eval(wildcards))


def _inputs(params, wildcards) -> dict:
    """The checkpoint, the aggregate (its pair scores) and the evaluation text where it is a file."""
    return {"checkpoint": params.checkpoint_input(wildcards), "aggregate": AGGREGATE,
            "text": params.prune_eval_text(wildcards)}


def _files(wildcards, output) -> dict:
    return {"out": output.validity, "aggregate": AGGREGATE}


STUDY = register_study(Study(
    name="predictor_validity", folder=Path(__file__).parent,
    stage=Stage("predictor_validity", PredictorValidityJob, "swapkl.studies.predictor_validity.run:run_predictor_validity",
                "predictor_validity", ("out", "aggregate"), _settings),
    summary="every block's removal cost on the evaluation text against the pairs' swap scores (Spearman's rho "
            "per protocol)",
    outputs={"validity": "results/predictor_validity/{model}/{revision}.parquet"},
    tables={"predictor_validity": "predictor_validity_table.rst"},
    rules={"measure_predictor_validity": "checkpoint", "combine_predictor_validity": "once"},
    inputs=_inputs, files=_files, figures="checkpoint",
))

register(Figure("predictor_validity", "swapkl.studies.predictor_validity.figures:plot_predictor_validity",
                {"validity": "results/predictor_validity/{model}/{revision}.parquet"}, "checkpoint", "scale",
                "pair score against the cheaper block's removal cost", targets="predictor_validity",
                caption=str(STUDY.folder / "predictor_validity.rst")))
