"""The bad inputs that the shared safety checks refuse (docs/bad_inputs.md, "Checks shared by every command").

Each case runs ``swapkl.cli.main`` in-process: one ``swapkl: error:`` line, exit code 2, nothing in the
case's folder written, changed or deleted. The checks are the shared ones: the pre-flight path check of
:mod:`swapkl.commands.paths`, the opener :func:`swapkl.tables.file_checks.open_input`, the table-to-model check
:func:`swapkl.tables.provenance.require_made_from`, the output locks of :mod:`swapkl.tables.locks`.
"""

from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from swapkl import cli
from swapkl.tables import locks
from swapkl.tables import provenance
from swapkl.data.data_spec import DataSpec
from swapkl.tables.parquet_io import write_parquet
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.tables.schemas import PRUNING_SCHEMA
from swapkl.relevance.tasks import write_task
from direct_config import refusal_of_file
from test_bad_inputs import N_LAYERS, PARAGRAPH, copy_model, env, error_lines, placeholder, snapshot  # noqa: F401
from test_perplexity import char_tokenizer
from tiny_models import tiny_model

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def tables(env, tmp_path_factory):
    """Probe and representation files of the good model, and a representation file of another model."""
    root = tmp_path_factory.mktemp("tables")
    other = root / "other-model"
    tiny_model("gpt_neox", n_layers=N_LAYERS, seed=7).save_pretrained(other)
    char_tokenizer().save_pretrained(other)
    run_probe(ProbeJob(model=env.model, out=str(root / "probe.parquet"), data=DataSpec(tokens=env.tokens),
                       repr_out=str(root / "repr.parquet")))
    run_probe(ProbeJob(model=str(other), out=str(root / "other-probe.parquet"), data=DataSpec(tokens=env.tokens),
                       repr_out=str(root / "other-repr.parquet")))
    return root


def _prune(env, d, probe, *extra):
    return ["prune", "--model", env.model, "--probe", str(probe), "--budgets", "1", "--n-random", "1",
            "--eval-text-file", env.text, "--eval-window", "32", "--eval-stride", "16",
            "--calib-tokens", env.tokens, *extra, "--out", str(d / "pruning.parquet")]


def _task(d, name="t"):
    return write_task(str(d / "tasks"), name, [{"query": "a b", "choices": ["c", "d"], "gold": 0}] * 4)


# ------------------------------------------------------------------------------------------------- cases


def case_relevance_out_is_pruning(env, tables, d):
    p = placeholder(d / "pruning.parquet")
    return ["relevance", "--model", env.model, "--tasks", _task(d), "--pruning", p, "--out", p], {"p": p}


def case_relevance_stats_out_is_aggregate(env, tables, d):
    rel, agg = placeholder(d / "relevance.parquet"), placeholder(d / "swapkl.parquet")
    return ["relevance-stats", "--input", rel, "--aggregate", agg, "--out", agg], {"agg": agg}


def case_aggregate_relevance_out_is_a_hard_link(env, tables, d):
    inp = placeholder(d / "relevance.parquet")
    link = d / "combined.parquet"
    os.link(inp, link)
    return ["aggregate-relevance", "--inputs", inp, "--out", str(link)], {"link": link, "inp": inp}


def case_export_out_inside_the_model(env, tables, d):
    model = copy_model(env, d / "model")
    return ["export", "--model", str(model), "--remove", "1", "--out", str(model / "pruned")], {"model": model}


def case_empty_out(env, tables, d):
    return ["probe", "--model", env.model, "--tokens", env.tokens, "--out", ""], {}


def case_task_yaml_fifo(env, tables, d):
    fifo = d / "task.yaml"
    os.mkfifo(fifo)
    return ["relevance", "--model", env.model, "--tasks", str(fifo), "--out", str(d / "r.parquet")], {"fifo": fifo}


def case_task_data_fifo(env, tables, d):
    yaml_path = _task(d, "fifo_task")
    data = d / "tasks" / "fifo_task.jsonl"
    data.unlink()
    os.mkfifo(data)
    return ["relevance", "--model", env.model, "--tasks", yaml_path, "--out", str(d / "r.parquet")], {"fifo": data}


def case_npz_tokens(env, tables, d):
    npz = d / "tokens.npz"
    np.savez(npz, tokens=np.load(env.tokens))
    return ["probe", "--model", env.model, "--tokens", str(npz), "--out", str(d / "o.parquet")], {"npz": npz}


def case_not_safetensors(env, tables, d):
    model = copy_model(env, d / "model")
    weights = model / "model.safetensors"
    weights.write_text("these are my notes, not weights\n" * 40)
    argv = ["probe", "--model", str(model), "--tokens", env.tokens, "--out", str(d / "o.parquet")]
    return argv, {"weights": weights}


def case_merge_of_a_removed_block(env, tables, d):
    return ["export", "--model", env.model, "--remove", "1,2", "--merge", "1", "--out", str(d / "pruned")], {}


def case_repr_of_another_model(env, tables, d):
    rep = tables / "other-repr.parquet"
    prov = provenance.read(str(rep))
    ours = provenance.read(str(tables / "probe.parquet"))["weights_sha256"]
    return _prune(env, d, tables / "probe.parquet", "--repr", str(rep)), {
        "repr": rep, "model": env.model, "held": f"{prov['model']}@{prov['revision_label']}",
        "theirs": prov["weights_sha256"][:12], "ours": ours[:12]}


def case_probe_of_another_model(env, tables, d):
    probe = tables / "other-probe.parquet"
    prov = provenance.read(str(probe))
    ours = provenance.read(str(tables / "probe.parquet"))["weights_sha256"]
    return _prune(env, d, probe), {"probe": probe, "model": env.model, "held": f"{prov['model']}@{prov['revision_label']}",
                                   "theirs": prov["weights_sha256"][:12], "ours": ours[:12]}


def case_repr_with_more_layers(env, tables, d):
    src = tables / "repr.parquet"
    t = pq.read_table(src)
    t = t.set_column(t.schema.get_field_index("n_layers"), "n_layers", pa.array([6] * t.num_rows, pa.int64()))
    rep = d / "repr6.parquet"
    write_parquet(t, str(rep), provenance.read(str(src)))
    return _prune(env, d, tables / "probe.parquet", "--repr", str(rep)), {"repr": rep, "model": env.model}


def case_aggregated_pruning_of_another_model(env, tables, d):
    agg = d / "pruning.parquet"
    rows = [dict(model="other", revision="step1", n_layers=N_LAYERS, guide="bi", budget=1, removed_layers=[2],
                 feasible=True)]
    write_parquet(pa.Table.from_pylist(rows, schema=PRUNING_SCHEMA), str(agg),
                  {"checkpoints": [{"model": "other", "revision": "step1", "weights_sha256": "ab" * 32}]})
    ours = provenance.read(str(tables / "probe.parquet"))["weights_sha256"]
    argv = ["relevance", "--model", env.model, "--tasks", _task(d), "--pruning", str(agg),
            "--out", str(d / "r.parquet")]
    return argv, {"agg": agg, "model": env.model, "ours": ours[:12]}


def _calibration_like_eval(env, tables, d, make):
    """prune with calibration text that ``make(eval_text, path)`` made from the evaluation text."""
    path = d / "calibration.txt"
    make(env.text, path)
    argv = _prune(env, d, tables / "probe.parquet")
    argv[argv.index("--calib-tokens"):argv.index("--calib-tokens") + 2] = ["--calib-text-file", str(path)]
    return argv, {"copy": path, "eval": env.text}


def case_calibration_text_is_a_copy(env, tables, d):
    return _calibration_like_eval(env, tables, d, shutil.copy)


def case_calibration_text_is_a_hard_link(env, tables, d):
    return _calibration_like_eval(env, tables, d, os.link)


def case_out_held_by_another_run(env, tables, d):
    out = d / "o.parquet"
    return ["probe", "--model", env.model, "--tokens", env.tokens, "--out", str(out)], {"out": out, "pid": os.getpid()}


NEVER = "; an output never replaces an input"
CASES = {
    "`relevance --out` names its `--pruning` table": (
        case_relevance_out_is_pruning, "--out '{p}' is the input --pruning '{p}'" + NEVER),
    "`relevance-stats --out` names its `--aggregate`": (
        case_relevance_stats_out_is_aggregate, "--out '{agg}' is the input --aggregate '{agg}'" + NEVER),
    "`aggregate-relevance --out` is a hard link of an input": (
        case_aggregate_relevance_out_is_a_hard_link, "--out '{link}' is the input --inputs '{inp}'" + NEVER),
    "`export --out` inside the exported model's folder": (
        case_export_out_inside_the_model,
        "--out '{model}/pruned' lies inside the input --model '{model}'; an output never writes into an input"),
    "`--out ''`": (case_empty_out, "--out is an empty path; give a file"),
    "task YAML that is a FIFO": (case_task_yaml_fifo, "task file '{fifo}' is a FIFO, not a regular file"),
    "JSONL file named by a task YAML is a FIFO": (
        case_task_data_fifo, "data file of task 'fifo_task' '{fifo}' is a FIFO, not a regular file"),
    "`.npz` archive as `--tokens`": (
        case_npz_tokens, "token file '{npz}' is a .npz archive; expected .npy (one integer array saved with numpy.save)"),
    "weight file that is not safetensors": (case_not_safetensors, "weight file '{weights}' is not a safetensors file"),
    "`export --merge` of a block that `--remove` removes": (
        case_merge_of_a_removed_block,
        "--merge 1 names block 1, which --remove removes; a merged block is kept (as the average of blocks 1 and "
        "2) and block 2 is removed"),
    "`prune --repr` made from another model": (
        case_repr_of_another_model,
        "representation file '{repr}' was made from other weights than '{model}': it holds {held} (weights sha256 "
        "{theirs}...), the model's weights have sha256 {ours}...; give the representation file of this checkpoint"),
    "`prune --probe` made from another model": (
        case_probe_of_another_model,
        "probe file '{probe}' was made from other weights than '{model}': it holds {held} (weights sha256 "
        "{theirs}...), the model's weights have sha256 {ours}...; give the probe file of this checkpoint"),
    "`prune --repr` with more layers than the model": (
        case_repr_with_more_layers, "representation file '{repr}' describes models of [6] blocks, but '{model}' has 4"),
    "`relevance --pruning` with an aggregated table of another model": (
        case_aggregated_pruning_of_another_model,
        "pruning table '{agg}' was made from other weights than '{model}': it holds other@step1 (weights sha256 "
        "abababababab...), the model's weights have sha256 {ours}...; give the pruning table of this checkpoint"),
    "calibration text that is a copy of the evaluation text": (
        case_calibration_text_is_a_copy,
        "the calibration windows (text_file:{copy}) come from the evaluation text (text_file:{eval}); use a "
        "disjoint split"),
    "calibration text that is a hard link of the evaluation text": (
        case_calibration_text_is_a_hard_link,
        "the calibration windows (text_file:{copy}) come from the evaluation text (text_file:{eval}); use a "
        "disjoint split"),
    "`--out` that another swapkl run is writing": (
        case_out_held_by_another_run,
        "--out '{out}' is in use by another swapkl run (pid {pid}); wait for it to finish or give another path"),
}


@pytest.mark.parametrize("name", list(CASES))
def test_refused_in_one_line(name, env, tables, tmp_path, capsys):
    case, template = CASES[name]
    argv, values = case(env, tables, tmp_path)
    before = snapshot(tmp_path)
    held = [("--out", argv[argv.index("--out") + 1])] if case is case_out_held_by_another_run else []
    capsys.readouterr()
    with locks.held(held):  # the first run, in this process: the lock is the kernel's, per open file
        code = cli.main([str(a) for a in argv])
    err = capsys.readouterr().err
    assert code == 2
    assert error_lines(err) == [template.format(**{k: str(v) for k, v in values.items()})]
    assert "Traceback" not in err
    assert snapshot(tmp_path) == before


def test_a_failed_repr_out_leaves_no_out(env, tmp_path, capsys, monkeypatch):
    """Disk full while writing the second of --out and --repr-out: neither is left behind."""
    from swapkl.tables import parquet_io

    real, calls = parquet_io.pq.write_table, []

    def second_fails(table, where, **kw):
        calls.append(where)
        if len(calls) == 2:
            raise OSError(errno.ENOSPC, "No space left on device")
        return real(table, where, **kw)

    monkeypatch.setattr(parquet_io.pq, "write_table", second_fails)
    out, rep = tmp_path / "o.parquet", tmp_path / "r.parquet"
    code = cli.main(["probe", "--model", env.model, "--tokens", env.tokens, "--repr-out", str(rep), "--out", str(out)])
    assert code == 2 and error_lines(capsys.readouterr().err) == [f"cannot write '{rep}': disk full"]
    assert len(calls) == 2 and sorted(os.listdir(tmp_path)) == []


def test_export_disk_full_is_one_line(env, tmp_path, capsys, monkeypatch):
    from swapkl import export

    def full(state, folder):
        (Path(folder) / "model.safetensors").write_bytes(b"part")
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(export, "_write_weights", full)
    out = tmp_path / "pruned"
    code = cli.main(["export", "--model", env.model, "--remove", "1", "--device", "cpu", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 2 and error_lines(err) == [f"cannot write '{out}': disk full"] and "Traceback" not in err
    assert os.listdir(tmp_path) == []  # no --out, no staging folder


def test_an_aggregate_keeps_only_the_rows_of_the_scored_checkpoint(tmp_path):
    """An aggregated pruning table of several checkpoints applies to a model through that model's rows only."""
    from swapkl.relevance.scored_models import pruned_sets_from_table

    rows = [dict(model=m, revision="final", n_layers=5, guide="bi", budget=1, removed_layers=[k], feasible=True)
            for m, k in (("a", 1), ("b", 3))]
    path = tmp_path / "agg.parquet"
    write_parquet(pa.Table.from_pylist(rows, schema=PRUNING_SCHEMA), str(path), {"checkpoints": [
        {"model": "a", "revision": "final", "weights_sha256": "aa" * 32},
        {"model": "b", "revision": "final", "weights_sha256": "bb" * 32}]})
    assert [s.removed for s in pruned_sets_from_table(str(path), n_layers=5, weights_sha256="bb" * 32)] == [(3,)]
    assert [s.removed for s in pruned_sets_from_table(str(path), n_layers=5, weights_sha256="aa" * 32)] == [(1,)]


def test_aggregates_carry_every_checkpoints_weights():
    """The provenance of an aggregate of aggregates still names every checkpoint and its weights."""
    a = {"model": "m", "revision_label": "step1", "weights_sha256": "11" * 32}
    b = {"model": "m", "revision_label": "step2", "weights_sha256": "22" * 32}
    inner = {"checkpoints": provenance.checkpoints([a, b])}
    got = provenance.checkpoints([inner, {"model": "n", "revision_label": "main", "weights_sha256": "33" * 32}])
    assert [(c["model"], c["revision"], c["weights_sha256"][:2]) for c in got] == [
        ("m", "step1", "11"), ("m", "step2", "22"), ("n", "main", "33")]


CONFIG_REVISION_CLASH = (
    "Invalid config: models.m.revisions.1: revision 'plot_gap_trajectory.log' would share a path with the "
    "workflow's own file logs/m/plot_gap_trajectory.log; choose another revision name")


def test_revision_named_like_a_per_model_file_is_refused(tmp_path):
    """A revision is a folder beside the per-model files (logs/m/step0/ beside logs/m/plot_gap_trajectory.log)."""
    config = tmp_path / "config.yaml"
    config.write_text(f"models:\n  m:\n    local: {tmp_path / 'checkpoints'}\n"
                      "    revisions: [step0, plot_gap_trajectory.log]\n")
    assert refusal_of_file(config, base_dir=tmp_path) == CONFIG_REVISION_CLASH


def test_catalogue_lists_every_case():
    doc = (REPO / "docs" / "bad_inputs.md").read_text()
    section = doc[doc.index("## Checks shared by every command"):]
    messages = [t for _, t in CASES.values()] + [CONFIG_REVISION_CLASH]
    missing = [t for t in messages if "`" + t.replace("|", "\\|") + "`" not in section]
    assert not missing
    for name in CASES:
        assert f"| {name} |" in section


@pytest.mark.parametrize("fault,reason", [("access", "permission denied"), ("statvfs", "read-only file system")])
def test_an_unwritable_results_folder_is_refused_before_the_run(env, tmp_path, capsys, monkeypatch, fault, reason):
    """Root writes anywhere, so the folder's refusal is injected where the shared check asks the system."""
    from swapkl.commands import paths

    folder = tmp_path / "results"
    folder.mkdir()
    if fault == "access":
        monkeypatch.setattr(paths.os, "access", lambda p, mode: os.path.realpath(p) != str(folder))
    else:
        real = os.statvfs
        monkeypatch.setattr(paths.os, "statvfs", lambda p: type("V", (), {"f_flag": os.ST_RDONLY})()
                            if os.path.realpath(p) == str(folder) else real(p))
    code = cli.main(["probe", "--model", env.model, "--tokens", env.tokens, "--out", str(folder / "sub" / "o.parquet")])
    assert code == 2
    assert error_lines(capsys.readouterr().err) == [f"cannot write to folder '{folder / 'sub'}': {reason}"]
    assert os.listdir(folder) == []
