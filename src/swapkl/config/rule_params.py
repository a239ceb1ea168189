"""The inputs, parameters and resources of each rule's jobs, as functions of a job's wildcards (any object
with ``.model`` and ``.revision``), so the rule files only name them. Settings go through
:func:`swapkl.config.job_settings.canonical`, so reordering keys in the config file does not re-run a job."""

from __future__ import annotations

from swapkl.config import captions, job_settings, rule_jobs
from swapkl.config.input_stamps import with_stamps
from swapkl.config.job_settings import settings_hash, text_files, without_nulls
from swapkl.layout import probe_file, progress_file, pruning_file
from swapkl.config.study_plan import PROBE_PROTOCOLS, StudyPlan
from swapkl.figures.figure_registry import figure
from swapkl.study import STUDIES


class RuleParams:
    def __init__(self, plan: StudyPlan):
        self.plan = plan
        self.cfg = plan.cfg

    def _model(self, wildcards) -> dict:
        return self.cfg["models"][wildcards.model]

    def model_config(self, wildcards) -> dict:
        """The (validated, defaults filled in) config of the job's model."""
        return self._model(wildcards)

    def model_setting(self, key: str, section: str | None = None):
        """A param named like the model's config key ``key`` (of its ``section``, e.g. prune), read per job."""
        return lambda wildcards: (self._model(wildcards) if section is None else self._model(wildcards)[section])[key]

    def bootstrap(self) -> dict:
        """The bootstrap of every summary job: the probe section's resamples and seed."""
        return {"n_boot": self.cfg["probe"]["n_boot"], "seed": self.cfg["probe"]["seed"]}

    # ------------------------------------------------------------------------------------------- jobs

    def job(self, kind: str):
        """The ``job`` param of a rule running a ``kind`` job (:mod:`swapkl.config.rule_jobs`), per job."""
        return lambda wildcards: rule_jobs.job_settings(kind, self, wildcards)

    def checkpoint_probe_files(self, wildcards, output) -> dict:
        """The file fields of a probe_checkpoint* job: each protocol's file, its resume file, deletion's
        representation file and the covariates, where the rule writes them."""
        protocols = list(self.plan.checkpoint_protocols(wildcards.model))
        return {"out": {p: output[p] for p in protocols}, "protocols": protocols,
                "repr_out": output.get("representation"), "covariates_out": output.get("covariates"),
                "progress_path": self.checkpoint_progress_paths(wildcards)}

    def protocol_probe_files(self, wildcards, output) -> dict:
        """The file fields of a probe job of one weight-changing protocol."""
        protocol = wildcards.protocol
        return {"out": {protocol: output.probe}, "protocols": [protocol],
                "progress_path": {protocol: self.progress_path(protocol)(wildcards)}}

    # ------------------------------------------------------------------------------------------- checkpoints

    def checkpoint_dir(self, wildcards) -> str:
        return self.plan.checkpoint_dir(wildcards.model, wildcards.revision)

    def checkpoint_input(self, wildcards) -> list[str]:
        """The checkpoint (StudyPlan.checkpoint_input) and its content stamp (swapkl.config.input_stamps)."""
        return with_stamps(self.plan.checkpoint_input(wildcards.model, wildcards.revision))

    # ------------------------------------------------------------------------------------------- probes

    def probe_data(self, wildcards) -> dict:
        """keyword arguments of swapkl.data.windows.DataSpec for the probe windows."""
        return without_nulls(self._model(wildcards)["data"])

    def answer_inputs(self, wildcards) -> dict:
        """The inputs of a model's answer page (swapkl.tables.answer_page): the pruning table, the decisions table
        where its sequential probe ran on the page's revision, and the PNGs of its figures
        (:meth:`answer_figures`)."""
        model = wildcards.model
        inputs = {"pruning": "results/pruning.parquet",
                  "figures": [png for png, _ in self.answer_figures(model)]}
        if (model, self.plan.answer_revision(model)) in self.plan.stage_checkpoints("sequential"):
            inputs["decisions"] = "results/decisions.parquet"
        for _, tables in self.answer_sections(model):
            inputs.update({table: f"results/{table}.parquet" for table in tables})
        return inputs

    def answer_sections(self, model: str) -> list[tuple[str, list[str]]]:
        """(section function, its results tables) of each study with a section on the answer page
        (:attr:`swapkl.study.Study.answer`) that ran on the page's revision of ``model``."""
        checkpoint = (model, self.plan.answer_revision(model))
        return [(study.answer, list(study.tables)) for study in STUDIES.entries()
                if study.answer and checkpoint in self.plan.stage_checkpoints(study.name)]

    def answer_figures(self, model: str) -> list[tuple[str, str]]:
        """(PNG, caption) of each figure on a model's answer page: the pruning cost of the page's revision, its
        sequential decisions (where a sequential probe runs on it: how sure the sets and signs are), its heatmaps,
        and the gap along training (a trajectory model) or the I/R ratio by pair distance."""
        revision = self.plan.answer_revision(model)
        sequential = (model, revision) in self.plan.stage_checkpoints("sequential")
        names = ("pruning_cost", *(("sequential_decisions",) if sequential else ()), "heatmaps",
                 "gap_trajectory" if model in self.plan.trajectory_models() else "ratio_by_distance")
        return [(figure(name).outputs(model=model, revision=revision)[0], figure(name).help) for name in names]

    @staticmethod
    def text_inputs(*specs: dict) -> list[str]:
        """The local text files of text specs (windows, evaluation text) with their content stamps: a rule's
        inputs."""
        return text_files(*specs)

    def probe_files(self, wildcards) -> list[str]:
        """The checkpoint's probe tables of the protocols that change no weights (what pruning and the healed
        probes read)."""
        return [probe_file(wildcards.model, wildcards.revision, protocol) for protocol in PROBE_PROTOCOLS]

    def probe_inputs(self, wildcards) -> dict:
        return {"checkpoint": self.checkpoint_input(wildcards), "text": text_files(self._model(wildcards)["data"])}

    def probe_settings(self, model: str) -> dict:
        return job_settings.probe_settings(self.cfg["models"][model], self.plan.probe_pairs(model))

    def placement(self, wildcards) -> dict:
        return job_settings.placement(self._model(wildcards))

    def job_gpus(self, wildcards) -> int:
        return job_settings.job_gpus(self._model(wildcards))

    def metadata(self, wildcards) -> dict:
        """Provenance that swapkl stores with the results: the config's name for the model, the revision
        label and a hash of the settings that produced them."""
        return {"model": wildcards.model, "revision": wildcards.revision,
                "config_sha256": settings_hash(self.probe_settings(wildcards.model))}

    def demo_settings(self, wildcards) -> dict:
        return job_settings.demo_settings(self._model(wildcards))

    def save_steps(self, wildcards) -> list[int]:
        return job_settings.save_steps(self._model(wildcards))

    @staticmethod
    def progress_path(protocol: str):
        """The resume file of a probe protocol's jobs, as a function of the wildcards."""
        return lambda wildcards: progress_file(wildcards.model, wildcards.revision, protocol)

    def checkpoint_progress_paths(self, wildcards) -> dict[str, str]:
        """The resume file of each protocol of the checkpoint's probe_checkpoint job (each its own job's)."""
        return {protocol: self.progress_path(protocol)(wildcards)
                for protocol in self.plan.checkpoint_protocols(wildcards.model)}

    # ------------------------------------------------------------------------------------------- pruning

    def prune_settings(self, model: str) -> dict:
        return job_settings.prune_settings(self.cfg["models"][model], self.probe_settings(model))

    def selection_options(self, wildcards) -> dict:
        return job_settings.selection_options(self._model(wildcards))

    def prune_metadata(self, wildcards) -> dict:
        return {"model": wildcards.model, "revision": wildcards.revision,
                "config_sha256": settings_hash(self.prune_settings(wildcards.model))}

    def prune_eval(self, wildcards) -> dict:
        """The model's pruning evaluation text (prune.eval) without its null keys: the EvalSpec keyword arguments of
        the jobs that measure perplexity on it (healing, predictor validity)."""
        return without_nulls(self._model(wildcards)["prune"]["eval"])

    def prune_eval_text(self, wildcards) -> list[str]:
        """The pruning evaluation text where it is a local file (with its stamp), else nothing: an input."""
        return text_files(self._model(wildcards)["prune"]["eval"])

    def export_inputs(self, wildcards) -> dict:
        return {"checkpoint": self.checkpoint_input(wildcards),
                "pruning": pruning_file(wildcards.model, wildcards.revision)}

    # ------------------------------------------------------------------------------------------- seed families

    def family_members(self, wildcards) -> dict:
        """{member: its replacement and interchange tables at this revision} of the seed family this model leads
        (its enabled members that save this revision); empty for a model that leads none."""
        led = [f for f in self.plan.families.values() if list(f["members"])[0] == wildcards.model]
        if not led:
            return {}
        enabled = set(self.plan.enabled_models())
        return {m: [probe_file(m, wildcards.revision, p) for p in ("replacement", "interchange")]
                for m in list(led[0]["members"])[1:]
                if m in enabled and wildcards.revision in self.cfg["models"][m]["revisions"]}

    # ------------------------------------------------------------------------------------------- other stages

    def seeds_inputs(self, wildcards) -> dict:
        members = {m for f in self.plan.seed_families().values() for m in f["members"]}
        pruned = members & set(self.plan.models_with_pruning())
        return {"table": "results/swapkl.parquet", **({"pruning": "results/pruning.parquet"} if pruned else {})}

    # ------------------------------------------------------------------------------------------- run-wide blocks

    def demo_text_settings(self) -> dict:
        """The demo corpus's and tokenizer's settings (the config's `demo` block), keys sorted."""
        return job_settings.canonical({part: self.cfg["demo"][part] for part in ("corpus", "tokenizer")})

    def paper_repo(self, wildcards=None) -> str | None:
        """The local clone of the published study's code (`paper.repo`), or None: download its files."""
        return self.cfg["paper"]["repo"]


    # ------------------------------------------------------------------------------------------- captions

    def describe_setup(self, model: str) -> str:
        return captions.describe_setup(self.cfg, model)

    def describe_pruning(self, model: str) -> str:
        return captions.describe_pruning(self.cfg["models"][model])

    def describe_spans(self, model: str) -> str:
        return captions.describe_spans(self.cfg["models"][model])

    def describe_family(self, family: str) -> str:
        return captions.describe_family(self.cfg, self.plan.seed_families()[family]["members"])

    def describe_demo_training(self) -> str:
        return captions.describe_demo_training(self.cfg, self.plan.models_with("demo"))

    # ------------------------------------------------------------------------------------------- resources

    def checkpoint_size_mb(self, wildcards) -> int:
        return job_settings.checkpoint_size_mb(self.checkpoint_dir(wildcards))

    def gpu_job_mem_mb(self, wildcards, attempt: int) -> int:
        return job_settings.gpu_job_mem_mb(self._model(wildcards), self.checkpoint_size_mb(wildcards), attempt)

    def gpu_job_runtime(self, minutes_per_gb: float):
        """The runtime resource (minutes) of a GPU job, as a function of the wildcards and the attempt."""
        return lambda wildcards, attempt: job_settings.gpu_job_minutes(
            minutes_per_gb, self.checkpoint_size_mb(wildcards), attempt)
