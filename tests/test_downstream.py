"""Downstream benchmarks (swapkl.relevance.downstream) against lm-evaluation-harness, question by question.

A tiny Llama fitted to a few sentences (so that LAMBADA-style last words are sometimes predicted greedily) is
scored on two multiple-choice task files and on a last-word task, three ways at once: the base model, the
pruned sets of a pruning table (engine variants, never built) and healed checkpoints (a control healed from
the base, and a heal of an exported pruned model run as ``swapkl heal`` would). The reference is lm-eval's
``HFLM`` on each model materialised on disk (``swapkl export`` for the pruned sets, the healed folders as
written): per question, ``acc`` and ``acc_norm`` of the multiple-choice tasks, and the greedy match and
log-likelihood of the last-word task (``lambada_openai``'s own split and scoring), must agree; the table's
accuracies are their means. Tolerances: tests/test_relevance.py (LL_TOL, and every decision margin exceeds
twice it, so equal decisions are a meaningful check).
"""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
from test_lambada import TEXTS, _fitted
from test_lambada import _task as lambada_task_files
from test_relevance import LL_TOL, _margins, _pruning_table, _tasks

from swapkl.errors import SwapKLError
from swapkl.export import export_checkpoint
from swapkl.model.loading import load_model
from swapkl.recovery.heal_settings import HealSettings, TrainText
from swapkl.recovery.recovery_table import heal_loaded
from swapkl.relevance.downstream import AVERAGE, run_downstream
from swapkl.relevance.downstream_jobs import DownstreamJob
from swapkl.tables.combine import aggregate_downstream
from swapkl.tables.schemas import DOWNSTREAM_SCHEMA, read_downstream

N = 3
ROWS = [dict(guide="base", budget=0, removed_layers=[]),
        dict(guide="interchange", budget=1, removed_layers=[1]),
        dict(guide="bi", budget=1, removed_layers=[1]),  # the same model as interchange's: scored once
        dict(guide="interchange", budget=2, removed_layers=[0, 2]),
        dict(guide="fixed", budget=1, removed_layers=[2], fixed_set="skip2"),
        dict(guide="sleb_greedy", budget=2, removed_layers=None, feasible=False)]
PRUNED = [(r["guide"], r["budget"]) for r in ROWS[1:5]]
SETTINGS = HealSettings(rank=2, alpha=4.0, steps=3, lr=1e-2, seq_len=16)


def _lm_eval(path, folder, names):
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    lm = HFLM(pretrained=str(path), device="cpu", batch_size=4)
    out = lm_eval.simple_evaluate(model=lm, tasks=names, num_fewshot=0, log_samples=True,
                                  task_manager=TaskManager(include_path=str(folder), include_defaults=False))
    return {n: sorted(out["samples"][n], key=lambda s: s["doc_id"]) for n in names}


@pytest.fixture(scope="module")
def setup(tmp_path_factory):
    """The fitted model, its task files, a pruning table and two healed checkpoints."""
    d = tmp_path_factory.mktemp("downstream")
    src = d / "model"
    _fitted(src)
    tasks = _tasks(d / "tasks")
    lambada_task_files(d / "lambada")
    (d / "tiny_last_word.jsonl").write_text((d / "lambada" / "tiny_lambada.jsonl").read_text())
    pruning = d / "pruning.parquet"
    _pruning_table(pruning, N, ROWS, model=src)
    text = d / "train.txt"
    text.write_text("\n\n".join(TEXTS * 6))
    healed = d / "healed"
    base = load_model(str(src), None, device="cpu")
    heal_loaded(base, str(healed / "control"), SETTINGS, TrainText(text_file=str(text)), extra={"phase": "control"})
    export_checkpoint(str(src), str(d / "interchange-n1"), remove=[1], guide="interchange", device="cpu")
    heal_loaded(load_model(str(d / "interchange-n1"), None, device="cpu"), str(healed / "interchange-n1"), SETTINGS,
                TrainText(text_file=str(text)))  # as `swapkl heal` by hand: the export is found through its source
    return d, src, tasks, pruning, healed


def _run(setup, out, **kw):
    d, src, tasks, pruning, healed = setup
    kw = dict(task_files=[t.yaml_path for t in tasks], last_word_files=[str(d / "tiny_last_word.jsonl")],
              lm_eval_tasks=["tiny_lambada"], include_path=str(d / "lambada"), pruning=str(pruning),
              healed=[str(healed / "control"), str(healed / "interchange-n1")], label="tiny", revision_label="final",
              device="cpu", batch_size=3) | kw
    return run_downstream(DownstreamJob(model=str(src), out=str(out), **kw))


@pytest.fixture(scope="module")
def table(setup):
    out = setup[0] / "downstream.parquet"
    _run(setup, out)
    return read_downstream(out)


TASKS = ["tiny_plain", "tiny_template", "tiny_last_word", "tiny_lambada"]
MODELS = [("base", None, 0), *[("pruned", g, b) for g, b in PRUNED], ("control", None, 0), ("healed", "interchange", 1)]


def _models(table):
    """(phase, guide, budget) of each scored model in table order, and its rows by task."""
    out = []
    for (phase, guide, budget, _, _), rows in table.groupby(["phase", "guide", "budget", "fixed_set", "checkpoint"],
                                                            dropna=False, sort=False):
        out.append(((phase, None if pd.isna(guide) else guide, int(budget)), rows.set_index("task")))
    return out


def test_phase_and_guide_rows_are_complete(table):
    assert list(table.columns) == DOWNSTREAM_SCHEMA.names
    models = _models(table)
    assert [k for k, _ in models] == MODELS
    for key, rows in models:
        assert rows.index.tolist() == TASKS + [AVERAGE], key
        tasks = rows.loc[TASKS]
        avg = rows.loc[AVERAGE]
        assert avg["accuracy"] == pytest.approx(tasks["accuracy"].mean(), abs=1e-15)
        assert avg["score"] == pytest.approx(tasks["score"].mean(), abs=1e-15)
        assert avg["n"] == tasks["n"].sum()
    pruned = table[table["phase"] == "pruned"]
    assert pruned.loc[pruned["guide"] == "fixed", "fixed_set"].eq("skip2").all()
    assert all(list(x) == [1] for x in table.loc[table["phase"] == "healed", "removed_layers"])
    base = dict(models)[MODELS[0]]
    for key, rows in models:
        want = rows.loc[TASKS, "score"] / base.loc[TASKS, "score"]
        np.testing.assert_allclose(rows.loc[TASKS, "retention"], want, rtol=1e-15)
        assert rows.loc[AVERAGE, "retention"] == pytest.approx(want.mean(), rel=1e-15)


def test_accuracies_equal_lm_eval_on_each_materialised_model(table, setup, monkeypatch):
    """Per question, on the base model, each distinct pruned model (exported) and both healed checkpoints."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    d, src, tasks, _, healed = setup
    paths = {MODELS[0]: src, MODELS[5]: healed / "control", MODELS[6]: healed / "interchange-n1"}
    for key, removed in ((MODELS[1], [1]), (MODELS[3], [0, 2]), (MODELS[4], [2])):
        paths[key] = d / f"ref-{key[1]}-{key[2]}"
        export_checkpoint(str(src), str(paths[key]), remove=removed, device="cpu")
    by_model = dict(_models(table))
    assert by_model[MODELS[1]].equals(by_model[MODELS[2]].assign(guide="interchange"))  # bi's set: the same model
    greedy_seen = 0
    for key, path in paths.items():
        ours = by_model[key]
        samples = _lm_eval(path, d / "tasks", [t.name for t in tasks])
        for task in tasks:
            theirs = samples[task.name]
            lls = [[r[0] for r in s["filtered_resps"]] for s in theirs]
            assert _margins(lls, [doc.choices for doc in task.docs]) > 2 * LL_TOL
            row = ours.loc[task.name]
            assert row["accuracy"] == np.mean([s["acc"] for s in theirs])
            assert row["acc_norm"] == np.mean([s["acc_norm"] for s in theirs]) == row["score"]
            assert row["n"] == len(task.docs) and row["kind"] == "multiple_choice"
        lam = _lm_eval(path, d / "lambada", ["tiny_lambada"])["tiny_lambada"]
        hits = [bool(s["resps"][0][0][1]) for s in lam]
        ll = np.array([float(s["resps"][0][0][0]) for s in lam])
        for name in ("tiny_last_word", "tiny_lambada"):  # the last-word file and the lm-eval task alike
            row = ours.loc[name]
            assert row["accuracy"] == np.mean(hits) == row["score"] and pd.isna(row["acc_norm"])
            assert row["kind"] == "loglikelihood" and row["n"] == len(TEXTS)
            # a mean of len(TEXTS) log-likelihoods, each within LL_TOL: exp of it within LL_TOL relative
            assert row["perplexity"] == pytest.approx(float(np.exp(-ll.mean())), rel=2 * LL_TOL)
        greedy_seen += sum(hits)
    assert 0 < greedy_seen < len(paths) * len(TEXTS)  # both outcomes occur, so the comparison can fail


# -- bad inputs: one line naming the culprit, nothing written ---------------------------------------------------------

def _cli(*argv):
    return subprocess.run([sys.executable, "-m", "swapkl", "downstream", *argv], capture_output=True, text=True)


@pytest.mark.parametrize("kw, message", [
    (dict(task_files=[], last_word_files=[], lm_eval_tasks=[]), "no downstream task given"),
    (dict(limit=0), "`limit` must be a positive number of documents"),
    (dict(pruning=None, pruning_guides=["interchange"]), "give the table too"),
    (dict(pruning_guides=["no_such_guide"]), "has no guide no_such_guide"),
    (dict(lm_eval_tasks=["no_such_task"]), "lm-eval knows no task 'no_such_task'"),
])
def test_bad_inputs_are_refused_in_one_line(setup, tmp_path, kw, message):
    out = tmp_path / "out.parquet"
    with pytest.raises(SwapKLError, match=message) as e:
        _run(setup, out, **kw)
    assert "\n" not in str(e.value) and not out.exists()


def test_a_folder_of_healed_models_scores_them_as_the_list_does(setup, table, tmp_path):
    """``healed_dir`` (the heal rule's folder, what the workflow gives): its healed sub-folders, the control
    first, scored as the explicit ``healed`` list of the same folders is; a sub-folder without swapkl_heal.json
    is no healed model."""
    healed = setup[4]
    (healed / "notes").mkdir(exist_ok=True)
    out = tmp_path / "from_dir.parquet"
    _run(setup, out, healed=[], healed_dir=str(healed))
    from_dir = read_downstream(out)
    assert (from_dir["phase"] == "healed").sum() > 0
    pd.testing.assert_frame_equal(from_dir, table)


def test_healed_models_must_descend_from_the_base(setup, tmp_path):
    d, src, _, _, healed = setup
    plain = tmp_path / "not-healed"
    export_checkpoint(str(src), str(plain), remove=[0], device="cpu")
    with pytest.raises(SwapKLError, match="has no swapkl_heal.json"):
        _run(setup, tmp_path / "a.parquet", healed=[str(plain)])
    other = tmp_path / "other-heal"
    other.mkdir()
    record = json.loads((healed / "control" / "swapkl_heal.json").read_text())
    (other / "swapkl_heal.json").write_text(json.dumps(record | {"weights_sha256": "0" * 64}))
    with pytest.raises(SwapKLError, match="not healed from the base model's weights"):
        _run(setup, tmp_path / "b.parquet", healed=[str(other)])
    assert not (tmp_path / "a.parquet").exists() and not (tmp_path / "b.parquet").exists()


def test_command_line_error_is_one_line_exit_2(setup, tmp_path):
    d, src, tasks, _, _ = setup
    out = tmp_path / "out.parquet"
    result = _cli("--model", str(src), "--tasks", tasks[0].yaml_path, "--lm-eval-tasks", "--limit", "-3", "--out",
                  str(out), "--device", "cpu")
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "--limit" in result.stderr and not out.exists()
    result = _cli("--model", str(src), "--tasks", tasks[0].yaml_path, "--lm-eval-tasks", "--healed",
                  str(tmp_path / "missing"), "--out", str(out))
    assert result.returncode == 2 and len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "missing" in result.stderr and not out.exists()


def test_command_line_writes_the_table(setup, tmp_path, table):
    d, src, tasks, pruning, _ = setup
    out = tmp_path / "cli.parquet"
    result = _cli("--model", str(src), "--tasks", *[t.yaml_path for t in tasks], "--lm-eval-tasks", "--pruning",
                  str(pruning), "--pruning-guides", "fixed", "--label", "tiny", "--revision-label", "final",
                  "--device", "cpu", "--out", str(out))
    assert result.returncode == 0, result.stderr
    got = read_downstream(out)
    want = table[table["phase"].isin(["base", "pruned"]) & table["task"].isin([t.name for t in tasks])]
    want = want[(want["phase"] == "base") | (want["guide"] == "fixed")].reset_index(drop=True)
    got = got[got["task"] != AVERAGE].reset_index(drop=True)
    pd.testing.assert_frame_equal(got.drop(columns=["retention"]), want.drop(columns=["retention"]))


def test_aggregate_refuses_overlapping_files(setup, tmp_path):
    out = setup[0] / "downstream.parquet"
    agg = tmp_path / "all.parquet"
    aggregate_downstream([str(out)], str(agg))
    pd.testing.assert_frame_equal(read_downstream(agg), read_downstream(out))
    with pytest.raises(SwapKLError, match="overlap"):
        aggregate_downstream([str(out), str(agg)], str(tmp_path / "twice.parquet"))


# -- the table figure -------------------------------------------------------------------------------------------------

def test_table_figure_shows_the_scores_of_every_model(table, tmp_path, monkeypatch):
    from figure_layout import captured_figures, layout_problems

    from swapkl.studies.downstream.figures import plot_downstream

    with captured_figures(monkeypatch) as figs:
        plot_downstream(table, tmp_path / "d.png", tmp_path / "d.pdf", model="tiny", revision="final")
    fig = figs[-1]
    assert not layout_problems(fig)
    ax = fig.axes[0]
    labels = [t.get_text() for t in ax.get_yticklabels()]
    assert labels == ["base model", "interchange, n=1: without 1", "bi, n=1: without 1",
                      "interchange, n=2: without 0, 2", "fixed skip2, n=1: without 2", "healed control (unpruned)", "healed interchange, n=1: without 1"]
    assert [t.get_text().split("\n")[0] for t in ax.get_xticklabels()] == TASKS + [AVERAGE]
    cells = np.array([t.get_text() for t in ax.texts]).reshape(len(labels), len(TASKS) + 1)
    for i, (key, rows) in enumerate(_models(table)):
        assert cells[i].tolist() == [f"{100 * rows.loc[t, 'score']:.0f}" for t in TASKS] + \
            [f"{100 * rows.loc[AVERAGE, 'score']:.1f}"], key
    shown = ax.get_images()[0].get_array()  # the change from the base model, in points
    base = _models(table)[0][1]
    np.testing.assert_allclose(shown[3], 100 * (_models(table)[3][1].loc[TASKS + [AVERAGE], "score"]
                                                - base.loc[TASKS + [AVERAGE], "score"]).to_numpy(), atol=1e-9)
    assert base.loc[AVERAGE, "retention"] == 1.0


def test_demo_last_word_texts_end_in_a_word_and_are_seeded():
    from swapkl.demo.last_word_task import last_word_texts
    from swapkl.relevance.lambada import split_last_word

    paragraphs = [" ".join(f"w{k}" if k % 3 else f"word{chr(97 + k % 26)}" for k in range(n)) for n in (5, 14, 30, 60)]
    texts = last_word_texts(paragraphs, n_docs=25, seed=3)
    assert texts == last_word_texts(paragraphs, n_docs=25, seed=3) != last_word_texts(paragraphs, n_docs=25, seed=4)
    for t in texts:
        context, target = split_last_word(t)
        assert 12 <= len(t.split()) <= 40 and target[1:].isalpha() and any(t.startswith(p[:len(context)])
                                                                           for p in paragraphs)
    with pytest.raises(SwapKLError, match="could not draw"):
        last_word_texts(paragraphs[:1], n_docs=2, seed=0)
