"""Task-calibrated pruning (swapkl.relevance.task_pruning) against independent computations.

* evaluation: every pruned model's accuracy on each task's test split equals lm-evaluation-harness's
  ``simple_evaluate`` with ``HFLM`` on the materialised pruned checkpoint (``swapkl export``);
* calibration: the accuracy guide equals a brute-force greedy whose accuracies come from the stock
  transformers forward of a reordered ``nn.ModuleList`` on the training split read straight from its JSONL;
  the BI scores equal 1 - cos(block input, block output) taken with forward hooks;
* the tables: the task-specific and calibration tables and the Gromov curves against hand-computed numbers.
"""

from __future__ import annotations

import json
import random

import numpy as np
import pandas as pd
import pytest
import torch

import naive_reference as ref
from swapkl.errors import SwapKLError
from swapkl.export import export_checkpoint
from swapkl.model.engine import ProbeEngine
from swapkl.relevance.task_calibration import pooled_task_accuracy, probe_tables, task_calibration
from swapkl.studies.task_pruning.jobs import TaskPruningJob
from swapkl.studies.task_pruning.run import main_budget, run_task_pruning
from swapkl.relevance.task_tables import aggregate_task_pruning
from swapkl.relevance.task_tables import calibration_table, gromov_curves, summary_rows, task_specific_table
from swapkl.demo.split_tasks import split_demo_task
from swapkl.relevance.task_splits import CALIBRATION, load_split, task_manager
from swapkl.relevance.tasks import write_task
from test_relevance import LL_TOL, WORDS, eos_char_tokenizer
from tiny_models import tiny_model

N_LAYERS = 5
TASKS = ("ta", "tb")


def prune_on_tasks(model: str, out: str, *, label: str | None = None, revision_label: str | None = None,
                   **options) -> None:
    """run_task_pruning on the job of ``options`` (the job's fields), its rows labelled ``label`` and
    ``revision_label``."""
    metadata = {k: v for k, v in (("model", label), ("revision", revision_label)) if v} or None
    run_task_pruning(TaskPruningJob(model=model, out=out, metadata=metadata, **options))


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


def _split_tasks(folder, n_docs=20):
    rng = random.Random(0)
    for name in TASKS:
        docs = []
        for _ in range(n_docs):
            choices = rng.sample(WORDS, 3)
            docs.append({"query": " ".join(rng.choice(WORDS) for _ in range(3)) + " is", "choices": choices,
                         "gold": rng.randrange(3)})
        split_demo_task(write_task(folder / "raw", name, docs), str(folder / "split"))
    return folder / "split"


def _saved(tmp_path):
    src = tmp_path / "model"
    model = tiny_model("llama", n_layers=N_LAYERS, vocab=97, seed=1)
    model.save_pretrained(src)
    eos_char_tokenizer().save_pretrained(src)
    return src, model


def _lm_eval_acc(path, folder, names):
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    lm = HFLM(pretrained=str(path), device="cpu", batch_size=8)
    out = lm_eval.simple_evaluate(model=lm, tasks=list(names), num_fewshot=0, log_samples=True,
                                  task_manager=TaskManager(include_path=str(folder), include_defaults=False))
    return {n: out["samples"][n] for n in names}


def test_pruned_models_score_as_lm_eval_on_their_exported_checkpoints(tmp_path):
    src, _ = _saved(tmp_path)
    folder = _split_tasks(tmp_path)
    out = tmp_path / "pruned.parquet"
    prune_on_tasks(str(src), str(out), calibrations=[{"name": "ta", "tasks": ["ta"]},
                                                                   {"name": "mix", "tasks": list(TASKS), "fraction": 0.5}],
                     tasks=list(TASKS), methods=["original", "bi", "accuracy", "deletion"], prune_fraction=0.4, include_path=str(folder),
                     include_defaults=False, device="cpu", seq_len=64, label="tiny", revision_label="final")
    df = pd.read_parquet(out)
    assert set(df["split"]) == {"test"} and set(df["calibration_split"]) == {"train"}
    assert df.groupby("calibration")["n_calibration_docs"].first().to_dict() == {"ta": 10, "mix": 10}
    assert (df[df["method"] != "original"]["budget"] == main_budget(N_LAYERS, 0.4)).all()
    for removed in {tuple(r) for r in df["removed_layers"]}:
        path = src
        if removed:
            path = tmp_path / ("minus" + "_".join(map(str, removed)))
            if not path.exists():
                export_checkpoint(str(src), str(path), remove=list(removed), device="cpu")
        samples = _lm_eval_acc(path, folder, TASKS)
        for task in TASKS:
            lls = [[r[0] for r in s["filtered_resps"]] for s in samples[task]]
            gaps = [np.sort(x)[-1] - np.sort(x)[-2] for x in lls]
            assert min(gaps) > 2 * LL_TOL  # no near-tie that float rounding could flip
            rows = df[(df["task"] == task) & (df["metric"] == "acc")
                      & df["removed_layers"].map(lambda x, r=removed: tuple(x) == r)]
            want = np.mean([s["acc"] for s in samples[task]])
            assert len(rows) and (rows["accuracy"] == want).all()
            assert (rows["n_docs"] == len(samples[task])).all()


def _stock_acc(model, tok, docs, removed):
    """acc without ``removed`` from stock-forward log-likelihoods of each choice (no engine, no lm-eval)."""
    order = [b for b in range(N_LAYERS) if b not in removed]
    hits = []
    for d in docs:
        scores = []
        for c in d["choices"]:
            ctx, whole = tok.encode(d["query"]), tok.encode(d["query"] + " " + c)
            ids = torch.tensor([whole])
            z = ref.logits(model, ids, torch.ones_like(ids), order)[0].double()
            lp = z[:-1].log_softmax(-1).gather(-1, ids[0, 1:, None])[:, 0]
            scores.append(float(lp[len(ctx) - 1:].sum()))
        hits.append(int(np.argmax(scores)) == d["gold"])
    return float(np.mean(hits))


def test_accuracy_guide_is_a_greedy_over_the_training_split(tmp_path):
    from swapkl.pruning.guides.accuracy import accuracy_guided_sets

    _, model = _saved(tmp_path)
    tok = eos_char_tokenizer()
    folder = _split_tasks(tmp_path)
    split = load_split(task_manager(str(folder), False), "ta", CALIBRATION)
    engine = ProbeEngine(model)
    got = accuracy_guided_sets(lambda sets: pooled_task_accuracy(engine, [split], tok, sets, batch_size=4, pad_id=0),
                               N_LAYERS, 2)
    docs = [json.loads(line) for line in (folder / "ta_train.jsonl").read_text().splitlines()]
    assert split.n_docs == len(docs) == 10
    removed = ()
    for budget in (1, 2):
        scores = {b: _stock_acc(model, tok, docs, removed + (b,)) for b in range(N_LAYERS) if b not in removed}
        best = max(scores.values())
        removed = tuple(sorted(removed + (min(b for b, s in scores.items() if s == best),)))
        assert got[budget] == removed


def test_bi_on_the_calibration_documents_equals_hooked_block_streams(tmp_path):
    _, model = _saved(tmp_path)
    tok = eos_char_tokenizer()
    folder = _split_tasks(tmp_path)
    split = load_split(task_manager(str(folder), False), "tb", CALIBRATION)
    calib = task_calibration("tb", [split], tok, seq_len=64, pad_id=0)
    _, rep = probe_tables(ProbeEngine(model), calib.windows, "adjacent", batch_size=3, device="cpu")
    docs = [json.loads(line) for line in (folder / "tb_train.jsonl").read_text().splitlines()]
    sums, count = np.zeros(N_LAYERS), 0
    for d in docs:
        ids = torch.tensor([tok.encode(d["query"] + " " + d["choices"][d["gold"]])[:64]])
        seen = {}
        hooks = [blk.register_forward_hook(lambda m, a, o, k=k: seen.__setitem__(k, (a[0], o[0] if isinstance(o, tuple) else o)))
                 for k, blk in enumerate(model.model.layers)]
        with torch.no_grad():
            model(input_ids=ids)
        for h in hooks:
            h.remove()
        for k in range(N_LAYERS):
            hin, hout = seen[k]
            sums[k] += float((1 - torch.nn.functional.cosine_similarity(hin[0].double(), hout[0].double(), dim=-1)).sum())
        count += ids.shape[1]
    # float32 streams through <= 5 blocks, cosines accumulated in float64: agreement far below 1e-5
    assert np.allclose(rep.sort_values("layer_i")["value"].to_numpy(), sums / count, atol=1e-5)


def test_bad_calibrations_are_one_line_errors(tmp_path):
    src, _ = _saved(tmp_path)
    folder = _split_tasks(tmp_path)
    common = dict(tasks=["ta"], include_path=str(folder), include_defaults=False, device="cpu")
    with pytest.raises(SwapKLError, match="unknown pruning method 'magic'"):
        prune_on_tasks(str(src), str(tmp_path / "a.parquet"), calibrations=[{"name": "x", "tasks": ["ta"]}],
                         methods=["magic"], **common)
    with pytest.raises(SwapKLError, match="names no task"):
        prune_on_tasks(str(src), str(tmp_path / "b.parquet"), calibrations=[{"name": "x"}], **common)
    with pytest.raises(SwapKLError, match="distinct names"):
        prune_on_tasks(str(src), str(tmp_path / "b.parquet"), calibrations=[{"name": "x", "tasks": ["ta"]}] * 2,
                         **common)
    with pytest.raises(SwapKLError, match="lm-eval knows no task 'nope'"):
        prune_on_tasks(str(src), str(tmp_path / "c.parquet"), calibrations=[{"name": "x", "tasks": ["ta"]}],
                         **(common | {"tasks": ["nope"]}))
    raw = tmp_path / "raw" / "ta.yaml"  # the single-split task: nothing to calibrate on apart from its test split
    with pytest.raises(SwapKLError, match="cannot calibrate"):
        load_split(task_manager(str(raw.parent), False), "ta", CALIBRATION)
    assert not list(tmp_path.glob("*.parquet"))


def _row(cal, kind, method, budget, task, acc, n_layers=8):
    return dict(model="m", revision="r", calibration=cal, calibration_kind=kind, calibration_split="train",
                n_calibration_docs=10, method=method, budget=budget, n_layers=n_layers,
                removed_layers=list(range(budget)), task=task, split="test", metric="acc", accuracy=acc, n_docs=4)


def _hand_table():
    rows = []
    for cal in ("t1", "t2"):
        rows.append(_row(cal, "task", "original", 0, "t1", 0.50))
        rows.append(_row(cal, "task", "original", 0, "t2", 0.70))
    rows += [_row("t1", "task", "bi", 2, "t1", 0.25), _row("t1", "task", "bi", 2, "t2", 0.40),
             _row("t2", "task", "bi", 2, "t1", 0.30), _row("t2", "task", "bi", 2, "t2", 0.60),
             _row("t1", "task", "accuracy", 1, "t1", 0.55), _row("t1", "task", "accuracy", 2, "t1", 0.45),
             _row("t1", "task", "accuracy", 2, "t2", 0.65), _row("t2", "task", "accuracy", 2, "t1", 0.35),
             _row("t2", "task", "accuracy", 2, "t2", 0.75), _row("t2", "task", "accuracy", 1, "t2", 0.80),
             _row("t1", "task", "bi", 1, "t1", 0.40), _row("t2", "task", "bi", 1, "t2", 0.65),
             _row("mix", "mix", "original", 0, "t1", 0.50), _row("mix", "mix", "original", 0, "t2", 0.70),
             _row("mix", "mix", "accuracy", 2, "t1", 0.40), _row("mix", "mix", "accuracy", 2, "t2", 0.70)]
    return pd.DataFrame(rows)


def test_tables_against_hand_computed_numbers():
    df = _hand_table()
    spec = task_specific_table(df)
    # each task from its own calibration at the main budget 2: bi t1 25, t2 60; accuracy t1 45, t2 75
    assert spec.loc["original"].tolist() == pytest.approx([50.0, 70.0, 60.0])
    assert spec.loc["bi"].tolist() == pytest.approx([25.0, 60.0, 42.5])
    assert spec.loc["accuracy"].tolist() == pytest.approx([45.0, 75.0, 60.0])
    assert list(spec.index) == ["original", "bi", "accuracy"]
    cal = calibration_table(df)
    assert cal.loc[("mix", "accuracy")].tolist() == pytest.approx([40.0, 70.0, 55.0])
    assert cal.loc[("t1", "accuracy")].tolist() == pytest.approx([45.0, 65.0, 55.0])
    assert cal.loc[("t2", "bi")].tolist() == pytest.approx([30.0, 60.0, 45.0])
    curves = gromov_curves(df)
    acc_t2 = curves[(curves["task"] == "t2") & (curves["method"] == "accuracy")]
    assert acc_t2["budget"].tolist() == [0, 1, 2] and acc_t2["accuracy"].tolist() == pytest.approx([70.0, 80.0, 75.0])
    bi_t1 = curves[(curves["task"] == "t1") & (curves["method"] == "bi")]
    assert bi_t1["accuracy"].tolist() == pytest.approx([50.0, 40.0, 25.0])
    summary = summary_rows(df)
    one = summary[(summary["table"] == "task_specific") & (summary["method"] == "bi") & (summary["task"] == "average")]
    assert one["accuracy"].tolist() == pytest.approx([42.5]) and one["budget"].tolist() == [2]


def test_aggregate_writes_both_tables_and_refuses_overlaps(tmp_path):
    import pyarrow as pa

    from swapkl.tables.parquet_io import write_parquet
    from swapkl.tables.schemas import TASK_PRUNING_SCHEMA

    df = _hand_table()
    a, b = tmp_path / "a.parquet", tmp_path / "b.parquet"
    write_parquet(pa.Table.from_pandas(df[df["calibration"] != "mix"], schema=TASK_PRUNING_SCHEMA,
                                       preserve_index=False), str(a), {})
    write_parquet(pa.Table.from_pandas(df[df["calibration"] == "mix"], schema=TASK_PRUNING_SCHEMA,
                                       preserve_index=False), str(b), {})
    out, summary = tmp_path / "all.parquet", tmp_path / "tables.parquet"
    aggregate_task_pruning([str(a), str(b)], str(out), summary=str(summary))
    assert len(pd.read_parquet(out)) == len(df)
    s = pd.read_parquet(summary)
    assert set(s["table"]) == {"task_specific", "calibration", "gromov"}
    with pytest.raises(SwapKLError, match="overlap"):
        aggregate_task_pruning([str(a), str(a)], str(tmp_path / "dup.parquet"))


def test_the_scorecard_reads_the_issue_25_numbers_from_the_summary_table():
    from swapkl.paper.scorecard import build_scorecard

    tasks = ["boolq", "arc_easy"]
    rows = []
    for cal, kind in (("boolq", "task"), ("arc_easy", "task"), ("mix10", "mix"), ("c4", "lm")):
        for task, base in zip(tasks, (0.80, 0.60)):
            rows.append(_row(cal, kind, "original", 0, task, base, n_layers=32))
            for method, acc in (("accuracy", base - 0.02), ("bi", base - 0.10), ("taylor", base - 0.2),
                                ("sleb_iterative", base - 0.15)):
                rows.append(_row(cal, kind, method, 8, task, acc, n_layers=32))
            if kind == "task" and cal == task:
                rows.append(_row(cal, kind, "accuracy", 7, task, base - 0.01, n_layers=32))
    for budget, acc in ((0, 0.50), (2, 0.45), (7, 0.25)):  # the generative curve task, scored by exact match
        rows.append(_row("gsm8k", "curve", "accuracy" if budget else "original", budget, "gsm8k", acc, n_layers=32)
                    | {"metric": "exact_match,strict-match"})
    summary = summary_rows(pd.DataFrame(rows).assign(model="Meta-Llama-3-8B"))
    card = build_scorecard({"seed003_tables": summary})
    ours = card[card["model"] == "Meta-Llama-3-8B"].set_index("quantity")["swapkl"]
    assert ours["average accuracy %, original (unpruned)"] == pytest.approx(70.0)
    assert ours["average accuracy %, accuracy-guided, 25% removed"] == pytest.approx(68.0)
    assert ours["BoolQ accuracy %, accuracy-guided, 25% removed"] == pytest.approx(78.0)
    assert ours["average accuracy %, cosine (BI), mix of 10% of each training split"] == pytest.approx(60.0)
    assert ours["average accuracy %, accuracy-guided, calibrated on C4"] == pytest.approx(68.0)
    kept = [q for q in ours.index if q.startswith("share of accuracy kept")][0]
    assert ours[kept] == pytest.approx((0.79 + 0.59 + 0.25) / (0.80 + 0.60 + 0.50))
    assert ours["GSM8K accuracy kept after two blocks removed (accuracy-guided): nearly intact"] == pytest.approx(0.9)
    assert ours["average accuracy %, original (unpruned)"] == pytest.approx(70.0)  # GSM8K is in no average


def test_figures_draw_the_tables(tmp_path, monkeypatch):
    import swapkl.figures.task_pruning.curves as figure

    drawn = []
    monkeypatch.setattr(figure, "save_figure", lambda fig, png, pdf: drawn.append(fig))
    df = _hand_table()
    figure.plot_task_specific(df, tmp_path / "t.png", tmp_path / "t.pdf")
    cells = [t.get_text() for t in drawn[0].axes[0].texts]  # the cells' numbers, row by row, are the table's
    table = task_specific_table(df)
    assert [c.split("\n")[0] for c in cells] == [f"{v:.0f}" if t != "average" else f"{v:.1f}"
                                                 for row in table.to_numpy() for t, v in zip(table.columns, row)]
    figure.plot_gromov_curves(df, tmp_path / "g.png", tmp_path / "g.pdf")
    curves = gromov_curves(df)
    for ax in drawn[1].axes:
        if not ax.get_visible():
            continue
        task = ax.get_title().split("\n")[0]
        for cont, method in zip(ax.containers, ("bi", "accuracy")):  # points dodged by ±0.04 blocks
            line = cont.lines[0]
            want = curves[(curves["task"] == task) & (curves["method"] == method)]
            assert list(line.get_xdata()) == pytest.approx((want["budget"] + (0.04 if method == "accuracy" else -0.04)).tolist())
            assert list(line.get_ydata()) == pytest.approx(want["accuracy"].tolist())


def test_the_study_draws_the_gsm8k_curve_as_a_generative_curve_task():
    """The study's LLaMA3-8B job: GSM8K is a curve task (its own curve calibration, capped at its own size), and
    neither a table task nor part of the task-agnostic mix."""
    import yaml
    from direct_config import REPO, validated

    from types import SimpleNamespace

    from swapkl.config.rule_jobs import build_job
    from swapkl.config.rule_params import RuleParams
    from swapkl.config.study_plan import StudyPlan

    plan = StudyPlan(*validated(yaml.safe_load((REPO / "config.yaml").read_text())))
    (revision,) = plan.stage_revisions("task_pruning", "Meta-Llama-3-8B")
    settings = RuleParams(plan).job("task_pruning")(SimpleNamespace(model="Meta-Llama-3-8B", revision=revision))
    job = build_job(settings, {"out": "x.parquet"})  # the rule's job, as workflow/scripts/run_job.py builds it
    assert isinstance(job, TaskPruningJob) and job.metadata["model"] == "Meta-Llama-3-8B"
    assert job.curve_tasks == ("gsm8k",) and "gsm8k" not in job.tasks
    calib = {c["name"]: c for c in job.calibrations}
    assert calib["gsm8k"] == {"name": "gsm8k", "tasks": ["gsm8k"], "max_docs": 50, "curve": True}
    assert "gsm8k" not in calib["mix10"]["tasks"] and not calib["arc_easy"].get("curve")


def test_curve_calibrations_draw_curves_and_stay_out_of_the_tables():
    """A curve task (exact match under the strict filter stands in for acc) adds a Gromov curve and changes
    neither the task-specific nor the calibration table, nor their main budget."""
    df = _hand_table()
    gen = [_row("g", "curve", "original", 0, "g", 0.40), _row("g", "curve", "accuracy", 1, "g", 0.40),
           _row("g", "curve", "accuracy", 2, "g", 0.30), _row("g", "curve", "bi", 1, "g", 0.10),
           _row("g", "curve", "bi", 2, "g", 0.0)]
    flexible = [r | {"metric": "exact_match,flexible-extract", "accuracy": 1.0} for r in gen]
    both = pd.concat([df, pd.DataFrame([r | {"metric": "exact_match,strict-match"} for r in gen] + flexible)])
    pd.testing.assert_frame_equal(task_specific_table(both), task_specific_table(df))
    pd.testing.assert_frame_equal(calibration_table(both), calibration_table(df))
    curves = gromov_curves(both)
    g = curves[curves["task"] == "g"]
    assert g[g["method"] == "accuracy"]["accuracy"].tolist() == pytest.approx([40.0, 40.0, 30.0])
    assert g[g["method"] == "bi"]["accuracy"].tolist() == pytest.approx([40.0, 10.0, 0.0])
    assert len(curves) == len(gromov_curves(df)) + 6
    summary = summary_rows(both)
    g = summary[summary["task"] == "g"]
    assert set(g["table"]) == {"gromov"} and set(g["metric"]) == {"exact_match,strict-match"}
    assert set(summary[summary["task"] != "g"]["metric"]) == {"acc"}


def test_the_main_budget_is_the_one_every_method_shares():
    """Curve budgets beyond the main budget (BI and accuracy at 1..4, Taylor at 2 only) leave the tables at 2."""
    from swapkl.relevance.task_tables import main_budget_of

    rows = [_row("t1", "task", "original", 0, "t1", 0.5), _row("t1", "task", "taylor", 2, "t1", 0.3)]
    rows += [_row("t1", "task", m, b, "t1", 0.4) for m in ("bi", "accuracy") for b in (1, 2, 3, 4)]
    df = pd.DataFrame(rows)
    assert main_budget_of(df) == 2
    assert sorted(task_specific_table(df).index) == ["accuracy", "bi", "original", "taylor"]
    with pytest.raises(SwapKLError, match="no single main budget"):
        main_budget_of(df[df["method"] != "taylor"])  # only curve methods and no mix: 1..4 are all candidates
