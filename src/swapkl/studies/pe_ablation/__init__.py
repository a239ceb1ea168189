"""The controlled position-encoding ablation, as a study of the whole run in one folder: architecture-matched
models that differ only in how they encode positions (RoPE, learned, ALiBi) are trained from scratch on one text
at a few depths, each probed with replacement and interchange on every pair within ``max_distance``, and the I/R
ratio summarised by pair distance (docs/scale_and_mechanisms.md).

Here: its declaration (below), its models' settings, files and checks (``models.py``), the summary table
(``summary.py``), its rules (``rules.smk``), its top-level config section's schema (``schema.yaml``) and its table's
caption. Its figure is the folder's (``figures.py`` draws it, ``pe_ablation.rst`` is its caption).
"""

from __future__ import annotations

from pathlib import Path

from swapkl.figures.figure_registry import Figure, register
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.studies.pe_ablation.models import (PE_PROTOCOLS, check_pe_ablation, pe_checkpoint, pe_metadata,
                                               pe_models, pe_pairs, pe_probe_data, pe_probe_file)
from swapkl.study import Stage, Study, register_stage, register_study


def _probe_settings(params, wildcards) -> dict:
    """One trained model's probe: its final checkpoint, both ratio protocols, its pairs and windows, its labels."""
    cfg = params.cfg
    return dict(model=pe_checkpoint(cfg, wildcards.pe_model), protocols=list(PE_PROTOCOLS), pairs=pe_pairs(cfg),
                data=pe_probe_data(cfg), metadata=pe_metadata(cfg, wildcards.pe_model))


def _units(cfg: dict) -> list[dict]:
    return [{"pe_model": label} for label in pe_models(cfg)]


#: the probe of one trained model (rule probe_pe_model: ``PARAMS.job("pe_probe")``)
PROBE_STAGE = register_stage(Stage("pe_probe", ProbeJob, "swapkl.probes.probe:run_probe", files=("out",),
                                   settings=_probe_settings, on_checkpoint=False))

STUDY = register_study(Study(
    name="pe_ablation", folder=Path(__file__).parent, stage=None, scope="run",
    summary="models that differ only in position encoding (RoPE, learned, ALiBi), trained from scratch at a few "
            "depths and probed with replacement and interchange: the I/R ratio by pair distance",
    outputs={"probe": pe_probe_file("{pe_model}")},
    tables={"pe_ablation": "pe_ablation_table.rst"},
    rules={"prepare_pe_text": "once", "train_pe_model": "checkpoint", "probe_pe_model": "checkpoint",
           "summarise_pe_ablation": "once"},
    only_with={"prepare_pe_text": "train_text"},
    units=_units, figures="once", check=check_pe_ablation,
))

register(Figure("pe_ablation", "swapkl.studies.pe_ablation.figures:plot_pe_ablation",
                {"pe_ablation": "results/pe_ablation.parquet"}, "global", "scale",
                "I/R ratio by pair distance per position encoding and depth (models trained from scratch)",
                targets="pe_ablation", caption=str(STUDY.folder / "pe_ablation.rst")))
