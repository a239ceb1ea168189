"""LAMBADA-style last-word scoring on the engine against lm-eval's own loglikelihood scoring, question by
question, on the base model and on each materialised single-block deletion."""

from __future__ import annotations

import numpy as np
import pytest
import torch
import yaml
from test_relevance import LL_TOL, eos_char_tokenizer
from tiny_models import tiny_model

from swapkl.model.engine import ProbeEngine
from swapkl.export import export_checkpoint
from swapkl.relevance.lambada import continuation_scores, lambada_metrics, lambada_requests, split_last_word
from swapkl.probes.protocols.block_deletion import deletion
from swapkl.model.batch_loop import BASE

TEXTS = ["the cat sat on the mat", "a dog ran to the river", "the bird sang in the tree",
         "we walked up the hill", "the fish swam in the river", "the cat sat on the hill",
         "a lamp stood by the road", "the dog ran to the road"]
N_LAYERS = 3


def _fitted(folder):
    """A tiny Llama fitted to TEXTS (so that some last words are predicted greedily), with the tokenizer."""
    tok = eos_char_tokenizer()
    model = tiny_model("llama", n_layers=N_LAYERS, init=0.02, seed=2)
    ids = [torch.tensor([[tok.eos_token_id] + tok(t, add_special_tokens=False)["input_ids"]]) for t in TEXTS]
    opt = torch.optim.AdamW(model.parameters(), lr=1e-2)
    model.train()
    for step in range(400):
        x = ids[step % len(ids)]
        loss = torch.nn.functional.cross_entropy(model(input_ids=x, use_cache=False).logits[0, :-1], x[0, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
    model.eval().save_pretrained(folder)
    tok.save_pretrained(folder)
    return model.eval(), tok


def _task(folder):
    folder.mkdir()
    data = folder / "tiny_lambada.jsonl"
    data.write_text("".join(f'{{"text": "{t}"}}\n' for t in TEXTS))
    cfg = {"task": "tiny_lambada", "dataset_path": "json", "dataset_kwargs": {"data_files": {"test": str(data)}},
           "output_type": "loglikelihood", "test_split": "test",
           "doc_to_text": "{{text.split(' ')[:-1]|join(' ')}}", "doc_to_target": "{{' '+text.split(' ')[-1]}}",
           "metric_list": [{"metric": "perplexity", "aggregation": "perplexity", "higher_is_better": False},
                           {"metric": "acc", "aggregation": "mean", "higher_is_better": True}]}
    (folder / "tiny_lambada.yaml").write_text(yaml.safe_dump(cfg))


def _lm_eval(path, folder):
    import lm_eval
    from lm_eval.models.huggingface import HFLM
    from lm_eval.tasks import TaskManager

    lm = HFLM(pretrained=str(path), device="cpu", batch_size=4)
    out = lm_eval.simple_evaluate(model=lm, tasks=["tiny_lambada"], num_fewshot=0, log_samples=True,
                                  task_manager=TaskManager(include_path=str(folder), include_defaults=False))
    samples = sorted(out["samples"]["tiny_lambada"], key=lambda s: s["doc_id"])
    return [s["resps"][0][0] for s in samples], out["results"]["tiny_lambada"]


def test_split_last_word():
    assert split_last_word("a b  c") == ("a b ", " c")
    assert split_last_word("one two") == ("one", " two")


def test_last_word_scores_equal_lm_eval_question_by_question(tmp_path, monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    src = tmp_path / "model"
    model, tok = _fitted(src)
    _task(tmp_path / "tasks")
    requests = lambada_requests(TEXTS, tok, 64)
    variants = [deletion(b, N_LAYERS) for b in range(N_LAYERS)]
    ours = continuation_scores(ProbeEngine(model), requests, variants, batch_size=3)
    greedy_seen = 0
    for layer in [None, *range(N_LAYERS)]:
        key = BASE.key if layer is None else variants[layer].key
        path = src
        if layer is not None:
            path = tmp_path / f"minus{layer}"
            export_checkpoint(str(src), str(path), remove=[layer], device="cpu")
        resps, results = _lm_eval(path, tmp_path / "tasks")
        ll, greedy = ours[key]
        np.testing.assert_allclose(ll, [float(r[0]) for r in resps], rtol=0, atol=LL_TOL)
        assert greedy.tolist() == [bool(r[1]) for r in resps]
        metrics = lambada_metrics(ll, greedy)
        assert metrics["acc"] == pytest.approx(results["acc,none"])
        assert metrics["perplexity"] == pytest.approx(results["perplexity,none"], rel=1e-4)
        greedy_seen += int(greedy.sum())
    assert 0 < greedy_seen < 4 * len(TEXTS)  # both outcomes occur, so the comparison can fail
