"""The scale sweep, as a study in one folder: one row per model at its final checkpoint, the protocol gap and I/R
ratio of its adjacent pairs from the aggregate beside its architecture, position encoding and parameter count read
from the checkpoint (docs/scale_and_mechanisms.md).

Here: its declaration (below: a study without a job of its own, whose one rule reads the aggregate and the
checkpoints its section chooses), its table (``stats.py``), its rule (``rules.smk``), its config section's schema
(``schema.yaml``) and its table's caption. Its figure is the folder's (``figures.py`` draws it, ``scaling.rst`` is
its caption).
"""

from __future__ import annotations

from pathlib import Path

from swapkl.figures.figure_registry import Figure, register
from swapkl.study import Study, register_study

STUDY = register_study(Study(
    name="scaling", folder=Path(__file__).parent, stage=None,
    summary="the gap and I/R ratio of each model's adjacent pairs at its final checkpoint, against its parameters, "
            "architecture and position encoding",
    tables={"scaling": "scaling_table.rst"},
    rules={"summarise_scaling": "once"}, figures="once",
))

register(Figure("scaling", "swapkl.studies.scaling.figures:plot_scaling", {"scaling": "results/scaling.parquet"},
                "global", "scale", "mean gap and I/R ratio against parameters, coloured by position encoding", targets="scaling",
                caption=str(STUDY.folder / "scaling.rst")))
