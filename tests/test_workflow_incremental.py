"""Incremental runs on a finished demo tree (Snakemake's own metadata, default rerun triggers).

Adding a checkpoint schedules exactly its jobs and what is computed from them; a deleted intermediate
table that the README lists as an output is rebuilt. Dry runs against the finished tree of `demo_run`
(tests/conftest.py), which they leave as it was (the test that moves a file does so on a copy).
"""

from __future__ import annotations

import os
import re
import shutil
from collections import Counter

import pytest
import yaml

from swapkl.figures.figure_registry import AGGREGATE as AGGREGATE_FILE, jobs as figure_jobs
from bad_inputs_doc import assert_listed
from workflow_runs import SMOKE_CONFIG, run_demo

pytestmark = pytest.mark.slow


def scheduled_jobs(output: str) -> list[tuple[str, str]]:
    """(rule, first output) of every job in a dry run's output."""
    jobs = []
    for block in re.split(r"\n(?=(?:local)?rule \w+:\n)", output):
        header = re.match(r"(?:local)?rule (\w+):\n", block)
        if header:
            out = re.search(r"^    output: ([^,\n]+)", block, re.M)
            jobs.append((header.group(1), out.group(1).strip() if out else ""))
    return jobs


def dry_run(tree, configfile=SMOKE_CONFIG) -> list[tuple[str, str]]:
    proc = run_demo(tree, configfile, extra=("--dry-run",))
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return scheduled_jobs(proc.stdout + proc.stderr)


def figures_of_table(tree, table_rules) -> Counter:
    """How many figures each rule drew from the aggregate table in the finished tree: the jobs that
    must run again when the table changes."""
    return Counter({rule: len(list((tree / "results" / "figures" / folder).rglob("*.png")))
                    for rule, folder in table_rules.items()})


def test_adding_a_checkpoint_schedules_exactly_its_jobs_and_what_aggregates_them(demo_run, tmp_path):
    cfg = yaml.safe_load(SMOKE_CONFIG.read_text())
    demo = cfg["models"]["pythia-demo"]
    new = next(f"step{s}" for s in demo["demo"]["save_steps"] if f"step{s}" not in demo["revisions"])
    demo["revisions"].append(new)  # a step the finished training run already saved: no retraining
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(cfg, sort_keys=False))  # the order of the models as in the file
    jobs = dry_run(demo_run, configfile)
    counts = Counter(rule for rule, _ in jobs)
    # the new checkpoint's probes, each once, and nothing else that touches a model: one job for the protocols
    # that change no weights (its first output: replacement's file), one per weight-changing protocol
    weight_protocols = demo.get("weight_protocols", [])
    probes = sorted((rule, out) for rule, out in jobs if rule in ("probe_checkpoint", "probe"))
    assert probes == sorted([("probe_checkpoint", f"results/probes/pythia-demo/{new}/replacement.parquet")]
                            + [("probe", f"results/probes/pythia-demo/{new}/{p}.parquet") for p in weight_protocols])
    # then the aggregate, and every figure drawn from a table it changes (read from the figure registry): the
    # existing ones once each, plus the new checkpoint's per-checkpoint figures of the aggregate
    changed = {AGGREGATE_FILE}
    # render_table: the HTML view of the aggregate (and of the relevance statistics, below)
    expected = Counter(rule for rule, _ in probes) + Counter({"aggregate_results": 1, "render_table": 1,
                                                              "all": 1, "summarise_scorecard": 1})
    if (demo_run / "results" / "relevance_stats.parquet").exists():  # the statistics use the table's BI
        expected += Counter({"summarise_relevance": 1, "render_table": 1})
        changed.add("results/relevance_stats.parquet")
    if (demo_run / "results" / "spans.parquet").exists():  # its reference lines come from the aggregate
        expected += Counter({"aggregate_spans": 1, "render_table": 1})
        changed.add("results/spans.parquet")
    readers = {rule: figs[0].folder for rule, figs in figure_jobs().items()
               if any(path in changed for fig in figs for path in fig.inputs.values())}
    assert {"plot_heatmaps", "plot_gap_trajectory", "plot_relevance_confusion"} <= set(readers)
    expected += figures_of_table(demo_run, readers)
    new_checkpoint = Counter({rule: 1 for rule, figs in figure_jobs().items() if rule in readers
                              and figs[0].targets in ("checkpoint", "deletion", "weights")
                              and (figs[0].targets != "weights" or weight_protocols)})
    assert set(new_checkpoint) >= {"plot_heatmaps", "plot_deletion_vs_bi"}
    expected += new_checkpoint
    # each model's answer page embeds its heatmaps, which the aggregate changes: every page is made again
    answers = sorted((demo_run / "results" / "answer").glob("*.html"))
    assert answers, "the smoke demo prunes, so it has answer pages"
    expected += Counter({"summarise_answer": len(answers)})
    assert counts == expected, sorted(jobs)


def test_a_deleted_probe_table_is_rebuilt(demo_run, tmp_path):
    # on a copy (file times kept): other tests, on other workers, read the shared tree meanwhile
    tree = tmp_path / "tree"
    shutil.copytree(demo_run, tree, symlinks=True)
    assert dry_run(tree) == []  # the copy is as finished as the tree
    probe = tree / "results" / "probes" / "llama-demo" / "step60" / "interchange.parquet"
    aside = probe.with_name("interchange.parquet.aside")
    probe.rename(aside)
    try:
        jobs = dry_run(tree)
    finally:
        aside.rename(probe)
    # the checkpoint's one job for the protocols that change no weights writes it again (its first output:
    # replacement's file)
    assert ("probe_checkpoint", "results/probes/llama-demo/step60/replacement.parquet") in jobs
    assert [rule for rule, _ in jobs if rule.startswith(("probe", "train_", "build_"))] == ["probe_checkpoint"]
    assert dry_run(tree) == []  # the tree is finished again


def test_changing_the_bootstrap_settings_reruns_no_gpu_job(demo_run, tmp_path):
    """probe.n_boot and probe.seed shape only the CIs, which the aggregates compute from the stored per-window
    sums: a change schedules the two aggregates and what is drawn from them, no probe, pruning or other job
    that loads a model."""
    cfg = yaml.safe_load(SMOKE_CONFIG.read_text())
    stats = cfg.setdefault("probe", {})
    stats["n_boot"] = stats.get("n_boot", 1000) + 7
    stats["seed"] = stats.get("seed", 0) + 1
    configfile = tmp_path / "config.yaml"
    configfile.write_text(yaml.safe_dump(cfg, sort_keys=False))
    counts = Counter(rule for rule, _ in dry_run(demo_run, configfile))
    expected = {"aggregate_results": 1, "all": 1}
    if (demo_run / "results" / "pruning.parquet").exists():
        expected["aggregate_pruning"] = 1
    assert {rule: counts[rule] for rule in expected} == expected, counts
    gpu = r"^\s+(\*\*engine_job\([^)]*)?gpu=(1|PARAMS\.job_gpus)\)?,?$"  # gpu=... alone or in the engine_job resources
    gpu_rules = {rule for rule, block in rule_blocks() if re.search(gpu, block, re.M)}
    # the parser finds them, in workflow/rules and in the study folders
    assert {"probe_checkpoint", "probe", "prune_layers", "heal_pruned_models", "score_relevance"} <= gpu_rules
    assert not gpu_rules & set(counts), counts
    # only statistics of the aggregates (their rules aggregate_*, summarise_*), figures drawn from them and the
    # HTML views of the changed tables (render_table)
    others = sorted(rule for rule in counts if rule not in ("all", "render_table")
                    and not rule.startswith(("aggregate_", "summarise_", "plot_")))
    assert others == [], others


def rule_blocks() -> list[tuple[str, str]]:
    """(rule name, its text) of every rule in workflow/rules and in the study folders' rule files (a `use rule ...
    as NAME with:` block included)."""
    import swapkl.studies  # noqa: F401  (the study folders register themselves)
    from swapkl.study import STUDIES

    found = []
    files = sorted((SMOKE_CONFIG.parents[1] / "workflow" / "rules").glob("*.smk"))
    for smk in files + [study.rule_file for study in STUDIES.entries()]:
        for block in re.split(r"\n(?=rule \w+:|use rule )", smk.read_text()):
            name = re.match(r"(?:rule (\w+):|use rule \w+ as (\w+) with:)", block)
            if name:
                found.append((name.group(1) or name.group(2), block))
    return found


def _replace_keeping_times(path, data: bytes) -> None:
    """``path`` given other content with its old access and modification times, as `cp -p` and `rsync -a` do."""
    st = path.stat()
    path.write_bytes(data)
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))


def test_content_replaced_with_its_old_time_runs_its_jobs_again(demo_run, tmp_path):
    """A probe text or a checkpoint file replaced by other content whose old modification time was restored:
    Snakemake's times alone say "Nothing to be done"; the inputs' content stamps (swapkl.config.input_stamps) run
    the jobs that read them again. On a copy, which itself changes nothing (issue 49, item 4)."""
    tree = tmp_path / "tree"
    shutil.copytree(demo_run, tree, symlinks=True)
    assert dry_run(tree) == []  # a copy has new inodes and change times, but the same content
    text = tree / "resources" / "demo" / "corpus" / "valid.txt"
    _replace_keeping_times(text, text.read_bytes().replace(b" the ", b" a ", 1))
    proc = run_demo(tree, SMOKE_CONFIG, extra=("--dry-run",))
    said = [line for line in (proc.stdout + proc.stderr).splitlines() if "its content changed" in line]
    assert len(said) == 1 and said[0].startswith("resources/demo/corpus/valid.txt: its content changed")
    assert_listed(said[0], input="resources/demo/corpus/valid.txt")
    probes = {out.split("/")[2] for rule, out in scheduled_jobs(proc.stdout + proc.stderr) if rule == "probe_checkpoint"}
    readers = {m for m, c in yaml.safe_load(SMOKE_CONFIG.read_text())["models"].items()
               if c.get("data", {}).get("text_file") == "resources/demo/corpus/valid.txt"}
    assert readers and probes == readers
    run_demo(tree, SMOKE_CONFIG, extra=("--touch",))  # the jobs as if run: the tree is finished again
    assert dry_run(tree) == []
    weights = sorted((tree / "resources" / "demo" / "models" / "llama-demo").rglob("model.safetensors"))[0]
    _replace_keeping_times(weights, weights.read_bytes()[:-1] + b"\0")
    jobs = dry_run(tree)
    assert {out.split("/")[2] for rule, out in jobs if rule == "probe_checkpoint"} == {"llama-demo"}
