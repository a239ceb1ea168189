"""Every file a full run of the workflow produces (the targets of `rule all`), from a :class:`StudyPlan`."""

from __future__ import annotations

from swapkl.config.layout import (agreement_file, covariate_file, export_dir, figure_files, healed_file,
                                  pruning_file, recovery_file, span_file, test_agreement_file)
from swapkl.config.study_plan import StudyPlan


def _per_model_figures(plan: StudyPlan, members: set[str]) -> list[str]:
    outputs = []
    for model in plan.trajectory_models():
        if model not in members:
            outputs += figure_files(f"gap_trajectory/{model}") + figure_files(f"gap_trajectory_fwd/{model}")
    for model in plan.enabled_models():
        if model not in members:
            outputs += figure_files(f"ratio_by_distance/{model}") + figure_files(f"ratio_by_distance_fwd/{model}")
    if plan.seed_families():
        outputs.append("results/seeds.parquet")
        for family in plan.seed_band_families():
            outputs += figure_files(f"seeds/{family}")
    for model, revision in plan.checkpoints():
        if model in members:
            continue
        outputs += figure_files(f"heatmaps/{model}/{revision}")
        if plan.models[model]["deletion"]:
            outputs += figure_files(f"deletion_vs_bi/{model}/{revision}")
        if plan.models[model]["weight_protocols"]:
            outputs += figure_files(f"weight_protocols/{model}/{revision}")
    if plan.models_with("demo"):
        outputs += figure_files("training_curves")
    return outputs


def _healing_outputs(plan: StudyPlan) -> list[str]:
    outputs = [export_dir(model, revision) for model, revision in plan.export_checkpoints()]
    if plan.heal_checkpoints():
        outputs += ["results/recovery.parquet", *figure_files("recovery"),
                    *[recovery_file(m, r) for m, r in plan.heal_checkpoints()]]
    if plan.healed_checkpoints():
        outputs += ["results/healed.parquet", "results/test_agreement.parquet"]
        for model, revision in plan.healed_checkpoints():
            outputs += [healed_file(model, revision), test_agreement_file(model, revision)]
            outputs += figure_files(f"test_agreement/{model}/{revision}")
            outputs += figure_files(f"healed_curves/{model}/{revision}")
    return outputs


def _measurement_outputs(plan: StudyPlan, members: set[str]) -> list[str]:
    outputs = []
    if plan.relevance_checkpoints():
        outputs += ["results/relevance.parquet", "results/relevance_stats.parquet"]
        for model, revision in plan.relevance_checkpoints():
            outputs += figure_files(f"relevance_cosine/{model}/{revision}")
            outputs += figure_files(f"relevance_zscores/{model}/{revision}")
            outputs += figure_files(f"relevance_confusion/{model}/{revision}")
    covariates = plan.covariate_checkpoints()
    if covariates:
        outputs += ["results/covariates.parquet", "results/covariate_correlations.parquet",
                    *figure_files("covariates"), *[covariate_file(m, r) for m, r in covariates]]
    spans = plan.span_checkpoints()
    if spans:
        outputs += ["results/spans.parquet", *[span_file(m, r) for m, r in spans]]
        outputs += [f for m, r in spans if m not in members for f in figure_files(f"spans/{m}/{r}")]
    return outputs


def _pruning_outputs(plan: StudyPlan, members: set[str]) -> list[str]:
    pruned = plan.prune_checkpoints()
    if not pruned:
        return []
    outputs = ["results/pruning.parquet", "results/pruning_agreement.parquet"]
    outputs += [f(model, revision) for model, revision in pruned for f in (pruning_file, agreement_file)]
    outputs += figure_files("pruning_ratio")
    for model, revision in pruned:
        if model not in members:
            outputs += figure_files(f"pruning_cost/{model}/{revision}")
            outputs += figure_files(f"pruning_agreement/{model}/{revision}")
            outputs += figure_files(f"rank_confusion/{model}/{revision}")
    for model in plan.pruning_trajectory_models():
        if model not in members:
            outputs += figure_files(f"pruning_trajectory/{model}")
    return outputs


def scale_mechanism_outputs(plan: StudyPlan) -> list[str]:
    """Tables and figures of the scale sweep and the mechanism / robustness stages."""
    out = []
    if plan.scaling_models():
        out += ["results/scaling.parquet", *figure_files("scaling")]
    for model in plan.rope_counterfactual_models():
        out += [f"results/rope_counterfactual/{model}.parquet", *figure_files(f"rope_counterfactual/{model}")]
    if plan.jacobian_models():
        out += ["results/jacobian.parquet", *figure_files("jacobian"), *map(plan.jacobian_file, plan.jacobian_models())]
    if plan.convergence_models():
        out += ["results/convergence.parquet", *figure_files("convergence")]
    for model in plan.predictor_validity_models():
        out += [f"results/predictor_validity/{model}.parquet", *figure_files(f"predictor_validity/{model}")]
    if plan.domain_slice_models():
        out += ["results/domain_slices.parquet", *figure_files("domain_slices")]
    return out


def final_outputs(plan: StudyPlan) -> list[str]:
    """Every file the README lists as an output, intermediate tables included, so that a deleted one is
    rebuilt (Snakemake would otherwise skip a missing intermediate whose consumers are up to date). Per-model
    figures are not drawn for seed family members (see :meth:`StudyPlan.seed_band_families`)."""
    members = plan.seed_members()
    return ["results/swapkl.parquet", "results/paper_scorecard.parquet", *plan.all_probe_files(),
            *plan.all_repr_files(), *_per_model_figures(plan, members), *_healing_outputs(plan),
            *_measurement_outputs(plan, members), *_pruning_outputs(plan, members), *scale_mechanism_outputs(plan)]
