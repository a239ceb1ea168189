# The rule files' wiring over swapkl.config, which validates the config, expands the seed families, says which
# models and revisions each stage runs for (PLAN, a StudyPlan), where their files live (layout) and what each
# job is given (PARAMS, a RuleParams). The rules call PLAN and PARAMS by name; no logic lives here.

import os
import re
import sys
from types import SimpleNamespace

from snakemake.exceptions import WorkflowError
from snakemake_interface_executor_plugins.settings import ExecMode
from snakemake.logging import logger

# The workflow's own package (pure modules only: Snakemake may run where torch is not installed).
sys.path.insert(0, os.path.join(workflow.basedir, "src"))

from swapkl.config import ConfigError
from swapkl.config.input_stamps import STAMP_DIR, refresh as refresh_input_stamps, stamp_path
from swapkl.config.hub_reachability import OFFLINE_DEMO, hub_downloads, hub_only, hub_unreachable, offline_lines
from swapkl.config.job_settings import text_files
from swapkl.layout import (DEMO_CORPUS_DIR, DEMO_CORPUS_FILES, DEMO_DIR, DEMO_LAST_WORD_FILE, DEMO_TOKENIZER_DIR,
                           covariate_file, probe_file, repr_file)
from swapkl.relevance.relevance_jobs import DEMO_TASKS
from swapkl.progress import follow_dag
from swapkl.hub.revision_names import REVISION_PATTERN as REVISION_REGEX
from swapkl.config.rule_params import RuleParams
from swapkl.config.study_plan import StudyPlan, checkpoint_protocols_with
from swapkl.config.targets import figure_instances as _figure_instances, final_outputs, report_sections, result_tables
from swapkl.figures.figure_registry import SECTIONS as REPORT_SECTIONS
from swapkl.probes.protocols import get_protocol
from swapkl.config.validation import invalid_config_message, validate_config
import swapkl.studies  # every study folder registers itself (swapkl.study.STUDIES)
from swapkl.studies.task_pruning import SPLIT_TASKS_DIR
from swapkl.study import STUDIES

try:  # every check of swapkl.config, each naming the key path of the value that cannot work
    # {family: {"varies": both|data|init, "members": {model: seed}}}; the members are plain models from here on
    SEED_FAMILIES = validate_config(
        config, schema_path=os.path.join(workflow.basedir, "workflow", "schemas", "config.schema.yaml"),
        rules_dir=os.path.join(workflow.basedir, "workflow", "rules"), configfiles=workflow.configfiles)
except ConfigError as err:
    raise WorkflowError(invalid_config_message(err)) from None
PLAN = StudyPlan(config, SEED_FAMILIES)
PARAMS = RuleParams(PLAN)
# the content stamps of the checkpoints and text files, before the DAG compares times (swapkl.config.input_stamps);
# by the invocation the user started, not again by each job's own process on a cluster node
STAMPED_INPUTS = {os.path.basename(stamp_path(path))[:-len(".json")]: path for path in PLAN.content_inputs()}
if workflow.exec_mode == ExecMode.DEFAULT:
    for changed_input in refresh_input_stamps(STAMPED_INPUTS.values()):
        logger.warning(f"{changed_input}: its content changed since the last run (whatever its modification time "
                       "says): the jobs that read it run again")


def workflow_script(name):
    """The path of workflow/scripts/``name``, for a rule file outside workflow/rules (a study folder's)."""
    return os.path.join(workflow.basedir, "workflow", "scripts", name)


def workflow_env(name):
    """The path of the conda environment envs/``name``, for a rule file outside workflow/rules."""
    return os.path.join(workflow.basedir, "envs", name)


def name_regex(names):
    """A wildcard constraint matching exactly `names` (never matching when empty)."""
    return "|".join(re.escape(name) for name in names) if names else "(?!)"


# --------------------------------------------------------------------------------------------------- hub access


def job_estimates(dag):
    """onstart: what the whole run's progress line (swapkl.progress.DagProgress) knows of each job to run, by its
    Snakemake id: its weight, its `runtime` resource (evaluated aside, not cached in the job: a job sized by a
    checkpoint still to be downloaded gets its own value when it runs; one whose runtime cannot be read yet weighs
    the median of the others; no weights when none can be read, and every job then weighs the same), its rule
    (the weights learn from the finished jobs of a rule) and its kind (`gpu` where it asks for one: a job that
    loads a model; else `cpu`)."""
    weights, kinds, rules = {}, {}, {}
    for job in dag.needrun_jobs():
        rules[job.jobid] = job.rule.name
        try:  # the line is a convenience: a run never fails for it
            resources = job.rule.expand_resources(job.wildcards_dict, job.input, job.attempt,
                                                  skip_evaluation={"tmpdir"})
        except Exception:
            resources = {}
        runtime = resources.get("runtime")
        weights[job.jobid] = float(runtime) if isinstance(runtime, (int, float)) and runtime > 0 else None
        kinds[job.jobid] = "gpu" if resources.get("gpu") else "cpu"
    known = sorted(w for w in weights.values() if w)
    return {"weights": {jobid: w or known[len(known) // 2] for jobid, w in weights.items()} if known else None,
            "rules": rules, "kinds": kinds}


def check_hub_access(dag):
    """onstart: when every enabled model comes from the hub and the hub is unreachable, nothing in the run
    can succeed, so stop before any job starts, one line per checkpoint to download."""
    scheduled = {(job.wildcards.model, job.wildcards.revision) for job in dag.needrun_jobs()
                 if job.rule.name == "download_checkpoint"}
    why = hub_unreachable() if scheduled and hub_only(PLAN.models, PLAN.enabled_models()) else None
    if why is None:
        return
    for model, revision in PLAN.checkpoints():
        if (model, revision) in scheduled:
            logger.error(f"{model}/{revision}: cannot download {PLAN.models[model]['source']}@{revision}: "
                         f"the model hub is unreachable ({why})")
    raise WorkflowError(f"No access to the model hub; run the offline demo instead: {OFFLINE_DEMO}")


def stamped_input(wildcards):
    """stamps.smk: the checkpoint or text file whose stamp is ``{key}``."""
    if wildcards.key not in STAMPED_INPUTS:
        raise WorkflowError(f"{STAMP_DIR}/{wildcards.key}.json is the stamp of no input of this study")
    return STAMPED_INPUTS[wildcards.key]


# --------------------------------------------------------------------------------------------------- targets


def get_final_outputs():
    """Every file the README lists as an output, intermediate tables included, so that a deleted one is
    rebuilt (swapkl.config.targets), and the HTML view of each results table (report.smk)."""
    outputs = final_outputs(PLAN)
    return outputs + table_views(outputs)


# ------------------------------------------------------------------------------------------------------ params

#: the bootstrap of every summary job (the probe section's resamples and seed)
BOOTSTRAP = PARAMS.bootstrap()


def per_checkpoint(path_of, pairs):
    """The file ``path_of(model, revision)`` of each checkpoint (the inputs of a job gathering them)."""
    return [path_of(model, revision) for model, revision in pairs]


def per_checkpoint_files(pairs, **paths_of):
    """Named inputs of a job gathering several files per checkpoint: ``{name: per_checkpoint(path_of, ...)}``."""
    return {name: per_checkpoint(path_of, pairs) for name, path_of in paths_of.items()}


def model_settings(*keys, section=None):
    """Params named like the model's config keys (of its ``section``, e.g. prune), read per job."""
    return {key: PARAMS.model_setting(key, section) for key in keys}


# --------------------------------------------------------------------------------------------------- resources


#: the resources of a job gathering tables, and of one summarising them with a bootstrap
TABLE_JOB = {"mem_mb": 2000, "runtime": 10}
SUMMARY_JOB = {"mem_mb": 4000, "runtime": 30}


def engine_job(minutes_per_gb, **gpu):
    """The resources of a job that loads the checkpoint: memory for it, and a runtime by its size."""
    return {**gpu, "mem_mb": PARAMS.gpu_job_mem_mb, "runtime": PARAMS.gpu_job_runtime(minutes_per_gb=minutes_per_gb)}


def trained_model_job(runtime=60, extra_mem_mb=0, **gpu):
    """The resources of a job that trains or probes a model trained here (the demo's, the PE ablation's)."""
    return {**gpu, "mem_mb": 4000 + extra_mem_mb, "runtime": runtime}


wildcard_constraints:
    model=name_regex(PLAN.enabled_models()),
    revision=REVISION_REGEX,


# ------------------------------------------------------------------------------- the helpers of the rule files
# The functions of the rule files live here, by the file that uses them (snakemake --lint wants no file to mix
# functions and rules).

# report.smk


#: the report category of each section this run fills
NUMBERED_SECTIONS = report_sections(PLAN)
#: the caption (workflow/report/) of each results table, by its name pattern; table_report() fills it
TABLE_CAPTIONS = {}


def section(key):
    """The report category of section ``key``: its number and title (a section this run does not fill, whose
    files are not in the report, has no number)."""
    return NUMBERED_SECTIONS.get(key, REPORT_SECTIONS[key])


def table_report(path, caption):
    """A results table (``results/<name>.parquet``, ``{model}`` for one per model): the report shows its HTML
    view with ``caption`` (workflow/report/); returns the path."""
    name = re.fullmatch(r"results/(.+)\.parquet", path).group(1)
    TABLE_CAPTIONS[re.escape(name).replace(re.escape("{model}"), "[^/]+")] = caption
    return path


def table_caption(table):
    """The text of the caption of results table ``table`` (the name between results/ and .parquet)."""
    found = [caption for pattern, caption in TABLE_CAPTIONS.items() if re.fullmatch(pattern, table)]
    if len(found) != 1:
        raise WorkflowError(f"results table {table}: {len(found)} captions (report.smk table_report)")
    with open(os.path.join(workflow.basedir, "workflow", "report", found[0])) as f:
        return f.read()


def results_tables(**stems):
    """Named outputs of a job that writes several results tables: ``{name: results/<stem>.parquet}``, each in
    the report (as its HTML view) with its caption ``<stem>_table.rst``."""
    return {name: table_report(f"results/{stem}.parquet", f"{stem}_table.rst") for name, stem in stems.items()}


def figure_instances(selection):
    """The wildcards of every instance of a figure the report gets (swapkl.config.targets)."""
    return _figure_instances(PLAN, selection)


def table_views(outputs):
    """results/tables/{name}.html of every results table among ``outputs``."""
    names = (re.fullmatch(r"results/(.+)\.parquet", str(path)) for path in outputs)
    return [f"results/tables/{m.group(1)}.html" for m in names
            if m and any(re.fullmatch(pattern, m.group(1)) for pattern in RESULT_TABLES)]


# probe.smk

#: the runtime of measuring the covariates, in minutes per GB of weights
COVARIATES_MINUTES_PER_GB = 4


def probe_files(protocols):
    """The named outputs of a probe job: each protocol's file of the checkpoint."""
    return {protocol: probe_file("{model}", "{revision}", protocol) for protocol in protocols}


def checkpoint_job(deletion, covariates):
    """The outputs, the model constraint and the runtime of the checkpoint job of the models with deletion and
    covariates on or off."""
    protocols = checkpoint_protocols_with(deletion)
    output = {**probe_files(protocols),
              **({"representation": repr_file("{model}", "{revision}")} if deletion else {}),
              **({"covariates": covariate_file("{model}", "{revision}")} if covariates else {})}
    return SimpleNamespace(output=output, model=name_regex(PLAN.checkpoint_models(deletion, covariates)),
                           runtime=probe_runtime(protocols, covariates))


def probe_runtime(protocols, covariates=False):
    """Runtime of a probe job measuring ``protocols`` (and the covariates): their minutes per GB, summed."""
    minutes = sum(get_protocol(p).minutes_per_gb for p in protocols) + covariates * COVARIATES_MINUTES_PER_GB
    return PARAMS.gpu_job_runtime(minutes_per_gb=minutes)


# scorecard.smk


def scorecard_inputs():
    inputs = {"aggregate": "results/swapkl.parquet"}
    if PLAN.stage_checkpoints("prune"):
        inputs.update(pruning="results/pruning.parquet", agreement="results/pruning_agreement.parquet")
    if PLAN.stage_checkpoints("relevance"):
        inputs["relevance_stats"] = "results/relevance_stats.parquet"
    if PLAN.stage_checkpoints("rope_counterfactual"):
        inputs["rope_counterfactual"] = "results/rope_counterfactual.parquet"
    if PLAN.stage_checkpoints("heal"):
        inputs["recovery"] = "results/recovery.parquet"
    if PLAN.stage_checkpoints("domain_slices"):
        inputs["domain_slices"] = "results/domain_slices.parquet"
    if PLAN.stage_checkpoints("downstream"):
        inputs["downstream"] = "results/downstream.parquet"
    if PLAN.stage_checkpoints("task_pruning"):
        inputs["seed003_tables"] = "results/seed003_tables.parquet"
    return inputs
