"""The RoPE counterfactual, as a study in one folder: a model probed with every rotary angle zero (``rope: "off"``,
on the weights of the model it names in ``same_weights_as``) against that model with rotary embeddings on, per
adjacent pair, with the exact sign test of "the gap grows without RoPE" (docs/scale_and_mechanisms.md). It reads
the two models' probes from the aggregate (no forward pass of its own).

Here: its declaration and the config checks of its section (below), its table (``stats.py``), its rule
(``rules.smk``), its config section's schema (``schema.yaml``) and its table's caption. Its figure is the folder's
(``figures.py`` draws it, ``rope_counterfactual.rst`` is its caption).
"""

from __future__ import annotations

from pathlib import Path

from swapkl.errors import ConfigError
from swapkl.figures.figure_registry import Figure, register
from swapkl.study import Study, register_study


def check(name: str, model: dict, models: dict) -> None:
    """An enabled section belongs to a `rope: "off"` model that shares another model's weights, and its `pairs`
    are adjacent."""
    where = f"models.{name}.rope_counterfactual"
    if model.get("rope", "on") in ("on", True) or "same_weights_as" not in model:
        raise ConfigError(f'{where}: only for a `rope: "off"` model with `same_weights_as` (the rotary-on '
                          "model it is compared with)")
    bad = [p for p in model["rope_counterfactual"].get("pairs") or [] if p[1] != p[0] + 1]
    if bad:
        raise ConfigError(f"{where}.pairs: {bad} are not adjacent pairs [i, i+1]")


def comparisons(plan) -> list[list]:
    """[rope-off model, its rotary-on reference, revision, pairs or None] for each checkpoint the study reads
    (``plan``: the run's :class:`swapkl.config.study_plan.StudyPlan`)."""
    return [[model, plan.models[model]["same_weights_as"], revision,
             plan.models[model]["rope_counterfactual"].get("pairs")]
            for model, revision in plan.stage_checkpoints("rope_counterfactual")]


STUDY = register_study(Study(
    name="rope_counterfactual", folder=Path(__file__).parent, stage=None,
    summary="a model probed with rotary embeddings off against the same weights with them on: each adjacent "
            "pair's I/R ratio, with the exact sign test",
    tables={"rope_counterfactual": "rope_counterfactual_table.rst"},
    rules={"summarise_rope_counterfactual": "once"}, figures="checkpoint", check=check,
    former={"rope_pairs": "rope_counterfactual: {enabled: true, pairs: [[i, i+1], ...]}"},
))

register(Figure("rope_counterfactual", "swapkl.studies.rope_counterfactual.figures:plot_rope_counterfactual",
                {"rope": "results/rope_counterfactual.parquet"}, "checkpoint", "scale",
                "per-pair I/R ratio with rotary embeddings on and off", targets="rope_counterfactual", constrained=True,
                caption=str(STUDY.folder / "rope_counterfactual.rst")))
