"""A study is one folder of swapkl.studies (swapkl.study.Study): the declarations reach the workflow, the planner,
the report and the docs.

tests/toy_study is a complete study in eight files (declaration, job, runner, rules, schema, its table's caption,
its figure's drawing and caption). Dropped into a copy of the package as the only change, it gets a config section
(with its defaults, refusing unknown keys), its rules in the dry-run DAG with the jobs its declaration says, its
table among the report's HTML views, its figure among the report's figures and on the command line, its row in
docs/studies.md's table, and its section's key reaches its runner through the rule's job.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import swapkl.studies  # noqa: F401  (the study folders register themselves)
from repo_copy import repo_copy
from swapkl.study import STUDIES, Stage, Study, studies_markdown, studies_of
from test_workflow_config import job_counts

REPO = Path(__file__).resolve().parents[1]
TOY = Path(__file__).with_name("toy_study")


def test_every_study_folder_is_declared_with_its_files():
    """Each subpackage of swapkl.studies registers one study whose rule file, schema and captions exist, and the
    rule file defines the rules the declaration counts."""
    folders = sorted(p.name for p in (REPO / "src" / "swapkl" / "studies").iterdir()
                     if (p / "__init__.py").exists())
    assert sorted(s.folder.name for s in STUDIES.entries()) == folders
    for study in STUDIES.entries():
        assert isinstance(study, Study) and study.rule_file.exists() and study.schema_file.exists()
        assert all(Path(study.caption(t)).exists() for t in study.tables), study.name
        text = study.rule_file.read_text()
        assert sorted(study.rules) == sorted(line[5:-1] for line in text.splitlines() if line.startswith("rule "))


def test_docs_list_every_study_as_declared():
    doc = (REPO / "docs" / "studies.md").read_text()
    assert studies_markdown() in doc, "docs/studies.md: paste swapkl.study.studies_markdown()'s table:\n" + \
        studies_markdown()


def _tree_with_toy(tmp_path: Path) -> Path:
    tree = repo_copy(tmp_path, "profiles", "config")
    shutil.copytree(TOY, tree / "src" / "swapkl" / "studies" / "toy_study",
                    ignore=shutil.ignore_patterns("__pycache__"))
    return tree


def _config(tree: Path, toy: dict | None) -> Path:
    cfg = yaml.safe_load((REPO / "config" / "demo_smoke.yaml").read_text())
    if toy is not None:
        cfg["models"]["pythia-demo"]["toy_study"] = toy
    path = tree / ("toy.yaml" if toy is not None else "plain.yaml")
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return path


def _dry_run(tree: Path, configfile: Path, env: dict) -> str:
    proc = subprocess.run([sys.executable, "-m", "snakemake", "--nolock", "--dry-run", "--forceall", "--cores", "1",
                           "--replace-workflow-config", "--configfile", str(configfile)], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc.stdout + proc.stderr


#: run in the tree: the toy's section as validated, its rule job's settings, the job run on a stand-in checkpoint,
#: a bad key's refusal and docs/studies.md's table
PROBE_TREE = """
import copy, json, sys, pandas as pd
from types import SimpleNamespace
from pathlib import Path
import yaml
from swapkl.config import ConfigError
from swapkl.config.rule_jobs import build_job, job_settings, run_rule_job
from swapkl.config.rule_params import RuleParams
from swapkl.config.study_plan import StudyPlan
from swapkl.config.validation import validate_config
from swapkl.figures.figure_registry import figure
from swapkl.study import studies_markdown

def validated(cfg):
    cfg = copy.deepcopy(cfg)
    families = validate_config(cfg, schema_path="workflow/schemas/config.schema.yaml", rules_dir="workflow/rules",
                               base_dir=".")
    return cfg, families

cfg = yaml.safe_load(open(sys.argv[1]))
done, families = validated(cfg)
params = RuleParams(StudyPlan(done, families))
wildcards = SimpleNamespace(model="pythia-demo", revision="step60")
settings = job_settings("toy_study", params, wildcards)
ckpt = Path(sys.argv[2])
ckpt.mkdir()
(ckpt / "config.json").write_text(json.dumps({"num_hidden_layers": 6}))
settings["model"] = str(ckpt)
out = ckpt.parent / "toy.parquet"
run_rule_job(settings, {"out": str(out)}, [str(out)])
unset = copy.deepcopy(cfg)
del unset["models"]["pythia-demo"]["toy_study"]["scale"]
default_scale = validated(unset)[0]["models"]["pythia-demo"]["toy_study"]["scale"]
bad = copy.deepcopy(cfg)
bad["models"]["pythia-demo"]["toy_study"]["bogus"] = 1
try:
    validated(bad)
    refusal = None
except ConfigError as err:
    refusal = str(err)
print(json.dumps({"section": done["models"]["pythia-demo"]["toy_study"], "scale": settings["scale"],
                  "checkpoints": params.plan.stage_checkpoints("toy_study"),
                  "score": float(pd.read_parquet(out)["score"].iloc[0]), "refusal": refusal,
                  "default_scale": default_scale, "docs": studies_markdown(),
                  "figure_caption": figure("toy_score").caption_path("workflow/report")}))
"""


def test_a_toy_study_folder_reaches_the_schema_the_dag_the_report_and_the_docs(tmp_path):
    tree = _tree_with_toy(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    toy = _config(tree, {"enabled": True, "revisions": ["step4", "step60"], "scale": 2.5})

    proc = subprocess.run([sys.executable, "-c", PROBE_TREE, str(toy), str(tmp_path / "ckpt")], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    seen = json.loads(proc.stdout)
    # the schema: the section with its defaults, an unknown key refused by its path
    assert seen["section"] == {"enabled": True, "revisions": ["step4", "step60"], "scale": 2.5}
    assert seen["refusal"].startswith("models.pythia-demo.toy_study: Additional properties are not allowed ('bogus'")
    assert seen["default_scale"] == 1.0  # ToyJob.scale's, which the declaration's `defaults` gives the schema
    # the stage: its revisions from the section, the section's key in the job, which the runner reads
    assert seen["checkpoints"] == [["pythia-demo", "step4"], ["pythia-demo", "step60"]]
    assert seen["scale"] == 2.5 and seen["score"] == 2.5 * 6
    # the docs: a row of docs/studies.md's table
    assert "| `toy_study` | a toy: one number per checkpoint" in seen["docs"]
    assert ("8 files: `__init__.py`, `figures.py`, `jobs.py`, `rules.smk`, `run.py`, `schema.yaml`, `toy_score.rst`, "
            "`toy_table.rst`") in seen["docs"]
    # the figure: its caption is the folder's, and the command line draws it from the job's table
    assert seen["figure_caption"] == str(tree / "src" / "swapkl" / "studies" / "toy_study" / "toy_score.rst")
    drawn = subprocess.run([sys.executable, "-m", "swapkl", "figures", "toy-score", "--scores",
                            str(tmp_path / "toy.parquet"), "--model", "pythia-demo", "--revision", "step60",
                            "--out", str(tmp_path / "toy_score")], cwd=tree, env=env,
                           capture_output=True, text=True, timeout=300)
    assert drawn.returncode == 0, drawn.stderr[-3000:]
    assert (tmp_path / "toy_score.png").stat().st_size > 0 and (tmp_path / "toy_score.pdf").stat().st_size > 0

    # the DAG: the jobs the declaration says, and the table's HTML view in the report; nothing else changes
    with_toy = _dry_run(tree, toy, env)
    plain = job_counts(_dry_run(tree, _config(tree, None), env))
    counts = job_counts(with_toy)
    assert counts - plain == {"score_toy": 2, "aggregate_toy": 1, "render_table": 1, "plot_toy_score": 2}
    assert plain - counts == {}
    assert "results/tables/toy_scores.html" in with_toy
    assert "results/figures/toy_score/pythia-demo/step4.png" in with_toy  # in the report's targets (rule all)
    assert "results/toy_study/pythia-demo/step60.parquet" in with_toy


def test_without_the_toy_the_package_has_no_toy_study():
    assert "toy_study" not in STUDIES


def test_every_study_folders_revisions_must_be_the_models():
    """A study kept in a folder runs on revisions of its model: a section that names another revision is refused
    with the key path named, before any job is planned (each study's section, by the registry)."""
    from direct_config import refusal

    for study in studies_of("model"):
        if study.follows is not None:
            continue  # a study whose checkpoints follow another stage's has no list of its own (below)
        if "const" in yaml.safe_load(study.schema_file.read_text())["properties"]["revisions"]:
            continue  # a study that runs at one choice only (the scale sweep: the final checkpoint), below
        cfg = {"models": {"m": {"source": "org/model", "revisions": ["step1", "step2"],
                                study.name: {"enabled": True, "revisions": ["step1", "step3"]}}}}
        assert refusal(cfg) == (f"Invalid config: models.m.{study.name}.revisions: ['step3'] not in "
                                "models.m.revisions"), study.name
        for revisions in (["step2"], "all", "last"):
            cfg["models"]["m"][study.name]["revisions"] = revisions
            message = refusal(cfg)  # accepted, or refused by the study's own checks (task pruning: no task named)
            assert message is None or ".revisions" not in message, (study.name, message)
    cfg = {"models": {"m": {"source": "org/model", "revisions": ["step1", "step2"],
                            "scaling": {"enabled": True, "revisions": "all"}}}}
    assert refusal(cfg) == "Invalid config: models.m.scaling.revisions: 'last' was expected"
    cfg["models"]["m"]["scaling"]["revisions"] = "last"
    assert refusal(cfg) is None


def test_last_is_the_final_checkpoint_of_every_studys_model():
    """`revisions: last` runs a study at the model's final checkpoint: the latest stepN when every revision is one
    (whatever their order in the config), else the last listed; `all` at every revision, in the config's order."""
    from direct_config import validated

    from swapkl.config.study_plan import StudyPlan

    for revisions, last in ((["step100", "step2000", "step30"], "step2000"), (["main", "step5"], "step5"),
                            (["step5", "main"], "main")):
        plan = StudyPlan(*validated({"models": {"m": {"source": "org/model", "revisions": revisions}}}))
        for study in studies_of("model"):
            if study.follows is not None:  # no list of its own (below)
                continue
            plan.models["m"][study.name].update(enabled=True, revisions="last")
            assert plan.stage_revisions(study.name, "m") == [last], (study.name, revisions)
            plan.models["m"][study.name]["revisions"] = "all"
            assert plan.stage_revisions(study.name, "m") == revisions, study.name


def test_healing_runs_on_the_exported_pruned_checkpoints():
    """Healing's checkpoints follow the pruning's (`follows`): those pruned where the guides' choices are exported,
    none where its section is off; its section has no `revisions` of its own, and healing without exports is
    refused, each naming the key."""
    from direct_config import refusal, validated

    from swapkl.config.study_plan import StudyPlan

    assert STUDIES["heal"].follows is not None
    model = {"source": "org/model", "revisions": ["step1", "step2", "step3"],
             "prune": {"enabled": True, "revisions": ["step3", "step1"], "export_guides": ["interchange"]},
             "heal": {"enabled": True}}
    plan = StudyPlan(*validated({"models": {"m": model}}))
    assert plan.stage_revisions("heal", "m") == ["step1", "step3"] == plan.stage_revisions("prune", "m")
    assert plan.stage_checkpoints("heal") == [("m", "step1"), ("m", "step3")]
    plan.models["m"]["heal"]["enabled"] = False
    assert plan.stage_revisions("heal", "m") == []
    no_exports = {**model, "prune": {**model["prune"], "export_guides": []}}
    assert "models.m.heal: healing starts from the exported pruned models" in refusal({"models": {"m": no_exports}})
    listed = {**model, "heal": {"enabled": True, "revisions": ["step1"]}}
    message = refusal({"models": {"m": listed}})
    assert "models.m.heal" in message and "revisions" in message, message


def test_every_study_folder_holds_at_most_eight_files():
    """A study is one folder of at most eight files (declaration, job, run, statistics, rules, schema, captions):
    a study that needs more has code that belongs in a shared layer."""
    kept = (".py", ".smk", ".yaml", ".rst")
    sizes = {study.name: len([p for p in study.folder.iterdir() if p.is_file() and p.suffix in kept])
             for study in STUDIES.entries()}
    assert len(sizes) >= 6 and all(n <= 8 for n in sizes.values()), sizes


def test_a_yes_or_no_in_place_of_a_studys_section_names_the_form_to_write():
    """`convergence: true` (its form before it was a study in a folder) is refused with the mapping to write."""
    from direct_config import refusal

    for study in studies_of("model"):
        cfg = {"models": {"m": {"source": "org/model", "revisions": ["main"], study.name: True}}}
        assert refusal(cfg) == (f"Invalid config: models.m.{study.name}: a study's section is a mapping; write "
                                f"`{study.name}: {{enabled: true}}`"), study.name
    for study in studies_of("run"):  # a study of the whole run: its section is at the config's top level
        cfg = {"models": {"m": {"source": "org/model", "revisions": ["main"]}}, study.name: True}
        assert refusal(cfg) == (f"Invalid config: {study.name}: a study's section is a mapping; write "
                                f"`{study.name}: {{enabled: true}}`"), study.name
        cfg = {"models": {"m": {"source": "org/model", "revisions": ["main"], study.name: {"enabled": True}}}}
        assert refusal(cfg) == (f"Invalid config: models.m: Additional properties are not allowed "
                                f"('{study.name}' was unexpected)"), study.name


def test_a_study_of_the_whole_run_has_its_top_level_section_units_and_conditional_rules():
    """The position-encoding ablation (a study of the whole run): its section is the config's top level, filled
    with its folder schema's defaults; its units are its trained models, each with its probe file; a rule of
    ``only_with`` runs only where that key is set; off, it runs nothing."""
    from direct_config import validated

    from swapkl.config.study_plan import StudyPlan
    from swapkl.config.targets import final_outputs

    study = STUDIES["pe_ablation"]
    base = {"models": {"m": {"demo": {"arch": "llama"}, "revisions": ["step10"]}}}
    cfg, families = validated({**base, "pe_ablation": {"enabled": True, "encodings": ["rope", "alibi"],
                                                       "depths": [4, 6]}})
    assert cfg["pe_ablation"]["max_distance"] == 3 and cfg["snowball"] == {
        "enabled": False, "task": "demo_next_word", "eps": 0.01, "max_docs": None, "seed": 0}
    plan = StudyPlan(cfg, families)
    labels = ["pe-rope-4L", "pe-alibi-4L", "pe-rope-6L", "pe-alibi-6L"]
    assert plan.study_units("pe_ablation") == [{"pe_model": label} for label in labels]
    assert study.job_counts(plan.study_units("pe_ablation"), cfg) == {
        "prepare_pe_text": 0, "train_pe_model": 4, "probe_pe_model": 4, "summarise_pe_ablation": 1}
    outputs = final_outputs(plan)
    assert {"results/pe_ablation.parquet", *(f"results/pe_ablation/probes/{label}.parquet" for label in labels),
            "results/figures/pe_ablation.png"} <= set(outputs)
    assert "results/snowball.parquet" not in outputs and plan.study_units("snowball") == []
    cfg["pe_ablation"]["train_text"] = {"text_file": "t.txt", "tokenizer": "gpt2", "max_tokens": 10}
    assert study.job_counts(plan.study_units("pe_ablation"), cfg)["prepare_pe_text"] == 1
    cfg["pe_ablation"]["enabled"] = False
    assert plan.study_units("pe_ablation") == [] and study.job_counts([], cfg) == dict.fromkeys(study.rules, 0)
    assert not any("pe_ablation" in path for path in final_outputs(plan))


def test_a_models_study_rule_may_run_only_where_its_section_sets_a_key():
    """Pruning's export rule (``only_with``) runs on the pruned checkpoints of the models whose section names guides
    to export, and nowhere when none does; its other rules run on every pruned checkpoint."""
    from direct_config import validated

    from swapkl.config.study_plan import StudyPlan

    def model(export):
        return {"source": "org/model", "revisions": ["step1", "step2"],
                "prune": {"enabled": True, "export_guides": export}}

    plan = StudyPlan(*validated({"models": {"m": model(["interchange"]), "n": model([])}}))
    pruned = plan.stage_checkpoints("prune")
    assert len(pruned) == 4
    assert plan.export_checkpoints() == [("m", "step1"), ("m", "step2")]
    assert STUDIES["prune"].job_counts(pruned, plan.cfg) == {"prune_layers": 4, "aggregate_pruning": 1,
                                                              "export_pruned_models": 2}
    plan.models["m"]["prune"]["export_guides"] = []
    assert plan.export_checkpoints() == [] and STUDIES["prune"].job_counts(pruned, plan.cfg)["export_pruned_models"] == 0


def test_a_study_declaration_of_the_wrong_shape_is_refused():
    """A study of the whole run draws its figures once and runs no stage on a model entry's checkpoint; a model's
    study has no units; an unknown scope is refused."""
    here = Path(__file__).parent
    with pytest.raises(ValueError, match="scope 'global'"):
        Study("s", here, None, "x", scope="global")
    with pytest.raises(ValueError, match="draws its figures once"):
        Study("s", here, None, "x", scope="run", figures="checkpoint")
    with pytest.raises(ValueError, match="must run on no model entry's checkpoint"):
        Study("s", here, Stage("s", dict, "m:f", "s"), "x", scope="run", figures="once")
    with pytest.raises(ValueError, match="only_with names rules it has not"):
        Study("s", here, None, "x", scope="run", figures="once", only_with={"r": "k"})
    with pytest.raises(ValueError, match="only_with names rules it has not"):
        Study("s", here, None, "x", only_with={"r": "k"})
    with pytest.raises(ValueError, match="belong to a study of the whole run"):
        Study("s", here, None, "x", units=lambda cfg: [])
