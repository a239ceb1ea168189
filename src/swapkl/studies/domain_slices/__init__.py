"""Domain slices, as a study in one folder: a model that prunes another model's weights with the same probes and
guides but measures perplexity on another text (its ``prune.eval``: IMDB reviews, code, ...), against that model's
pruning, by the rank correlation of the two pruning costs (docs/scale_and_mechanisms.md). It reads the pruning
table (no forward pass of its own).

Here: its declaration and the config checks of its section (below), its table (``stats.py``), its rule
(``rules.smk``), its config section's schema (``schema.yaml``) and its table's caption. Its figure is the folder's
(``figures.py`` draws it, ``domain_slices.rst`` is its caption).
"""

from __future__ import annotations

from pathlib import Path

from swapkl.errors import ConfigError
from swapkl.figures.figure_registry import Figure, register
from swapkl.hub.revision_names import chosen_revisions
from swapkl.study import Study, register_study


def check(name: str, model: dict, models: dict) -> None:
    """An enabled section names another model of the config whose weights this model shares (the same checkpoint),
    and both prune every revision the section reads."""
    where = f"models.{name}.domain_slices"
    reference = model["domain_slices"].get("reference")
    other = models.get(reference)
    if reference is None or reference == name or other is None:
        raise ConfigError(f"{where}.reference: name another model of this config (got {reference!r})")
    if model.get("same_weights_as", name) != other.get("same_weights_as", reference):
        raise ConfigError(f"{where}.reference: {reference!r} loads other weights than {name!r}; a slice prunes "
                          f"the same weights (set models.{name}.same_weights_as: {reference})")
    for owner, entry in ((name, model), (reference, other)):
        pruned = chosen_revisions(entry["prune"]["revisions"], entry["revisions"]) if entry["prune"]["enabled"] else []
        missing = [r for r in chosen_revisions(model["domain_slices"]["revisions"], model["revisions"])
                   if r not in pruned]
        if missing:
            raise ConfigError(f"{where}.revisions: {missing} not pruned by {owner!r} (models.{owner}.prune)")


def slices(plan) -> list[list[str]]:
    """[slice model, its reference, revision] for each checkpoint the study reads (``plan``: the run's
    :class:`swapkl.config.study_plan.StudyPlan`)."""
    return [[model, plan.models[model]["domain_slices"]["reference"], revision]
            for model, revision in plan.stage_checkpoints("domain_slices")]


STUDY = register_study(Study(
    name="domain_slices", folder=Path(__file__).parent, stage=None,
    summary="the same pruning of the same weights evaluated on a second text: the rank correlation of the two "
            "pruning costs",
    tables={"domain_slices": "domain_slices_table.rst"},
    rules={"summarise_domain_slices": "once"}, figures="once", check=check,
    former={"domain_slice_of": "domain_slices: {enabled: true, reference: <model>}"},
))

register(Figure("domain_slices", "swapkl.studies.domain_slices.figures:plot_domain_slices",
                {"slices": "results/domain_slices.parquet"}, "global", "scale",
                "pruning cost on the reference text against the second corpus", targets="domain_slices",
                caption=str(STUDY.folder / "domain_slices.rst")))
