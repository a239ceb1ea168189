"""The snowball construction (Theorem 1 of "Rethinking Layer Relevance"): checked by hand on the stock
forward and by swapkl's own scorers (BI, AccRel, deletion KL, interchange and replacement probes)."""

from __future__ import annotations

import json
import random
import subprocess
import sys

import numpy as np
import pandas as pd
import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

from swapkl.relevance.construct import CRITICAL, N_LAYERS, construct
from swapkl.model.engine import ProbeEngine
from swapkl.pruning.guides import get_guide
from swapkl.pruning.guides.context import GuideContext
from swapkl.pruning.guides.protocol import protocol_scores
from swapkl.probes.probe import run_probe
from swapkl.probes.probe_jobs import ProbeJob
from swapkl.data.data_spec import DataSpec
from swapkl.relevance.accrel import task_relevance
from swapkl.pruning.selection import bi_scores
from swapkl.relevance.tasks import load_task, write_task

EPS = 0.01


def _toy_task(folder, n_docs: int = 24, seed: int = 0) -> str:
    """A task in the demo's ``demo_next_word`` format: word contexts, four one-word choices."""
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(200)]
    docs = []
    for _ in range(n_docs):
        choices = rng.sample(words, 4)
        docs.append({"query": " ".join(rng.choice(words) for _ in range(rng.randrange(5, 10))),
                     "choices": choices, "gold": rng.randrange(4)})
    return write_task(str(folder), "toy_next_word", docs)


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    folder = tmp_path_factory.mktemp("snowball")
    yaml = _toy_task(folder / "task")
    out = folder / "model"
    manifest = construct(yaml, EPS, str(out))
    return yaml, str(out), manifest


def _hand_scores(model, tok, task, drop=()):
    """Accuracy by hand: each choice's summed log-probability under the stock forward with blocks removed."""
    keep = torch.nn.ModuleList([b for i, b in enumerate(model.model.layers) if i not in drop])
    full, model.model.layers = model.model.layers, keep
    hits, bis = [], []
    try:
        for doc in task.docs:
            ctx = tok.encode(doc.context)
            scores = []
            for choice in doc.choices:
                ids = torch.tensor([ctx + tok.encode(" " + choice)])
                with torch.no_grad():
                    lp = torch.log_softmax(model(input_ids=ids).logits[0].double(), -1)
                scores.append(sum(float(lp[t - 1, ids[0, t]]) for t in range(len(ctx), ids.shape[1])))
            hits.append(int(np.argmax(scores)) == doc.gold)
    finally:
        model.model.layers = full
    return float(np.mean(hits))


def test_bi_is_eps_and_lowest_yet_the_block_is_critical(built):
    yaml, out, manifest = built
    task = load_task(yaml)
    model = AutoModelForCausalLM.from_pretrained(out).eval()
    tok = AutoTokenizer.from_pretrained(out)
    assert len(model.model.layers) == N_LAYERS >= 3
    assert _hand_scores(model, tok, task) == 1.0
    assert _hand_scores(model, tok, task, (CRITICAL,)) == 0.0
    # BI by hand from the stock hidden states, over every position of every request (context + " " + choice),
    # the set the construction sized the update on. Tolerance: the update is computed in float32 (relative
    # error ~1e-7 per position, any CPU), so 1 - cos carries ~2e-7 relative error; 1e-4 is far above it.
    cos = []
    for doc in task.docs:
        for choice in doc.choices:
            ids = torch.tensor([tok.encode(doc.context + " " + choice)])
            with torch.no_grad():
                hs = model(input_ids=ids, output_hidden_states=True).hidden_states
            cos.append(torch.nn.functional.cosine_similarity(hs[CRITICAL].double(), hs[CRITICAL + 1].double(),
                                                             dim=-1)[0])
    assert 1.0 - float(torch.cat(cos).mean()) == pytest.approx(EPS, rel=1e-4)
    assert manifest["bi"][CRITICAL] == pytest.approx(EPS, rel=1e-4)
    assert manifest["accuracy"] == 1.0 and manifest["accuracy_without_critical"] == 0.0


def test_swapkl_scorers_rank_the_critical_block(built, tmp_path):
    yaml, out, _ = built
    task = load_task(yaml)
    model = AutoModelForCausalLM.from_pretrained(out).eval()
    tok = AutoTokenizer.from_pretrained(out)
    rows = task_relevance(ProbeEngine(model), task, tok, model="snowball", revision=None).rows
    acc = {r["layer"]: r for r in rows if r["metric"] == "acc"}
    assert acc[CRITICAL]["base_accuracy"] == 1.0 and acc[CRITICAL]["accuracy"] == 0.0
    assert acc[CRITICAL]["relevance"] == 1.0 == max(r["relevance"] for r in acc.values())
    # the probes and BI on windows of the task's text (each document's context and answer, cut to one length)
    seqs = [tok.encode(d.context + " " + d.choices[d.gold]) for d in task.docs]
    width = min(len(s) for s in seqs)
    np.save(tmp_path / "w.npy", np.array([s[:width] for s in seqs], dtype=np.int64))
    run_probe(ProbeJob(model=out, out=str(tmp_path / "p.parquet"), data=DataSpec(tokens=str(tmp_path / "w.npy")),
                       device="cpu",
                       repr_out=str(tmp_path / "r.parquet"), batch_size=8))
    probe, rep = pd.read_parquet(tmp_path / "p.parquet"), pd.read_parquet(tmp_path / "r.parquet")
    bi = bi_scores(rep, N_LAYERS)
    ctx = GuideContext(probe, rep, N_LAYERS, [1], 1)
    scores = {g: protocol_scores(ctx, g) for g in ("deletion", "interchange", "replacement_max")}
    assert int(np.argmin(bi)) == CRITICAL  # cosine: the most removable block
    assert get_guide("bi").select(ctx).removed[(1, None)].removed == (CRITICAL,)  # the BI guide removes it first
    assert int(np.argmax(scores["deletion"])) == CRITICAL
    assert int(np.argmax(scores["interchange"])) == CRITICAL
    # replacement (max over directions, min over partners): block 0 scores higher, the critical block is
    # next (tied with block 1, its partner), far above the blocks that can go
    assert sorted(scores["replacement_max"]).index(scores["replacement_max"][CRITICAL]) >= N_LAYERS - 3
    assert scores["replacement_max"][CRITICAL] > 100 * max(scores["replacement_max"][5:])


@pytest.mark.slow
def test_cli_saves_a_checkpoint_and_refuses_bad_eps(tmp_path):
    yaml = _toy_task(tmp_path / "task", n_docs=8, seed=1)
    run = lambda *a: subprocess.run([sys.executable, "-m", "swapkl", "construct", "--task", yaml, *a],  # noqa: E731
                                    capture_output=True, text=True)
    bad = run("--eps", "0.5", "--out", str(tmp_path / "bad"))
    assert bad.returncode == 2 and "eps 0.5" in bad.stderr and not (tmp_path / "bad").exists()
    ok = run("--eps", "0.001", "--out", str(tmp_path / "m"))
    assert ok.returncode == 0, ok.stderr
    manifest = json.loads((tmp_path / "m" / "snowball.json").read_text())
    assert manifest["bi"][CRITICAL] == pytest.approx(0.001, rel=1e-3)
    assert (tmp_path / "m" / "model.safetensors").is_file()


def test_a_foreign_folder_is_refused_before_the_build(tmp_path):
    from swapkl.cli import main

    yaml = _toy_task(tmp_path / "task", n_docs=4)
    (tmp_path / "theirs").mkdir()
    (tmp_path / "theirs" / "notes.txt").write_text("keep")
    assert main(["construct", "--task", yaml, "--out", str(tmp_path / "theirs")]) == 2
    assert [p.name for p in (tmp_path / "theirs").iterdir()] == ["notes.txt"]
    assert main(["construct", "--task", yaml, "--eps", "0", "--out", str(tmp_path / "new")]) == 2
    assert not (tmp_path / "new").exists()


def test_multi_word_choices_are_refused(tmp_path):
    from swapkl.relevance.construct import build_snowball
    from swapkl.errors import SwapKLError

    docs = [{"query": "a b c", "choices": ["d e", "e d"], "gold": 0}, {"query": "b c", "choices": ["a", "d"], "gold": 1}]
    task = load_task(write_task(str(tmp_path), "two_words", docs))
    with pytest.raises(SwapKLError, match="document 0 choice 0.*one-word choices"):
        build_snowball(task, EPS)
