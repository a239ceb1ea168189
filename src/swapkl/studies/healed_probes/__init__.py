"""The third test, as a study in one folder: on every checkpoint of a model with `healed_probes.enabled`, the
selected variants of the probes (pairs of replacement and interchange, blocks of deletion) are each healed toward
the base model's own predictions, and their KL to the base is measured along the heal (docs/third_test.md); then
the disagreement map ranks every pair and block by every test of the checkpoint and measures how far any two
rankings agree.

Here: its declaration (below), its rules (``rules.smk``), its config section's schema (``schema.yaml``), its two
tables' captions and its two figures (``figures.py`` draws them, one job per checkpoint: rule ``plot_third_test``;
``test_agreement.rst`` and ``healed_curves.rst`` are their captions). The job and its run are
:mod:`swapkl.recovery.healed_jobs` and :mod:`swapkl.recovery.healed` (the command ``swapkl healed-probe`` runs them
too), the disagreement map :mod:`swapkl.probes.disagreement`.
"""

from __future__ import annotations

from pathlib import Path

from swapkl.data.text_sources import source_key
from swapkl.errors import ConfigError
from swapkl.figures.figure_registry import Figure, register
from swapkl.layout import healed_file, relevance_file, repr_file, test_agreement_file
from swapkl.recovery.healed_jobs import HealedProbeJob
from swapkl.recovery.heal_settings import TrainText
from swapkl.study import Stage, Study, register_study

#: each checkpoint's healed-probe table and disagreement map
OUTPUTS = {"healed": healed_file("{model}", "{revision}"),
           "test_agreement": test_agreement_file("{model}", "{revision}")}


def check(name: str, model: dict, models: dict) -> None:
    """An enabled section heals deletion only where the model probes it, and calibrates on another text than
    the probe windows."""
    section = model["healed_probes"]
    if "healed_deletion" in section["protocols"] and not model["deletion"]:
        raise ConfigError(f"models.{name}.healed_probes.protocols: healed_deletion needs the deletion probe")
    if "tokens" in model["data"] or source_key(**section["calibration"]) == source_key(**model["data"]):
        raise ConfigError(f"models.{name}.healed_probes.calibration: the calibration text must be another source "
                          f"than the probe windows (models.{name}.data)")


def _settings(params, wildcards) -> dict:
    section = params.model_config(wildcards)["healed_probes"]
    return dict(select_seed=section["seed"], label=wildcards.model, revision_label=wildcards.revision)


def _inputs(params, wildcards) -> dict:
    """Rule probe_healed's: the checkpoint, its probes, and the probe windows and calibration text where they are
    files."""
    model = params.model_config(wildcards)
    return {"checkpoint": params.checkpoint_input(wildcards), "probes": params.probe_files(wildcards),
            "text": params.text_inputs(model["data"], model["healed_probes"]["calibration"])}


def _files(wildcards, input, output) -> dict:
    return {"probe_files": list(input.probes), "out": output.healed}


def agreement_inputs(params, wildcards) -> dict:
    """Rule measure_test_agreement's: the checkpoint's probes, representation and healed probes, its seed family
    members' probes, and its relevance scores where the model is scored."""
    model, revision = wildcards.model, wildcards.revision
    inputs = {"probes": params.probe_files(wildcards), "representation": repr_file(model, revision),
              "healed": healed_file(model, revision),
              "members": [f for files in params.family_members(wildcards).values() for f in files]}
    if (model, revision) in params.plan.stage_checkpoints("relevance"):
        inputs["relevance"] = relevance_file(model, revision)
    return inputs


STUDY = register_study(Study(
    name="healed_probes", folder=Path(__file__).parent,
    stage=Stage("healed_probes", HealedProbeJob, "swapkl.recovery.healed:run_healed_probe", "healed_probes",
                ("probe_files", "out"), _settings),
    summary="the third test: selected variants healed toward the base model's predictions, their KL measured "
            "along the heal, and the disagreement map of every test of the checkpoint",
    outputs=OUTPUTS,
    tables={"healed": "healed_table.rst", "test_agreement": "test_agreement_table.rst"},
    rules={"probe_healed": "checkpoint", "measure_test_agreement": "checkpoint", "aggregate_healed": "once"},
    inputs=_inputs, files=_files, check=check,
    defaults=(("protocols", HealedProbeJob, "protocols"), ("curve_steps", HealedProbeJob, "curve_steps"),
              ("selection", HealedProbeJob, "selection"), ("k", HealedProbeJob, "k"),
              ("seed", HealedProbeJob, "select_seed"), ("calibration#split", TrainText, "split")),
))

register(Figure("test_agreement", "swapkl.studies.healed_probes.figures:plot_test_agreement",
                {"agreement": OUTPUTS["test_agreement"]}, "checkpoint",
                "third_test", "Kendall's tau between every two tests of one checkpoint (the disagreement map)",
                rule="plot_third_test", targets="healed_probes", labels={"figure": "disagreement map"},
                caption=str(STUDY.folder / "test_agreement.rst")))
register(Figure("healed_curves", "swapkl.studies.healed_probes.figures:plot_healed_curves",
                {"healed": OUTPUTS["healed"]}, "checkpoint",
                "third_test", "the healed variants' recovery curves of one checkpoint", rule="plot_third_test",
                targets="healed_probes", labels={"figure": "recovery curves"},
                caption=str(STUDY.folder / "healed_curves.rst")))
