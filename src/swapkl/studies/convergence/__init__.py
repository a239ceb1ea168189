"""Prompt-set convergence, as a study in one folder: how the pairs' ranking on random subsets of a checkpoint's
probe windows agrees with the full set's, from the per-window sums the probes stored (no forward pass; the
paper's "prompt-set robustness", docs/scale_and_mechanisms.md).

Here: its declaration (below: a study without a job of its own, whose one rule reads the replacement and interchange
probes of the checkpoints its section chooses), its statistics (``stats.py``), its rule (``rules.smk``), its config
section's schema (``schema.yaml``) and its table's caption. Its figure is the folder's (``figures.py`` draws it,
``convergence.rst`` is its caption).
"""

from __future__ import annotations

from pathlib import Path

from swapkl.figures.figure_registry import Figure, register
from swapkl.study import Study, register_study

#: the probes whose stored sums it resamples (their files, per checkpoint: swapkl.layout.probe_file)
PROTOCOLS = ("replacement", "interchange")

STUDY = register_study(Study(
    name="convergence", folder=Path(__file__).parent, stage=None,
    summary="the pairs' ranking on random subsets of the probe windows against the full set's, from the probes' "
            "stored sums (no forward pass)",
    tables={"convergence": "convergence_table.rst"},
    rules={"summarise_convergence": "once"}, figures="once",
))

register(Figure("convergence", "swapkl.studies.convergence.figures:plot_convergence",
                {"convergence": "results/convergence.parquet"}, "global", "scale",
                "rank agreement and top-pair stability against the number of prompts", targets="convergence",
                caption=str(STUDY.folder / "convergence.rst")))
