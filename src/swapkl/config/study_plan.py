"""Which models and revisions each stage of the workflow runs for, from the validated, seed-expanded config.

A :class:`StudyPlan` answers every "for which checkpoints" question of the rules (probes, pruning, export,
covariates, seed families, and each study kept in a folder by its declaration), so the workflow, the
tests and anyone planning a run read the same lists.
"""

from __future__ import annotations

from swapkl import layout
from swapkl.config.job_settings import canonical, config_text_files
from swapkl.config.stages import STAGES
from swapkl.study import STUDIES
from swapkl.probes.pair_sets import widest_pair_set
from swapkl.hub.revision_names import chosen_revisions, last_revision
from swapkl.probes.protocols import protocol_names, weight_protocol_names

#: the probe protocols every model runs (deletion unless switched off), before its weight-changing ones: every
#: registered protocol that changes no weights (swapkl.probes.protocols), in the registry's order
PROBE_PROTOCOLS = tuple(p for p in protocol_names() if p not in weight_protocol_names())


def checkpoint_protocols_with(deletion: bool) -> list[str]:
    """The protocols that change no weights, of a model with deletion on or off."""
    return [p for p in PROBE_PROTOCOLS if deletion or p != "deletion"]


class StudyPlan:
    """``cfg``: the validated config with seed families expanded; ``families``: those families
    (:func:`swapkl.config.validation.validate_config` returns both)."""

    def __init__(self, cfg: dict, families: dict):
        self.cfg = cfg
        self.models = cfg["models"]
        self.families = families

    # ------------------------------------------------------------------------------------------- models

    def enabled_models(self) -> list[str]:
        """Models that schedule jobs: enabled, and (for `same_weights_as`) sharing an enabled model's weights."""
        return [name for name, model in self.models.items()
                if model["enabled"] and self.models[model.get("same_weights_as", name)]["enabled"]]

    def models_with(self, key: str) -> list[str]:
        """Enabled models configured with `key` (one of source, local, gguf, demo)."""
        return [name for name in self.enabled_models() if key in self.models[name]]

    def trajectory_models(self) -> list[str]:
        return [name for name in self.enabled_models() if self.models[name]["trajectory"]]

    def revisions(self, model: str) -> list[str]:
        return self.models[model]["revisions"]

    def checkpoints(self) -> list[tuple[str, str]]:
        """Every enabled (model, revision)."""
        return [(model, revision) for model in self.enabled_models() for revision in self.revisions(model)]

    def weights_owner(self, model: str) -> str:
        """The model whose checkpoints ``model`` loads: its `same_weights_as`, else itself."""
        return self.models[model].get("same_weights_as", model)

    def checkpoint_dir(self, model: str, revision: str) -> str:
        """The Hugging Face checkpoint directory that swapkl loads for model/revision."""
        owner = self.weights_owner(model)
        return layout.checkpoint_dir(owner, self.models[owner], revision)

    def checkpoint_input(self, model: str, revision: str) -> str:
        """What a job on model/revision depends on: the checkpoint directory, or for a demo model the
        directory of the whole training run (which holds every step{N} checkpoint)."""
        owner = self.weights_owner(model)
        return layout.demo_run_dir(owner) if "demo" in self.models[owner] else self.checkpoint_dir(model, revision)

    def content_inputs(self) -> list[str]:
        """The checkpoints and text files the study reads, each once: what swapkl.config.input_stamps stamps."""
        checkpoints = [self.checkpoint_input(model, revision) for model, revision in self.checkpoints()]
        return list(dict.fromkeys(checkpoints + config_text_files(self.cfg)))

    # ------------------------------------------------------------------------------------------- probes

    def probe_pairs(self, model: str) -> str:
        """The widest pair set of the model, probed once."""
        return widest_pair_set(self.models[model]["pair_sets"])

    def probe_protocols(self, model: str) -> list[str]:
        """The protocols that change no weights (deletion unless switched off), then the model's weight-changing ones."""
        return self.checkpoint_protocols(model) + list(self.models[model]["weight_protocols"])

    def checkpoint_protocols(self, model: str) -> list[str]:
        """The protocols that change no weights (deletion unless switched off): one job per checkpoint measures
        them all, sharing each batch's base pass (rule probe_checkpoint)."""
        return checkpoint_protocols_with(self.models[model]["deletion"])

    def checkpoint_models(self, deletion: bool, covariates: bool) -> list[str]:
        """Enabled models with deletion and covariates on or off as given: the rule of their checkpoints' probe job
        (whose outputs are deletion's and the representation file, the covariate file, or not)."""
        return [model for model in self.enabled_models()
                if (self.models[model]["deletion"], self.models[model]["covariates"]) == (deletion, covariates)]

    def all_probe_files(self) -> list[str]:
        return [layout.probe_file(m, r, p) for m, r in self.checkpoints() for p in self.probe_protocols(m)]

    def all_repr_files(self) -> list[str]:
        return [layout.repr_file(m, r) for m, r in self.checkpoints() if self.models[m]["deletion"]]

    def pair_sets(self) -> dict[str, list[str]]:
        return {model: self.models[model]["pair_sets"] for model in sorted(self.enabled_models())}

    # ------------------------------------------------------------------------------------------- stages

    def stage_revisions(self, kind: str, model: str) -> list[str]:
        """The revisions of ``model`` that the stage ``kind`` (:data:`swapkl.config.stages.STAGES`, or a study kept
        in a folder without a stage of its own) runs on: by its
        section's ``enabled`` and ``revisions`` (a list, ``all``, or ``last``: :func:`~swapkl.hub.revision_names.chosen_revisions`), in the order
        of the model's revisions; a study whose checkpoints follow another stage's by its ``follows``."""
        block = self.models[model][STAGES[kind].section if kind in STAGES else STUDIES[kind].name]
        if not block["enabled"]:
            return []
        if kind in STUDIES and STUDIES[kind].follows is not None:
            return STUDIES[kind].follows(self, model)
        return chosen_revisions(block["revisions"], self.revisions(model))

    def stage_checkpoints(self, kind: str) -> list[tuple[str, str]]:
        """Every enabled (model, revision) that the stage ``kind`` runs on, model by model."""
        return [(model, revision) for model in self.enabled_models() for revision in self.stage_revisions(kind, model)]

    def covariate_checkpoints(self) -> list[tuple[str, str]]:
        """Every (model, revision) of the models with `covariates: true`."""
        return [(model, revision) for model, revision in self.checkpoints() if self.models[model]["covariates"]]

    def models_with_pruning(self) -> list[str]:
        return [model for model in self.enabled_models() if self.stage_revisions("prune", model)]

    def pruning_trajectory_models(self) -> list[str]:
        """Trajectory models pruned at two or more revisions (I/R pruning ratio along training)."""
        pruned = self.stage_checkpoints("prune")
        return [model for model in self.trajectory_models() if len([r for m, r in pruned if m == model]) >= 2]

    def answer_models(self) -> list[str]:
        """Models whose report opens on an answer page (rule summarise_answer): the pruned ones, seed family
        members aside."""
        members = self.seed_members()
        return [model for model in self.models_with_pruning() if model not in members]

    def answer_revision(self, model: str) -> str:
        """The revision a model's answer page is about: its last pruned revision."""
        return last_revision(self.stage_revisions("prune", model))

    def export_checkpoints(self) -> list[tuple[str, str]]:
        """Pruned checkpoints whose guides' choices are exported (prune.export_guides): where the pruning study's
        export rule runs."""
        return STUDIES["prune"].rule_units("export_pruned_models", self.stage_checkpoints("prune"), self.cfg)

    # ------------------------------------------------------------------------------------------- seeds

    def seed_members(self) -> set[str]:
        """Family members other than their entry's own run: in the tables and the across-seed figures, without
        per-model figures of their own."""
        return {member for family in self.families.values() for member in list(family["members"])[1:]}

    def seed_families(self) -> dict:
        """{family: {"varies", "members": {model: seed}}} over the enabled members, for families with two or more."""
        enabled = set(self.enabled_models())
        families = {}
        for name, family in self.families.items():
            members = {m: seed for m, seed in family["members"].items() if m in enabled}
            if len(members) >= 2:
                families[name] = {"varies": family["varies"], "members": members}
        return canonical(families)

    def seed_band_families(self) -> list[str]:
        """Families whose members are all trajectory models (gap vs training step)."""
        trajectory = set(self.trajectory_models())
        return [name for name, f in self.seed_families().items() if set(f["members"]) <= trajectory]

    # ------------------------------------------------------------------------------------------- scale stages

    def own_entries(self) -> list[str]:
        """Enabled models other than seed family members (which copy their entry's settings)."""
        members = self.seed_members()
        return [m for m in self.enabled_models() if m not in members]

    def study_units(self, name: str) -> list:
        """What the study kept in folder ``name`` runs on: the (model, revision) checkpoints its section chooses,
        or for a study of the whole run the wildcards of its units (:meth:`swapkl.study.Study.run_units`)."""
        study = STUDIES[name]
        return study.run_units(self.cfg) if study.scope == "run" else self.stage_checkpoints(name)
