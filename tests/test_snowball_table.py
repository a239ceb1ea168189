"""The snowball construction's per-block table (the workflow's results/snowball.parquet): every block's
accuracy without it recomputed by hand with the stock forward, on a subset of a task's documents."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from transformers import AutoModelForCausalLM, AutoTokenizer

from swapkl.errors import SwapKLError
from swapkl.relevance.construct import CRITICAL, N_LAYERS, construct
from swapkl.relevance.snowball_table import run_snowball
from swapkl.relevance.tasks import first_docs, load_task
from swapkl.tables.provenance import read
from test_construct import _hand_scores, _toy_task

EPS = 0.02
MAX_DOCS = 10


@pytest.fixture(scope="module")
def table(tmp_path_factory):
    folder = tmp_path_factory.mktemp("snowball_table")
    yaml = _toy_task(folder / "task", n_docs=24, seed=3)
    out = folder / "snowball.parquet"
    run_snowball(yaml, str(out), eps=EPS, max_docs=MAX_DOCS, seed=1)
    # the same construction saved as a checkpoint (deterministic in the task, eps and seed), for the hand check
    construct(yaml, EPS, str(folder / "model"), seed=1, max_docs=MAX_DOCS)
    return yaml, out, folder / "model"


def test_rows_match_the_stock_forward_with_each_block_removed(table):
    yaml, out, model_dir = table
    df = pd.read_parquet(out).sort_values("block")
    task = first_docs(load_task(yaml), MAX_DOCS)
    assert len(task.docs) == MAX_DOCS < len(load_task(yaml).docs)
    assert list(df["block"]) == list(range(N_LAYERS)) and (df["n_docs"] == MAX_DOCS).all()
    model = AutoModelForCausalLM.from_pretrained(model_dir).eval()
    tok = AutoTokenizer.from_pretrained(model_dir)
    assert _hand_scores(model, tok, task) == 1.0 and (df["accuracy"] == 1.0).all()
    for block in range(N_LAYERS):
        assert df["accuracy_without_block"].iloc[block] == _hand_scores(model, tok, task, (block,))
    # BI by hand at the critical block is in tests/test_construct.py; here: its claims on the subset
    crit = df[df["critical"]].iloc[0]
    assert int(crit["block"]) == CRITICAL and int(crit["bi_rank"]) == 1
    assert crit["bi"] == pytest.approx(EPS, rel=1e-4) and crit["bi"] < df.loc[~df["critical"], "bi"].min()
    assert crit["accuracy_without_block"] == 0.0 and crit["acc_rel"] == 1.0
    # AccRel by its definition: lost accuracy above chance over the full model's margin above chance
    r = 0.25
    want = [1 - max(a - r, 0) / (1 - r) for a in df["accuracy_without_block"]]
    np.testing.assert_allclose(df["acc_rel"], want)
    np.testing.assert_array_equal(df["bi_rank"], np.argsort(np.argsort(df["bi"].to_numpy())) + 1)


def test_provenance_records_the_subset_and_the_construction(table):
    yaml, out, _ = table
    prov = read(str(out))
    assert prov["max_docs"] == MAX_DOCS and prov["eps"] == EPS and prov["seed"] == 1
    assert prov["construction"]["n_docs"] == MAX_DOCS
    assert prov["construction"]["bi"] == pytest.approx(pd.read_parquet(out).sort_values("block")["bi"].tolist())
    assert set(prov["task_sha256"]) == {yaml, yaml.replace(".yaml", ".jsonl")}


def test_a_subset_below_one_document_is_refused(tmp_path):
    yaml = _toy_task(tmp_path / "task", n_docs=4)
    with pytest.raises(SwapKLError, match="max_docs 0"):
        run_snowball(yaml, str(tmp_path / "s.parquet"), eps=EPS, max_docs=0)
    assert not (tmp_path / "s.parquet").exists()
