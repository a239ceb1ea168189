"""Generative lm-eval tasks (GSM8K-like ``generate_until``) scored on materialised pruned models
(swapkl.relevance.generation, swapkl.relevance.pruned_model, swapkl.relevance.task_generation), against independent
computations:

* lm-evaluation-harness's ``simple_evaluate`` with ``HFLM`` loading a pruned checkpoint that the test builds
  itself (the stock model with blocks deleted from its ``nn.ModuleList``, ``save_pretrained``): the generated text
  and the ``exact_match`` of each filter agree question by question;
* GSM8K's two regex filters and its ``exact_match`` settings on hand-written responses with hand-derived scores;
* task-calibrated pruning with a generative curve task: its rows against lm-eval on the pruned checkpoints, and
  the accuracy guide's first step against lm-eval's ``exact_match`` on the training split.

The task is a tiny local GSM8K (questions ``a + b``, worked answers ending ``#### n``, two-shot, GSM8K's
filters and metric settings); the model is a tiny Llama trained here for a few seconds (never the hub).
"""

from __future__ import annotations

import functools
import json
import random

import numpy as np
import pandas as pd
import pytest
import torch
import yaml

from swapkl.relevance.generation import generate, harness_lm
from swapkl.relevance.pruned_model import materialise
from swapkl.relevance.task_splits import CALIBRATION, EVALUATION, load_split, task_manager
from test_task_pruning import TASKS, _split_tasks, prune_on_tasks

N_LAYERS = 4
NAME = "tiny_gsm"
FILTERS = ("strict-match", "flexible-extract")
#: GSM8K's filters and exact_match settings, as lm-eval's gsm8k.yaml has them
GSM8K_SCORING = {
    "metric_list": [{"metric": "exact_match", "aggregation": "mean", "higher_is_better": True, "ignore_case": True,
                     "ignore_punctuation": False, "regexes_to_ignore": [",", "\\$", "(?s).*#### ", "\\.$"]}],
    "filter_list": [{"name": "strict-match",
                     "filter": [{"function": "regex", "regex_pattern": "#### (\\-?[0-9\\.\\,]+)"},
                                {"function": "take_first"}]},
                    {"name": "flexible-extract",
                     "filter": [{"function": "regex", "group_select": -1,
                                 "regex_pattern": "(-?[$0-9.,]{2,})|(-?[0-9]+)"}, {"function": "take_first"}]}],
}


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


def gen_tokenizer():
    """Characters as tokens, plus the GSM8K markers ``Question:``, ``Answer:`` and ``#### `` as one token each."""
    from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    words = ["Question:", "Answer:", "#### "]
    chars = list("abcdefghijklmnopqrstuvwxyz0123456789 .,:?\n+=$-")
    vocab = {"<pad>": 0, "<unk>": 1, "<eos>": 2, **{w: i + 3 for i, w in enumerate(words + chars)}}
    t = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    t.pre_tokenizer = pre_tokenizers.Split(Regex("Question:|Answer:|#### |[\\s\\S]"), behavior="isolated")
    t.decoder = decoders.Fuse()
    return PreTrainedTokenizerFast(tokenizer_object=t, pad_token="<pad>", unk_token="<unk>", eos_token="<eos>")


def _docs(seed: int, n: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        a, b = rng.randrange(10), rng.randrange(10)
        out.append({"question": f"{a} + {b}", "answer": _worked(a, b).split("Answer: ")[1]})
    return out


def write_gen_task(folder, train: list[dict], test: list[dict], name: str = NAME, test_split: str = "test") -> str:
    """A local GSM8K-like task: ``Question: ..\\nAnswer:``, two-shot from the training split, greedy generation until
    ``Question:`` or a blank line, at most 16 tokens, GSM8K's filters and exact_match."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {}
    for split, docs in (("train", train), ("test", test)):
        files[split] = str(folder / f"{name}_{split}.jsonl")
        with open(files[split], "w") as f:
            f.writelines(json.dumps(d) + "\n" for d in docs)
    cfg = {"task": name, "dataset_path": "json", "dataset_kwargs": {"data_files": files},
           "output_type": "generate_until", "training_split": "train", "fewshot_split": "train",
           "test_split": test_split, "doc_to_text": "Question: {{question}}\nAnswer:", "doc_to_target": "{{answer}}",
           "num_fewshot": 2, "generation_kwargs": {"until": ["Question:", "\n\n"], "do_sample": False,
                                                   "temperature": 0.0, "max_gen_toks": 16}} | GSM8K_SCORING
    path = folder / f"{name}.yaml"
    path.write_text(yaml.safe_dump(cfg, sort_keys=False))
    return str(path)


def _worked(a: int, b: int) -> str:
    return f"Question: {a} + {b}\nAnswer: {a} + {b} = {a + b}\n#### {a + b}"


@functools.cache
def _trained_state() -> tuple[dict, object]:
    """A tiny Llama trained for 80 steps on three-shot texts of the task's format: it writes GSM8K's answer
    format (``a + b = c`` then ``#### c``), with a sum that is right now and then."""
    from transformers import LlamaConfig, LlamaForCausalLM

    torch.manual_seed(3)
    cfg = LlamaConfig(vocab_size=len(gen_tokenizer()), hidden_size=32, num_hidden_layers=N_LAYERS,
                      num_attention_heads=4, num_key_value_heads=2, intermediate_size=64, max_position_embeddings=128,
                      initializer_range=0.3)
    model, tok, rng = LlamaForCausalLM(cfg), gen_tokenizer(), random.Random(0)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    for _ in range(80):
        enc = [tok.encode("\n\n".join(_worked(rng.randrange(10), rng.randrange(10)) for _ in range(3)))
               for _ in range(16)]
        ids = torch.tensor([e[: min(map(len, enc))] for e in enc])
        loss = model(input_ids=ids, labels=ids).loss
        opt.zero_grad()
        loss.backward()
        opt.step()
    return {k: v.detach().clone() for k, v in model.state_dict().items()}, cfg


def _model():
    from transformers import LlamaForCausalLM

    state, cfg = _trained_state()
    model = LlamaForCausalLM(cfg)
    model.load_state_dict(state)
    return model.eval()


def _saved(tmp_path):
    src = tmp_path / "model"
    model = _model()
    model.save_pretrained(src)
    gen_tokenizer().save_pretrained(src)
    return src, model


def naive_pruned(src, removed, out) -> str:
    """The test's own pruned checkpoint: the stock model reloaded, blocks deleted from its ModuleList, saved."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    if not removed:
        return str(src)
    model = AutoModelForCausalLM.from_pretrained(src)
    model.model.layers = torch.nn.ModuleList([b for k, b in enumerate(model.model.layers) if k not in removed])
    model.config.num_hidden_layers = len(model.model.layers)
    if getattr(model.config, "layer_types", None) is not None:  # per-layer list: kept by slot
        model.config.layer_types = model.config.layer_types[: len(model.model.layers)]
    model.save_pretrained(out)
    AutoTokenizer.from_pretrained(src).save_pretrained(out)
    return str(out)


def lm_eval_samples(path, folder, name: str = NAME) -> dict[str, dict[int, dict]]:
    """lm-eval's own run on a saved checkpoint: filter -> doc_id -> {text (raw), answer (filtered), exact_match}."""
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    lm = HFLM(pretrained=str(path), device="cpu", batch_size=4)
    out = lm_eval.simple_evaluate(model=lm, tasks=[name], log_samples=True,
                                  task_manager=TaskManager(include_path=str(folder), include_defaults=False))
    per: dict[str, dict[int, dict]] = {}
    for s in out["samples"][name]:
        per.setdefault(s["filter"], {})[s["doc_id"]] = {"text": s["resps"][0][0], "answer": s["filtered_resps"][0],
                                                        "exact_match": s["exact_match"]}
    return per


def test_generation_on_materialised_models_matches_lm_eval_question_by_question(tmp_path):
    src, model = _saved(tmp_path)
    folder = tmp_path / "tasks"
    train, test = _docs(0, 8), _docs(1, 10)
    write_gen_task(folder, train, test)
    # gold: lm-eval's own extraction of the unpruned model's answer, by the flexible filter on every fourth
    # question and by the strict one on the next even one; "x", which neither filter can extract, elsewhere. So
    # each filter's exact_match is 1 somewhere and 0 elsewhere whatever sums the model happens to write.
    first = lm_eval_samples(src, folder)
    by = {0: "flexible-extract", 2: "strict-match"}
    gold = [first[by[d % 4]][d]["answer"] if d % 4 in by else "x" for d in range(len(test))]
    gold = ["x" if g == "[invalid]" else g for g in gold]
    write_gen_task(folder, train, [t | {"answer": f"#### {g}"} for t, g in zip(test, gold)])
    tok = gen_tokenizer()
    matches, strict, texts = [], [], {}
    for removed in [(), (1,), (0, 2)]:
        part = load_split(task_manager(str(folder), False), NAME, EVALUATION).parts[0]
        ours = generate(harness_lm(materialise(model, removed) if removed else model, tok, batch_size=4), part)
        want = lm_eval_samples(naive_pruned(src, removed, tmp_path / f"minus{removed}"), folder)
        assert ours.texts == [want["strict-match"][d]["text"] for d in range(len(test))]
        for f in FILTERS:
            assert ours.scores[f"exact_match,{f}"].tolist() == [want[f][d]["exact_match"] for d in range(len(test))]
        matches += ours.scores["exact_match,flexible-extract"].tolist()
        strict += ours.scores["exact_match,strict-match"].tolist()
        texts[removed] = ours.texts
    assert 0 < np.mean(matches) < 1 and 0 < np.mean(strict) < 1  # the scores are not all alike
    assert texts[(1,)] != texts[()] and texts[(0, 2)] != texts[()]  # removing blocks changes what is generated


class _Scripted:
    """An lm that answers each request with a fixed text (in the order of the documents)."""

    def __init__(self, texts):
        self.texts = texts

    def generate_until(self, instances, disable_tqdm=False):
        return [self.texts[i.doc_id] for i in instances]


def test_gsm8k_filters_and_exact_match_on_hand_written_answers(tmp_path):
    folder = tmp_path / "tasks"
    write_gen_task(folder, _docs(0, 4), [{"question": "40 + 2", "answer": "40 + 2 = 42\n#### 42"}] * 6)
    part = load_split(task_manager(str(folder), False), NAME, EVALUATION).parts[0]
    got = generate(_Scripted([
        "40 + 2 = 42\n#### 42",  # strict: "42"; flexible: the last number, "42"
        "The answer is $42.",  # strict: no "#### " line; flexible: "$42.", whose "$" and final "." are ignored
        "#### 4,2",  # strict "4,2": the comma is ignored, so it is 42; flexible likewise
        "#### -42",  # the sign stays: -42 is not 42
        "#### 42 or 43",  # strict takes the number after ####; flexible the last number, 43
        "#### 42.5",  # strict "42.5": only a final "." is ignored
    ]), part)
    assert got.scores["exact_match,strict-match"].tolist() == [1, 0, 1, 0, 1, 0]
    assert got.scores["exact_match,flexible-extract"].tolist() == [1, 1, 1, 0, 0, 0]


def test_task_pruning_scores_a_generative_curve_task_as_lm_eval(tmp_path):
    src, model = _saved(tmp_path)
    folder = _split_tasks(tmp_path)  # the multiple-choice tasks of the tables, with their own splits
    train = _docs(2, 12)
    write_gen_task(folder, train, _docs(3, 6))
    write_gen_task(tmp_path / "on_train", train, train, test_split="train")  # lm-eval on the training split
    out = tmp_path / "pruned.parquet"
    prune_on_tasks(str(src), str(out), calibrations=[{"name": "ta", "tasks": ["ta"]},
                                                       {"name": NAME, "tasks": [NAME], "curve": True}],
                     tasks=["ta"], curve_tasks=[NAME], methods=["original", "bi", "accuracy"], prune_fraction=0.25,
                     curve_methods=["accuracy"], curve_budgets=[1], include_path=str(folder), include_defaults=False,
                     device="cpu", seq_len=64, batch_size=4, label="tiny", revision_label="final")
    df = pd.read_parquet(out)
    gen = df[df["task"] == NAME]
    assert set(gen["calibration"]) == {NAME} and set(gen["calibration_kind"]) == {"curve"}
    assert set(df[df["task"] == "ta"]["calibration"]) == {"ta"}  # a curve calibration's models score its task only
    assert set(gen["metric"]) == {f"exact_match,{f}" for f in FILTERS}
    assert sorted(set(zip(gen["method"], gen["budget"]))) == [("accuracy", 1), ("original", 0)]
    for removed in {tuple(r) for r in gen["removed_layers"]}:
        want = lm_eval_samples(naive_pruned(src, removed, tmp_path / f"minus{removed}"), folder)
        for f in FILTERS:
            rows = gen[(gen["metric"] == f"exact_match,{f}") & gen["removed_layers"].map(lambda x: tuple(x) == removed)]
            assert rows["accuracy"].tolist() == [np.mean([s["exact_match"] for s in want[f].values()])] * len(rows)
    # the accuracy guide's one step: the block whose removal keeps the highest strict exact match on the training
    # split (lm-eval's, two-shot from the training split), the lowest such block on a tie
    train_acc = {b: np.mean([s["exact_match"] for s in lm_eval_samples(
        naive_pruned(src, (b,), tmp_path / f"train_minus{b}"), tmp_path / "on_train")["strict-match"].values()])
        for b in range(N_LAYERS)}
    assert len(set(train_acc.values())) > 1  # the guide has a choice to make, not a tie
    best = min(b for b, a in train_acc.items() if a == max(train_acc.values()))
    assert gen[gen["method"] == "accuracy"]["removed_layers"].map(tuple).tolist() == [(best,)] * 2
    assert TASKS[0] == "ta"
    calib = load_split(task_manager(str(folder), False), NAME, CALIBRATION)
    assert calib.split == "train" and calib.n_docs == len(train) and calib.generative


@pytest.mark.parametrize("arch", ["qwen3", "gpt2", "gpt_neox", "gemma3_text"])
def test_a_materialised_model_generates_as_its_exported_checkpoint(tmp_path, arch):
    """Sliding-window slots (Qwen3, Gemma-3), GPT-2's block-bound attention scale and GPT-NeoX: the materialised model's
    logits and greedy generation (KV cache) equal those of the checkpoint ``swapkl export`` writes and
    ``from_pretrained`` reloads."""
    from transformers import AutoModelForCausalLM

    from swapkl.export import export_checkpoint
    from tiny_models import tiny_model

    src = tmp_path / "model"
    model = tiny_model(arch, n_layers=5, seed=2).eval()
    model.save_pretrained(src)
    export_checkpoint(str(src), str(tmp_path / "pruned"), remove=[1, 3], device="cpu")
    exported = AutoModelForCausalLM.from_pretrained(tmp_path / "pruned").eval()
    ours = materialise(model, [1, 3])
    assert ours.config.num_hidden_layers == exported.config.num_hidden_layers == 3
    ids = torch.randint(0, 97, (2, 20), generator=torch.Generator().manual_seed(0))
    with torch.no_grad():
        assert torch.equal(ours(input_ids=ids).logits, exported(input_ids=ids).logits)
    kw = dict(max_new_tokens=12, do_sample=False, pad_token_id=0)
    assert torch.equal(ours.generate(ids, **kw), exported.generate(ids, **kw))
    assert ours.get_input_embeddings().weight.data_ptr() == model.get_input_embeddings().weight.data_ptr()
