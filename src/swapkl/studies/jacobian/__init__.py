"""Spectral norms of the blocks' residual Jacobians, as a study in one folder: per block, the largest singular
value of the derivative of its residual update with respect to the whole sequence's residual stream
(docs/scale_and_mechanisms.md), by exact power iteration or the paper's finite differences.

Here: its declaration (below), its job (``jobs.py``), its measurement (``run.py``: torch), its rules
(``rules.smk``), its config section's schema (``schema.yaml``) and its table's caption. Its figure is the folder's
(``figures.py`` draws it, ``jacobian.rst`` is its caption).
"""

from __future__ import annotations

from pathlib import Path

from swapkl.figures.figure_registry import AGGREGATE, Figure, register
from swapkl.studies.jacobian.jobs import JacobianJob
from swapkl.study import Stage, Study, probe_window_inputs, register_study, row_labels


def _files(wildcards, output) -> dict:
    return {"out": output.norms}


STUDY = register_study(Study(
    name="jacobian", folder=Path(__file__).parent,
    stage=Stage("jacobian", JacobianJob, "swapkl.studies.jacobian.run:run_jacobian", "jacobian", ("out",),
                row_labels),
    summary="the largest singular value of each block's residual-update Jacobian on the probe windows, drawn "
            "against the blocks' swap distances",
    outputs={"norms": "results/jacobian/{model}/{revision}.parquet"},
    tables={"jacobian": "jacobian_table.rst"},
    rules={"measure_jacobian": "checkpoint", "combine_jacobian": "once"},
    inputs=probe_window_inputs, files=_files, figures="once",
    defaults=tuple((key, JacobianJob, key) for key in ("method", "iterations", "eps", "n_prompts")),
))

register(Figure("jacobian", "swapkl.studies.jacobian.figures:plot_jacobian",
                {"jacobian": "results/jacobian.parquet", "aggregate": AGGREGATE}, "global", "scale",
                "||J_k|| per block and against the blocks' swap distances", targets="jacobian",
                caption=str(STUDY.folder / "jacobian.rst")))
