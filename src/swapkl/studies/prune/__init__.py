"""Layer pruning, as a study in one folder: on every checkpoint of a model with `prune.enabled`, one job removes
1 .. `max_budget` blocks by every guide (the probe scores' and the baselines') and measures what each removal set
costs in perplexity and KL; the gathered pruning table takes its bootstrap intervals there (docs/pruning.md).

Here: its declaration (below), its rules (``rules.smk``), its config section's schema (``schema.yaml``) and its two
tables' captions. The job and its run are :mod:`swapkl.pruning.prune_jobs` and :mod:`swapkl.pruning.prune` (the
command ``swapkl prune`` runs them too), its figures the family :mod:`swapkl.figures.pruning`. Its export rule
writes the pruned models of the guides in `export_guides` (:mod:`swapkl.export`, on the checkpoints whose section
names some); the answer page (``workflow/rules/answer.smk``) reads its tables.
"""

from __future__ import annotations

from pathlib import Path

from swapkl.errors import ConfigError
from swapkl.layout import agreement_file, pruning_file, repr_file
from swapkl.probes.pair_sets import pair_reach
from swapkl.pruning.prune_jobs import CALIBRATION_SPLIT, PruneJob
from swapkl.pruning.eval_spec import EvalSpec
from swapkl.pruning.selection_options import SelectionOptions
from swapkl.study import Stage, Study, register_study, without_nulls


def check(name: str, model: dict, models: dict) -> None:
    """An enabled section scores no pair wider than those probed, and its clustered region is [lo, hi) with
    lo < hi."""
    prune = model["prune"]
    if prune["score_pairs"] is not None and pair_reach(prune["score_pairs"]) > max(map(pair_reach, model["pair_sets"])):
        raise ConfigError(f"models.{name}.prune.score_pairs: {prune['score_pairs']} is wider than the probed "
                          f"pair_sets {model['pair_sets']}")
    region = prune["clustered_region"]
    if region is not None and region[0] >= region[1]:
        raise ConfigError(f"models.{name}.prune.clustered_region: {region} is not [lo, hi) with lo < hi")


def max_budget_form(budgets) -> int:
    """PruneJob's budgets 1..n as the config's ``max_budget`` n."""
    if tuple(budgets) != tuple(range(1, len(budgets) + 1)):
        raise ConfigError(f"PruneJob's default budgets {budgets} are not 1..n: the config cannot state them")
    return len(budgets)


def _settings(params, wildcards) -> dict:
    """The budgets 1..max_budget, the texts without their null keys (the job's defaults then apply), the selection
    options and the rows' labels (with the hash of the pruning's settings)."""
    prune = params.model_config(wildcards)["prune"]
    return dict(budgets=list(range(1, prune["max_budget"] + 1)), eval_data=without_nulls(prune["eval"]),
                calib_data=without_nulls(prune["calibration"]), selection=params.selection_options(wildcards),
                metadata=params.prune_metadata(wildcards))


def _inputs(params, wildcards) -> dict:
    """The checkpoint, its probes and representation, and the evaluation and calibration texts where they are
    files."""
    prune = params.model_config(wildcards)["prune"]
    return {"checkpoint": params.checkpoint_input(wildcards), "probes": params.probe_files(wildcards),
            "representation": repr_file(wildcards.model, wildcards.revision),
            "text": params.text_inputs(prune["eval"], prune["calibration"])}


def _files(wildcards, input, output) -> dict:
    return {"probe_files": list(input.probes), "repr_file": input.representation, "out": output.pruning,
            "agreement_out": output.agreement}


STUDY = register_study(Study(
    name="prune", folder=Path(__file__).parent,
    stage=Stage("prune", PruneJob, "swapkl.pruning.prune:run_pruning", "prune",
                ("probe_files", "repr_file", "out", "agreement_out"), _settings),
    summary="layer pruning: 1 .. max_budget blocks removed by every guide and baseline, each set's perplexity and "
            "KL cost, and how far the guides' sets agree",
    outputs={"pruning": pruning_file("{model}", "{revision}"), "agreement": agreement_file("{model}", "{revision}")},
    tables={"pruning": "pruning_table.rst", "pruning_agreement": "pruning_agreement_table.rst"},
    rules={"prune_layers": "checkpoint", "aggregate_pruning": "once", "export_pruned_models": "checkpoint"},
    only_with={"export_pruned_models": "export_guides"},
    inputs=_inputs, files=_files, check=check, members=True,
    defaults=(("max_budget", PruneJob, "budgets", max_budget_form),
              *[(key, PruneJob, key) for key in ("spacing", "n_random", "seed", "compute_dtype", "allow_overlap",
                                                 "angular_metric")],
              *[(key, SelectionOptions, key) for key in ("random_spacing", "random_interior", "score_pairs",
                                                         "tie_break", "clustered_region", "fixed_sets")],
              ("eval#split", EvalSpec, "split"),
              ("calibration#split", {"CALIBRATION_SPLIT": CALIBRATION_SPLIT}, "CALIBRATION_SPLIT")),
))
