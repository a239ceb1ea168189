"""Accuracy-based relevance: AccRel, and the engine's accuracies against independent computations.

* Multiple choice: lm-evaluation-harness (pinned in pyproject) scores the same task files with ``HFLM`` on
  each pruned model *materialised* by ``swapkl export`` and reloaded from disk; per question, the
  engine's ``acc`` and ``acc_norm`` must equal lm-eval's and the prompts must be the same strings.
* Language modelling: next-token accuracy against the stock forward with a reordered ``nn.ModuleList``
  (tests/naive_reference.py).

Tolerance of the log-likelihoods (lm-eval: float32 log-softmax summed in float32 from padded batches of
its own shape; engine: float32 logits, float64 log-sum-exp, other batch shapes). A logit computed by
a differently blocked float32 kernel differs by about sqrt(d) * eps * |z| <= 8 * 1.2e-7 * 30 = 3e-5 for
d = 64 and |z| <= 30 here, and the log-sum-exp by as much; a continuation of n <= 12 tokens sums 2n
such errors: 12 * 2 * 3e-5 = 7e-4. We allow 1e-3. Equal accuracies are only a meaningful check when no
question is decided by less than that, so the test also asserts every decision margin exceeds 2e-3
(a property of the fixed seeds, not of the code; another seed could need another task).
"""

from __future__ import annotations

import math
import random

import numpy as np
import pandas as pd
import pytest
import torch

import naive_reference as ref
from swapkl.model.engine import ProbeEngine
from swapkl.errors import SwapKLError
from swapkl.export import export_checkpoint
from swapkl.probes.protocols.block_deletion import deletion
from swapkl.relevance.accrel import lm_relevance, task_relevance
from swapkl.model.choice_scores import BASE, next_token_hits
from swapkl.relevance.tasks import acc_rel, load_task, write_task
from tiny_models import ARCHS, random_tokens, tiny_model

N_LAYERS = 3
# A choice's log-likelihood is a sum of <= 8 token log-probabilities (|log p| <= ~40 nats on these tiny
# models), computed here from float32 logits by two different forwards (lm-eval's HFLM on the exported
# checkpoint, the engine's resumed variant): each term differs by ~1e-6 relative (float32 rounding through
# 3 blocks), so a sum by ~1e-5 at most; 1e-4 leaves 3x margin, and choices closer than 2 * LL_TOL (a
# tie that rounding could flip) would make acc undecidable, so the test asserts there are none.
LL_TOL = 1e-4
WORDS = ["cat", "dog", "tree", "house", "river", "stone", "bird", "fish", "apple", "lamp", "road", "hill"]


def eos_char_tokenizer():
    """Characters as tokens, with an end-of-text token (lm-eval's HFLM needs a prefix token)."""
    from tokenizers import Regex, Tokenizer, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    chars = list("abcdefghijklmnopqrstuvwxyz .,:?\n")
    vocab = {"<pad>": 0, "<unk>": 1, "<eos>": 2, **{c: i + 3 for i, c in enumerate(chars)}}
    t = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    t.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
    return PreTrainedTokenizerFast(tokenizer_object=t, pad_token="<pad>", unk_token="<unk>", eos_token="<eos>")


# -- AccRel -----------------------------------------------------------------------------------------------------

def test_acc_rel_definition():
    assert acc_rel(0.8, 0.8, 0.25) == 0.0  # deleting the block costs nothing
    assert acc_rel(0.25, 0.8, 0.25) == 1.0  # down to chance
    assert acc_rel(0.1, 0.8, 0.25) == 1.0  # below chance counts as chance
    assert acc_rel(0.525, 0.8, 0.25) == pytest.approx(0.5)
    assert acc_rel(0.9, 0.8, 0.25) == pytest.approx(1 - 0.65 / 0.55)  # deletion helps: negative


@pytest.mark.parametrize("base", [0.25, 0.2])
def test_acc_rel_is_undefined_when_the_base_model_is_not_above_chance(base):
    assert math.isnan(acc_rel(0.3, base, 0.25))


# -- multiple choice against lm-eval ------------------------------------------------------------------------------

def _tasks(folder):
    rng = random.Random(0)
    plain, templated = [], []
    for _ in range(16):
        k = rng.choice([2, 3, 4])
        choices = rng.sample(WORDS, k)
        plain.append({"query": " ".join(rng.choice(WORDS) for _ in range(3)) + " is",
                      "choices": choices, "gold": rng.randrange(k)})
        a, b = rng.sample(WORDS, 2)
        templated.append({"x": a, "y": b, "options": rng.sample(WORDS, 3)})
        templated[-1]["answer"] = templated[-1]["options"][rng.randrange(3)]
    write_task(folder, "tiny_plain", plain)
    # a template context ending in a space (moved to the continuation) and a target given as text
    write_task(folder, "tiny_template", templated, text="q: {{x}} or {{y}}? a: ", choices="{{options}}",
               target="{{answer}}")
    return [load_task(str(folder / f"{n}.yaml")) for n in ("tiny_plain", "tiny_template")]


def _lm_eval(path, folder, names):
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    lm = HFLM(pretrained=str(path), device="cpu", batch_size=8)
    out = lm_eval.simple_evaluate(model=lm, tasks=names, task_manager=TaskManager(include_path=str(folder), include_defaults=False),
                                  log_samples=True, num_fewshot=0)
    return {n: sorted(out["samples"][n], key=lambda s: s["doc_id"]) for n in names}


def _margins(lls, doc_choices):
    """Smallest gap between the best and second-best (raw and length-normalised) scores over documents."""
    gaps = []
    for x, choices in zip(lls, doc_choices):
        for y in (np.asarray(x), np.asarray(x) / np.array([len(c) for c in choices], dtype=float)):
            top = np.sort(y)[::-1]
            gaps.append(top[0] - top[1])
    return min(gaps)


@pytest.mark.parametrize("arch", ARCHS)
def test_multiple_choice_accuracy_equals_lm_eval_on_each_materialised_deletion(tmp_path, monkeypatch, arch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    src = tmp_path / "model"
    model = tiny_model(arch, n_layers=N_LAYERS, vocab=97, seed=1)
    model.save_pretrained(src)
    tok = eos_char_tokenizer()
    tok.save_pretrained(src)
    tasks = _tasks(tmp_path / "tasks")
    engine = ProbeEngine(model)
    per_task = {t.name: task_relevance(engine, t, tok, model="tiny", revision=None, batch_size=5) for t in tasks}

    for layer in [None, *range(N_LAYERS)]:
        key = BASE if layer is None else deletion(layer, N_LAYERS).key
        path = src
        if layer is not None:
            path = tmp_path / f"minus{layer}"
            export_checkpoint(str(src), str(path), remove=[layer], device="cpu")
        samples = _lm_eval(path, tmp_path / "tasks", [t.name for t in tasks])
        for task in tasks:
            got = per_task[task.name].predictions[key]
            theirs = samples[task.name]
            assert len(theirs) == len(task.docs)
            for d, (s, doc) in enumerate(zip(theirs, task.docs)):
                assert [tuple(a) for a in s["arguments"]] == [(doc.context, task.target_delimiter + c)
                                                              for c in doc.choices]
            their_lls = [[r[0] for r in s["filtered_resps"]] for s in theirs]
            ours = per_task[task.name].loglikelihoods[key]
            assert max(abs(a - b) for x, y in zip(their_lls, ours) for a, b in zip(x, y)) <= LL_TOL
            assert _margins(their_lls, [d.choices for d in task.docs]) > 2 * LL_TOL
            assert got["acc"].tolist() == [s["acc"] for s in theirs]
            assert got["acc_norm"].tolist() == [s["acc_norm"] for s in theirs]


# -- language modelling against the stock forward -----------------------------------------------------------------

@pytest.mark.parametrize("arch", ARCHS)
def test_next_token_accuracy_equals_the_reordered_stock_forward(arch):
    from swapkl.data.windows import Windows

    model = tiny_model(arch, n_layers=4, vocab=97, seed=2)
    ids = random_tokens(97, 5, 24, seed=7)
    mask = torch.ones_like(ids)
    mask[2, 15:] = 0
    windows = Windows(ids.numpy(), mask.numpy(), "test")
    engine = ProbeEngine(model)
    got = next_token_hits(engine, windows, [deletion(i, 4) for i in range(4)], batch_size=2)
    pair_valid = (mask[:, :-1] & mask[:, 1:]).bool()
    for key, order in [(BASE, None)] + [(deletion(i, 4).key, ref.deletion_order(i, 4)) for i in range(4)]:
        z = ref.logits(model, ids, mask, order)[:, :-1]
        want = (z.argmax(-1) == ids[:, 1:])[pair_valid]
        top2 = z.topk(2, dim=-1).values[pair_valid]
        assert float((top2[:, 0] - top2[:, 1]).min()) > 1e-4  # no near-tie decides a position
        assert got[key].tolist() == want.double().tolist()
    rows = lm_relevance(engine, windows, "lm", model="tiny", revision=None, batch_size=2)
    base = float(got[BASE].mean())
    for r in rows:
        assert r["base_accuracy"] == base and r["random_baseline"] == 1 / 97
        assert r["accuracy"] == float(got[deletion(r["layer"], 4).key].mean())
        assert (math.isnan(r["relevance"]) if base <= 1 / 97 else
                r["relevance"] == acc_rel(r["accuracy"], base, 1 / 97))


# -- accuracy-guided pruning against a brute force on the stock forward ---------------------------------------------

def _stock_accuracy(model, task, requests, removed, n_layers):
    """Accuracy without ``removed`` from full stock-forward logits of each request (no engine)."""
    order = [b for b in range(n_layers) if b not in removed]
    per_doc = [[None] * len(d.choices) for d in task.docs]
    for r in requests:
        ids = torch.tensor([r.tokens])
        z = ref.logits(model, ids, torch.ones_like(ids), order)[0].double()
        lp = z[:-1].log_softmax(-1).gather(-1, ids[0, 1:, None])[:, 0]
        per_doc[r.doc][r.choice] = float(lp[-r.n_continuation:].sum())
    return float(np.mean([np.argmax(x) == d.gold for x, d in zip(per_doc, task.docs)]))


def test_accuracy_guided_pruning_matches_a_brute_force_greedy(tmp_path):
    from swapkl.pruning.guides.accuracy import accuracy_guided_sets, task_accuracy
    from swapkl.model.choice_scores import task_requests

    n = 5
    model = tiny_model("qwen3", n_layers=n, vocab=97, seed=3)
    tok = eos_char_tokenizer()
    task = _tasks(tmp_path)[0]
    engine = ProbeEngine(model)
    got = accuracy_guided_sets(lambda sets: task_accuracy(engine, task, tok, sets), n, 3)
    requests = task_requests(task, tok, None)
    removed = ()
    for budget in (1, 2, 3):
        scores = {b: _stock_accuracy(model, task, requests, removed + (b,), n) for b in range(n) if b not in removed}
        best = max(scores.values())
        removed = tuple(sorted(removed + (min(b for b, s in scores.items() if s == best),)))
        assert got[budget] == removed


# -- the command line ------------------------------------------------------------------------------------------

def _saved_model(tmp_path):
    src = tmp_path / "model"
    tiny_model("llama", n_layers=N_LAYERS, vocab=97, seed=1).save_pretrained(src)
    eos_char_tokenizer().save_pretrained(src)
    return src


def test_relevance_cli_writes_the_table_with_provenance(tmp_path):
    import pandas as pd

    from swapkl import cli
    from swapkl.tables import provenance
    from swapkl.tables.schemas import RELEVANCE_SCHEMA

    src = _saved_model(tmp_path)
    tasks = _tasks(tmp_path / "tasks")
    text = tmp_path / "text.txt"
    text.write_text("\n\n".join(" ".join(random.Random(i).choices(WORDS, k=12)) for i in range(6)))
    out = tmp_path / "rel.parquet"
    code = cli.main(["relevance", "--model", str(src), "--device", "cpu", "--tasks", *[t.yaml_path for t in tasks],
                     "--lm-text-file", str(text), "--lm-n-seqs", "4", "--lm-seq-len", "40", "--label", "tiny",
                     "--revision-label", "final", "--out", str(out)])
    assert code == 0
    df = pd.read_parquet(out)
    assert list(df.columns) == RELEVANCE_SCHEMA.names
    assert len(df) == N_LAYERS * 5 and set(df["task"]) == {"tiny_plain", "tiny_template", "lm"}
    assert (df["model"] == "tiny").all() and (df["revision"] == "final").all()
    prov = provenance.read(str(out))
    assert set(prov["tasks"]) == {"tiny_plain", "tiny_template"} and prov["lm_data"]["text_file"] == str(text)


@pytest.mark.parametrize("yaml_text,message", [
    ("task: t\noutput_type: multiple_choice\ndataset_path: json\nnum_fewshot: 5\n", "zero-shot"),
    ("task: t\noutput_type: generate_until\n", "multiple_choice"),
    ("task: t\noutput_type: multiple_choice\ndescription: hi\n", "description"),
    ("task: t\noutput_type: multiple_choice\ndataset_path: json\ndoc_to_text: q\ndoc_to_choice: c\n"
     "doc_to_target: g\ntest_split: test\ndataset_kwargs: {data_files: {test: MISSING}}\n", "does not exist"),
    ("task: [\n", "not valid YAML"),
])
def test_bad_task_file_is_one_line_exit_2_and_writes_nothing(tmp_path, capsys, yaml_text, message):
    from swapkl import cli

    task = tmp_path / "t.yaml"
    task.write_text(yaml_text.replace("MISSING", str(tmp_path / "missing.jsonl")))
    (tmp_path / "nomodel").mkdir()
    (tmp_path / "nomodel" / "config.json").write_text("{}")  # the paths pass: the task file is what is refused
    code = cli.main(["relevance", "--model", str(tmp_path / "nomodel"), "--tasks", str(task),
                     "--out", str(tmp_path / "rel.parquet")])
    errors = [line for line in capsys.readouterr().err.split("\n") if line.startswith("swapkl:")]
    assert code == 2 and len(errors) == 1 and message in errors[0], errors
    assert sorted(p.name for p in tmp_path.iterdir()) == ["nomodel", "t.yaml"]


@pytest.mark.parametrize("doc,message", [
    ({"query": "a b", "choices": ["x"], "gold": 0}, "two or more"),
    ({"query": "a b", "choices": ["x", "y"], "gold": 2}, "not one of its 2 choices"),
    ({"query": "", "choices": ["x", "y"], "gold": 0}, "empty context"),
])
def test_bad_documents_name_file_and_line(tmp_path, doc, message):
    from swapkl.errors import SwapKLError

    ok = {"query": "a b", "choices": ["x", "y"], "gold": 1}
    path = write_task(str(tmp_path), "t", [ok, doc])
    with pytest.raises(SwapKLError, match=message) as e:
        load_task(path)
    assert "t.jsonl:2" in str(e.value)


# -- tasks loaded by lm-eval (the study's hub tasks), offline on local task files ----------------------------------

def test_harness_tasks_score_as_swapkls_own_task_reader(tmp_path, monkeypatch):
    """The hub-task path (lm-eval builds the requests and scores them with ``process_results``; swapkl supplies
    the log-likelihoods) on local task files gives, for the base model and every deletion, the per-question
    acc and acc_norm and the relevance rows that swapkl's own reader gives (itself checked against HFLM above)."""
    from swapkl.relevance.harness_tasks import harness_relevance, load_harness_tasks

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    model = tiny_model("llama", n_layers=N_LAYERS, vocab=97, seed=1)
    tok = eos_char_tokenizer()
    tasks = _tasks(tmp_path / "tasks")
    engine = ProbeEngine(model)
    loaded = load_harness_tasks([t.name for t in tasks], include_path=str(tmp_path / "tasks"), include_defaults=False)
    assert [h.name for h in loaded] == [t.name for t in tasks]
    for h, t in zip(loaded, tasks):
        assert h.random_baseline == pytest.approx(t.random_baseline, rel=1e-12)
        rows, per_variant = harness_relevance(engine, h, tok, model="tiny", revision=None, batch_size=5)
        own = task_relevance(engine, t, tok, model="tiny", revision=None, batch_size=5)
        assert set(per_variant) == set(own.predictions)
        for key, p in per_variant.items():
            for metric in ("acc", "acc_norm"):
                assert p[metric].tolist() == own.predictions[key][metric].tolist(), (t.name, key, metric)
        pd.testing.assert_frame_equal(pd.DataFrame(rows), pd.DataFrame(own.rows), check_exact=True)


def test_unknown_harness_task_is_one_line_error(tmp_path):
    from swapkl.relevance.harness_tasks import load_harness_tasks

    _tasks(tmp_path / "tasks")
    with pytest.raises(SwapKLError, match="lm-eval knows no task 'no_such_task'"):
        load_harness_tasks(["no_such_task"], include_path=str(tmp_path / "tasks"), include_defaults=False)


def test_relevance_statistics_from_the_pipelines_own_files(tmp_path):
    """summarise_relevance on a real relevance file and a real aggregate (probe + representation of the same
    checkpoint): one row per task, with BI read from the representation rows the probe wrote."""
    import pandas as pd

    from swapkl.probes.aggregate import aggregate, read_aggregate
    from swapkl.probes.aggregate import AggregateJob
    from swapkl.data.data_spec import DataSpec
    from swapkl.probes.probe import run_probe
    from swapkl.probes.probe_jobs import ProbeJob
    from swapkl.relevance.accrel import run_relevance
    from swapkl.relevance.relevance_jobs import RelevanceJob
    from swapkl.relevance.relevance_stats import relevance_statistics, summarise_relevance

    src = tmp_path / "model"
    model = tiny_model("llama", n_layers=6, vocab=97, seed=1)  # 4 blocks ranked once the boundary ones are out
    model.save_pretrained(src)
    eos_char_tokenizer().save_pretrained(src)
    plain = _tasks(tmp_path / "tasks")[0]
    # a task whose gold answer is the full model's own pick: the base model is above chance, so AccRel is defined
    base = task_relevance(ProbeEngine(model), plain,
                          eos_char_tokenizer(), model="tiny", revision=None).loglikelihoods[BASE]
    write_task(tmp_path / "tasks", "model_pick", [{"query": d.context, "choices": list(d.choices),
                                                   "gold": int(np.argmax(x))} for d, x in zip(plain.docs, base)])
    tasks = [plain, load_task(str(tmp_path / "tasks" / "model_pick.yaml"))]
    np.save(tmp_path / "probe.npy", random_tokens(97, 4, 16, seed=5).numpy())
    probe, rep, agg = tmp_path / "probe.parquet", tmp_path / "repr.parquet", tmp_path / "agg.parquet"
    run_probe(ProbeJob(model=str(src), out=str(probe), pairs="adjacent",
                       data=DataSpec(tokens=str(tmp_path / "probe.npy")),
                       device="cpu", repr_out=str(rep), metadata={"model": "tiny", "revision": "step1"}))
    aggregate(AggregateJob(probe_files=[probe], repr_files=[rep], out=str(agg), pair_sets={"tiny": ["adjacent"]},
                           n_boot=10))
    rel = tmp_path / "rel.parquet"
    run_relevance(RelevanceJob(model=str(src), task_files=[t.yaml_path for t in tasks], out=str(rel), label="tiny",
                               revision_label="step1",
                               device="cpu"))
    out = tmp_path / "stats.parquet"
    summarise_relevance(str(rel), str(agg), str(out))
    st = pd.read_parquet(out)
    assert sorted(st["task"]) == ["model_pick", "tiny_plain"] and (st["metric"] == "acc").all()
    checked = 0
    bi = pd.read_parquet(rep).query("metric == 'bi'").sort_values("layer_i")["value"].to_numpy()
    table = pd.read_parquet(rel)
    for _, r in st.iterrows():
        x = table[(table["task"] == r["task"]) & (table["metric"] == "acc")].sort_values("layer")["relevance"]
        ok = np.isfinite(x.to_numpy())[1:-1]
        if ok.sum() >= 2 and np.ptp(x.to_numpy()[1:-1][ok]) > 0:
            want = np.corrcoef(x.to_numpy()[1:-1][ok], bi[1:-1][ok])[0, 1]
            assert r["pearson"] == pytest.approx(want, abs=1e-12)
            checked += 1
    assert checked >= 1, "no task with defined, varying AccRel: the check would compare nothing"
    pd.testing.assert_frame_equal(st, relevance_statistics(table, read_aggregate(agg)))
    # the command line writes the same table and draws its figure
    from swapkl import cli

    assert cli.main(["relevance-stats", "--input", str(rel), "--aggregate", str(agg),
                     "--out", str(tmp_path / "cli.parquet")]) == 0
    pd.testing.assert_frame_equal(pd.read_parquet(tmp_path / "cli.parquet"), st)
    assert cli.main(["plot-relevance", "confusion", "--input", str(out), "--model", "tiny", "--revision", "step1",
                     "--out-png", str(tmp_path / "k.png"), "--out-pdf", str(tmp_path / "k.pdf")]) == 0
    assert (tmp_path / "k.png").stat().st_size > 1000
    # an alias of `swapkl figures relevance-confusion`: the same bytes
    assert cli.main(["figures", "relevance-confusion", "--stats", str(out), "--model", "tiny", "--revision", "step1",
                     "--out", str(tmp_path / "f")]) == 0
    assert (tmp_path / "f.png").read_bytes() == (tmp_path / "k.png").read_bytes()


def test_run_relevance_scores_harness_tasks_and_named_lm_sets(tmp_path, monkeypatch):
    """The study's path through run_relevance: lm-eval task names (here resolved offline from the local task
    folder instead of the hub) and named LM data give the rows that local task files and --lm data give."""
    import functools

    import pandas as pd

    from swapkl.relevance import accrel, harness_tasks
    from swapkl.relevance.relevance_jobs import RelevanceJob
    from swapkl.tables import provenance
    from swapkl.data.data_spec import DataSpec
    from swapkl.relevance.accrel import run_relevance
    from swapkl.relevance.relevance_jobs import RelevanceJob

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    src = _saved_model(tmp_path)
    tasks = _tasks(tmp_path / "tasks")
    monkeypatch.setattr(accrel, "load_harness_tasks", functools.partial(
        harness_tasks.load_harness_tasks, include_path=str(tmp_path / "tasks"), include_defaults=False))
    text = tmp_path / "text.txt"
    text.write_text("\n\n".join(" ".join(random.Random(i).choices(WORDS, k=12)) for i in range(6)))
    lm = DataSpec(text_file=str(text), n_seqs=4, seq_len=40)
    hub, local = tmp_path / "hub.parquet", tmp_path / "local.parquet"
    run_relevance(RelevanceJob(model=str(src), task_files=[], out=str(hub), harness_tasks=[t.name for t in tasks],
                               lm_sets={"c4": lm}, label="tiny",
                               device="cpu"))
    run_relevance(RelevanceJob(model=str(src), task_files=[t.yaml_path for t in tasks], out=str(local), lm_data=lm,
                               lm_name="c4", label="tiny",
                               device="cpu"))
    pd.testing.assert_frame_equal(pd.read_parquet(hub), pd.read_parquet(local), check_exact=True)
    prov = provenance.read(str(hub))
    assert prov["tasks"]["tiny_plain"]["lm_eval_task"] == "tiny_plain" and set(prov["lm_sets"]) == {"c4"}
    with pytest.raises(SwapKLError, match="task names repeat"):
        run_relevance(RelevanceJob(model=str(src), task_files=[], out=str(tmp_path / "x.parquet"), lm_data=lm,
                                   lm_sets={"lm": lm}, device="cpu"))


# -- pruned sets of a pruning table against lm-eval on the materialised pruned models --------------------------

def _pruning_table(path, n_layers, rows, model=None):
    """A pruning table holding ``rows`` (the columns relevance reads; the cost columns stay null), made from the
    checkpoint folder ``model`` (its weights_sha256 in the provenance) when given."""
    import pyarrow as pa

    from swapkl.model.checkpoint_dir import weights_sha256
    from swapkl.tables.parquet_io import write_parquet
    from swapkl.tables.schemas import PRUNING_SCHEMA

    full = [dict(model="tiny", revision="final", n_layers=n_layers, random_draw=None, fixed_set=None,
                 merged_layers=None, feasible=True) | r for r in rows]
    prov = {} if model is None else {"weights_sha256": weights_sha256(str(model))}
    write_parquet(pa.Table.from_pylist(full, schema=PRUNING_SCHEMA), str(path), prov)


#: guide, budget, removed, extra columns: two guides share [1, 3] (scored once), a budget-1 set equals a
#: single-block deletion, a LaCo merge, a random draw, a fixed set; base, infeasible and summary rows are skipped
PRUNED_ROWS = [
    dict(guide="base", budget=0, removed_layers=[]),
    dict(guide="interchange", budget=1, removed_layers=[2]),
    dict(guide="interchange", budget=2, removed_layers=[1, 3]),
    dict(guide="bi", budget=2, removed_layers=[3, 1]),
    dict(guide="deletion", budget=3, removed_layers=[0, 2, 4]),
    dict(guide="laco", budget=1, removed_layers=[2], merged_layers=[1]),
    dict(guide="random", budget=2, removed_layers=[0, 4], random_draw=0),
    dict(guide="fixed", budget=2, removed_layers=[2, 3], fixed_set="middle"),
    dict(guide="sleb_greedy", budget=3, removed_layers=None, feasible=False),
    dict(guide="random_mean", budget=2, removed_layers=None),
]


def _materialise(src, folder, removed, merged):
    """The pruned checkpoint on disk: LaCo's merged slots get the float32 average of their block and the next
    one (written into the source weights, independently of swapkl.model.merge), then ``swapkl export`` removes."""
    from transformers import AutoModelForCausalLM

    if merged:
        model = AutoModelForCausalLM.from_pretrained(src, torch_dtype=torch.float32)
        blocks = ref.block_list(model)
        with torch.no_grad():
            for i in merged:
                for p, q in zip(blocks[i].parameters(), blocks[i + 1].parameters()):
                    p.copy_((p + q) / 2)
        merged_src = folder.parent / (folder.name + "-merged-source")
        model.save_pretrained(merged_src)
        eos_char_tokenizer().save_pretrained(merged_src)
        src = merged_src
    export_checkpoint(str(src), str(folder), remove=list(removed), device="cpu")
    return folder


def test_pruned_set_relevance_equals_lm_eval_on_each_materialised_pruned_model(tmp_path, monkeypatch):
    """run_relevance with a pruning table: for each distinct pruned model (deduplicated across guides), the
    engine's per-question acc and acc_norm equal lm-eval HFLM's on the checkpoint materialised by swapkl export,
    and every row of the table holds that model's accuracy and AccRel; single-block rows are unchanged."""
    from swapkl.relevance.accrel import COLUMNS, run_relevance
    from swapkl.relevance.relevance_jobs import RelevanceJob
    from swapkl.relevance.scored_models import pruned_sets_from_table, scan_for

    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    n = 5
    src = tmp_path / "model"
    model = tiny_model("llama", n_layers=n, vocab=97, seed=1)
    model.save_pretrained(src)
    tok = eos_char_tokenizer()
    tok.save_pretrained(src)
    tasks = _tasks(tmp_path / "tasks")
    pruning = tmp_path / "pruning.parquet"
    _pruning_table(pruning, n, PRUNED_ROWS, model=src)
    out = tmp_path / "rel.parquet"
    run_relevance(RelevanceJob(model=str(src), task_files=[t.yaml_path for t in tasks], out=str(out),
                               pruning=str(pruning), label="tiny",
                               revision_label="final", device="cpu", batch_size=5))
    table = pd.read_parquet(out)
    assert list(table.columns) == COLUMNS

    engine = ProbeEngine(model)
    sets = pruned_sets_from_table(str(pruning), n_layers=n)
    assert [(s.guide, s.budget) for s in sets] == [(r["guide"], r["budget"]) for r in PRUNED_ROWS[1:8]]
    with scan_for(engine, sets) as scan:
        # 5 deletions + [1, 3] + [0, 2, 4] + LaCo + [0, 4] + [2, 3]: [2] is deletion 2, [3, 1] is [1, 3]
        assert len(scan.variants) == n + 5 and scan.n_distinct_sets == 5
        per_task = {t.name: task_relevance(engine, t, tok, model="tiny", revision="final", batch_size=5, scan=scan)
                    for t in tasks}
    # the single-block rows are exactly those of a run without the pruning table
    singles = table[table["layer"].notna()].reset_index(drop=True)
    alone = pd.DataFrame([r for t in tasks for r in task_relevance(engine, t, tok, model="tiny", revision="final",
                                                                    batch_size=5).rows])
    pd.testing.assert_frame_equal(singles[COLUMNS[:10]].astype({"layer": "int64"}), alone[COLUMNS[:10]],
                                  check_exact=True)
    assert singles["guide"].isna().all() and [list(x) for x in singles["removed_layers"]] == \
        [[layer] for layer in singles["layer"]]

    checked = set()
    for s, (columns, key) in zip(sets, scan.entries[n:]):
        removed, merged = tuple(sorted(s.removed)), s.merged
        if (removed, merged) in checked:
            continue
        checked.add((removed, merged))
        folder = _materialise(src, tmp_path / f"pruned-{'-'.join(map(str, removed))}-m{len(merged)}", removed,
                              merged)
        samples = _lm_eval(folder, tmp_path / "tasks", [t.name for t in tasks])
        for task in tasks:
            theirs = samples[task.name]
            their_lls = [[r[0] for r in x["filtered_resps"]] for x in theirs]
            ours = per_task[task.name].loglikelihoods[key]
            assert max(abs(a - b) for x, y in zip(their_lls, ours) for a, b in zip(x, y)) <= LL_TOL
            assert _margins(their_lls, [d.choices for d in task.docs]) > 2 * LL_TOL
            for metric in ("acc", "acc_norm"):
                want = [x[metric] for x in theirs]
                assert per_task[task.name].predictions[key][metric].tolist() == want
                # every guide's row that chose this model holds its accuracy and AccRel
                rows = table[(table["task"] == task.name) & (table["metric"] == metric) & table["layer"].isna()]
                same = [r for r in rows.itertuples() if tuple(sorted(r.removed_layers)) == removed
                        and tuple(r.merged_layers if r.merged_layers is not None else ()) == merged]
                assert same and all(r.accuracy == np.mean(want) for r in same)
                assert all(r.relevance == acc_rel(r.accuracy, r.base_accuracy, r.random_baseline)
                           or (math.isnan(r.relevance) and r.base_accuracy <= r.random_baseline) for r in same)
    assert len(checked) == 6  # the five distinct pruned sets and the budget-1 set (deletion 2) itself
    pruned_rows = table[table["layer"].isna()]
    assert sorted(set(zip(pruned_rows["guide"], pruned_rows["budget"]))) == \
        sorted((r["guide"], r["budget"]) for r in PRUNED_ROWS[1:8])
    assert pruned_rows.loc[pruned_rows["guide"] == "random", "random_draw"].eq(0).all()
    assert pruned_rows.loc[pruned_rows["guide"] == "fixed", "fixed_set"].eq("middle").all()


def test_a_pruning_table_of_another_model_is_refused(tmp_path):
    import pyarrow as pa

    from swapkl.tables.parquet_io import write_parquet
    from swapkl.relevance.scored_models import pruned_sets_from_table
    from swapkl.tables.schemas import PRUNING_SCHEMA

    path = tmp_path / "pruning.parquet"
    _pruning_table(path, 5, PRUNED_ROWS[:3])
    with pytest.raises(SwapKLError, match=r"describes models of \[5\] blocks, not 4"):
        pruned_sets_from_table(str(path), n_layers=4)
    rows = pa.Table.from_pylist([dict(model="tiny", n_layers=5, guide="bi", budget=1, removed_layers=[2], feasible=True)],
                                schema=PRUNING_SCHEMA)
    write_parquet(rows, str(path), {"weights_sha256": "aa" * 32})
    with pytest.raises(SwapKLError, match="other weights"):
        pruned_sets_from_table(str(path), n_layers=5, weights_sha256="bb" * 32)
    assert [s.removed for s in pruned_sets_from_table(str(path), n_layers=5, weights_sha256="aa" * 32)] == [(2,)]
    # a choice of guides keeps their rows only, and names no guide the table lacks
    _pruning_table(path, 5, PRUNED_ROWS)
    got = pruned_sets_from_table(str(path), n_layers=5, guides=["bi", "laco"])
    assert [(s.guide, s.removed, s.merged) for s in got] == [("bi", (3, 1), ()), ("laco", (2,), (1,))]
    with pytest.raises(SwapKLError, match="has no guide beam"):
        pruned_sets_from_table(str(path), n_layers=5, guides=["beam"])
