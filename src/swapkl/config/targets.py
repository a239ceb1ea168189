"""Every file a full run of the workflow produces (the targets of `rule all`), from a :class:`StudyPlan`: the
tables of each stage, and the figures of the figure registry (:mod:`swapkl.figures.figure_registry`)."""

from __future__ import annotations

from swapkl.layout import covariate_file, export_dir
from swapkl.config.study_plan import StudyPlan
from swapkl.study import STUDIES
from swapkl.figures.figure_registry import ALWAYS_PRESENT, numbered_sections
from swapkl.paper.published import published_models
from swapkl.figures.figure_registry import figures as registered_figures

def answer_file(model: str) -> str:
    """A model's answer page (rule summarise_answer): the report's first section."""
    return f"results/answer/{model}.html"


#: the results tables of the stages wired in workflow/rules that the report shows as HTML (results/tables/{name}.html),
#: as patterns of their names
BUILT_IN_TABLES = (
    "swapkl", "seeds", "covariates", "covariate_correlations",
)


def result_tables() -> tuple[str, ...]:
    """The name patterns of every results table the report shows as HTML: the built-in stages', then those of
    the studies kept in folders (their declared ``tables``)."""
    return BUILT_IN_TABLES + tuple(table for study in STUDIES.entries() for table in study.tables)


def _export_outputs(plan: StudyPlan) -> list[str]:
    return [export_dir(model, revision) for model, revision in plan.export_checkpoints()]


def _measurement_outputs(plan: StudyPlan) -> list[str]:
    outputs = ["results/seeds.parquet"] if plan.seed_families() else []
    covariates = plan.covariate_checkpoints()
    if covariates:
        outputs += ["results/covariates.parquet", "results/covariate_correlations.parquet",
                    *[covariate_file(m, r) for m, r in covariates]]
    for study in STUDIES.entries():  # the studies kept in folders (swapkl.studies)
        outputs += study.final_outputs(plan.study_units(study.name))
    return outputs


def _answer_outputs(plan: StudyPlan) -> list[str]:
    return [answer_file(model) for model in plan.answer_models()]


# ------------------------------------------------------------------------------------------------- figures


def _own(plan: StudyPlan, names) -> list:
    """``names`` (models, or (model, revision) checkpoints) less the seed family members, which get no per-model
    figures of their own (see :meth:`StudyPlan.seed_band_families`)."""
    members = plan.seed_members()
    return [n for n in names if (n[0] if isinstance(n, tuple) else n) not in members]


def _each(names, *wildcards) -> list[dict]:
    return [dict(zip(wildcards, n if isinstance(n, tuple) else (n,))) for n in names]


def _once(condition) -> list[dict]:
    return [{}] if condition else []


def _checkpoints_with(plan: StudyPlan, key: str) -> list[dict]:
    return _each([c for c in _own(plan, plan.checkpoints()) if plan.models[c[0]][key]], "model", "revision")


#: which instances of a figure the report gets (a figure entry's ``targets``; by default its scope's name), as
#: lists of wildcard dicts
FIGURE_SELECTIONS = {
    "checkpoint": lambda plan: _each(_own(plan, plan.checkpoints()), "model", "revision"),
    "model": lambda plan: _each(_own(plan, plan.enabled_models()), "model"),
    "family": lambda plan: _each(plan.seed_band_families(), "family"),
    "global": lambda plan: [{}],
    "trajectory": lambda plan: _each(_own(plan, plan.trajectory_models()), "model"),
    "deletion": lambda plan: _checkpoints_with(plan, "deletion"),
    "weights": lambda plan: _checkpoints_with(plan, "weight_protocols"),
    "demo": lambda plan: _once(plan.models_with("demo")),
    "pruned": lambda plan: _once(plan.stage_checkpoints("prune")),
    "pruning_trajectory": lambda plan: _each(_own(plan, plan.pruning_trajectory_models()), "model"),
    "covariates": lambda plan: _once(plan.covariate_checkpoints()),
}



def figure_instances(plan: StudyPlan, selection: str) -> list[dict]:
    """The wildcards of every instance of a figure whose entry selects ``selection``: one of
    :data:`FIGURE_SELECTIONS`, or the name of a study kept in a folder (its declared ``figures``)."""
    if selection in STUDIES:
        return STUDIES[selection].figure_instances(plan.study_units(selection), plan.seed_members())
    return FIGURE_SELECTIONS[selection](plan)


def figure_targets(plan: StudyPlan) -> list[str]:
    """The PNG and PDF of every registered figure the report gets."""
    return [path for fig in registered_figures().values() for wildcards in figure_instances(plan, fig.targets)
            for path in fig.outputs(**wildcards)]


def reproduces_published(plan: StudyPlan) -> bool:
    """Whether the plan runs a config entry that holds a published number's counterpart (swapkl/paper/published.yaml):
    only then is the reproduction scorecard a section of its own in the report; otherwise its table (every number
    `not run`, with what it needs) is among the tables."""
    return bool(published_models() & set(plan.enabled_models()))


def report_sections(plan: StudyPlan) -> dict[str, str]:
    """The report category of every section this plan's report fills (key -> ``"NN. title"``): the sections of the
    figures it draws, the scorecard (where the run reproduces a published number) and the tables, numbered in
    reading order (figure_registry.numbered_sections)."""
    present = {fig.section for fig in registered_figures().values() if figure_instances(plan, fig.targets)}
    answer = {"answer"} if plan.answer_models() else set()
    always = {key for key in ALWAYS_PRESENT if key != "scorecard" or reproduces_published(plan)}
    return numbered_sections(present | answer | always)


def final_outputs(plan: StudyPlan) -> list[str]:
    """Every file the README lists as an output, intermediate tables included, so that a deleted one is
    rebuilt (Snakemake would otherwise skip a missing intermediate whose consumers are up to date)."""
    return ["results/swapkl.parquet", "results/paper_scorecard.parquet", *plan.all_probe_files(),
            *plan.all_repr_files(), *_export_outputs(plan), *_measurement_outputs(plan), *_answer_outputs(plan),
            *figure_targets(plan)]

