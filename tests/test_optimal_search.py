"""Optimal removal-set search against brute-force enumeration with the stock forward."""

from __future__ import annotations

import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import torch

from swapkl.data.windows import Windows
from swapkl.model.engine import ProbeEngine
from swapkl.pruning.optimal import CountingCost, best_first, compare, exhaustive
from swapkl.pruning.search_cost import PAPER_RUNS, cost_table, greedy_evals, projected_hours
from swapkl.pruning.sleb import calibration_nll
from test_sleb import brute_nll
from tiny_models import random_tokens, tiny_model

L = 6


@pytest.fixture(scope="module")
def tiny():
    """A tiny llama and calibration windows of its own greedy continuations."""
    model = tiny_model("llama", n_layers=L, seed=0)
    with torch.no_grad():
        ids = model.generate(random_tokens(97, 4, 4, seed=0), max_new_tokens=12, do_sample=False, pad_token_id=0)
    return model, Windows(ids.numpy(), np.ones_like(ids.numpy()), "generated")


def test_search_on_the_engine_matches_brute_force(tiny):
    model, w = tiny
    engine = ProbeEngine(model)
    brute = {s: brute_nll(model, w, list(s)) for s in itertools.combinations(range(L), 2)}
    optimum = min(brute, key=lambda s: (brute[s], s))
    # the second best is far enough that float32 differences between CPUs cannot swap them
    assert sorted(brute.values())[1] - brute[optimum] > 1e-3

    def cost(sets):
        return calibration_nll(engine, w, sets, batch_size=2)[1]

    ex = exhaustive(cost, L, 2)
    assert ex.removed == optimum and ex.certified and ex.n_evals == math.comb(L, 2)
    assert ex.cost == pytest.approx(brute[optimum], rel=1e-5)
    base = brute_nll(model, w, [])
    bf = best_first(cost, L, 2, base_cost=base)
    assert bf.removed == optimum
    assert bf.n_evals <= math.comb(L, 2)
    assert bf.cost <= bf.bound  # the certificate under the monotone assumption
    assert not bf.certified


def _monotone_cost(seed: int, n_layers: int):
    """cost(S) = sum of per-block weights + sum of pairwise interactions, all non-negative: monotone."""
    rng = np.random.default_rng(seed)
    w, u = rng.random(n_layers), rng.random((n_layers, n_layers)) * 0.3
    return lambda sets: [sum(w[b] for b in s) + sum(u[a, b] for a, b in itertools.combinations(s, 2)) for s in sets]


@pytest.mark.parametrize("seed", range(8))
def test_best_first_is_exact_for_monotone_costs(seed):
    n_layers, n = 9, 3
    cost = _monotone_cost(seed, n_layers)
    bf, ex = best_first(cost, n_layers, n, base_cost=0.0), exhaustive(cost, n_layers, n)
    assert bf.removed == ex.removed and bf.violations == 0
    assert bf.cost <= bf.bound


def test_without_monotone_cost_best_first_is_not_certified():
    # block 0 alone is expensive but {0, 1} is the cheapest pair: best-first never expands {0}, sees no
    # counterexample, and returns {1, 2}; only enumeration is certified
    table = {(0,): 5.0, (1,): 1.0, (2,): 1.1, (0, 1): 0.5, (0, 2): 9.0, (1, 2): 2.0}
    cost = lambda sets: [table[s] for s in sets]  # noqa: E731
    bf, ex = best_first(cost, 3, 2, base_cost=0.0), exhaustive(cost, 3, 2)
    assert bf.removed == (1, 2) and bf.violations == 0 and not bf.certified
    assert ex.removed == (0, 1) and ex.certified
    # a child cheaper than its parent on the way is counted
    table[(1, 2)] = 0.9
    assert best_first(cost, 3, 2, base_cost=0.0).violations == 1


def test_counting_cost_scores_each_set_once():
    calls = []
    counted = CountingCost(lambda sets: calls.append(list(sets)) or [float(len(s)) for s in sets])
    counted([(0,), (1,)])
    counted([(1,), (2,)])
    assert counted.n_evals == 3 and calls == [[(0,), (1,)], [(2,)]]


def test_compare_reports_greedy_gap():
    cost = _monotone_cost(3, 8)
    rows = compare(cost, 8, [2, 3], base_cost=0.0)
    by = {(r["budget"], r["method"]): r for r in rows}
    for n in (2, 3):
        ex = exhaustive(cost, 8, n)
        assert by[(n, "exhaustive")]["cost"] == ex.cost
        assert by[(n, "greedy")]["gap_to_best"] == pytest.approx(by[(n, "greedy")]["cost"] - ex.cost)
        assert by[(n, "greedy")]["n_evals"] == greedy_evals(8, n)


def test_cost_model_reproduces_the_papers_hours():
    # the per-evaluation time is taken from the paper's greedy runs, so greedy projects back onto them
    rows = cost_table()
    for model, n_layers, n, lo, hi, gpus in PAPER_RUNS:
        g = next(r for r in rows if r["model"] == model and r["method"] == "greedy" and r["gpus"] == gpus)
        two = next(r for r in rows if r["model"] == model and r["method"] == "greedy" and r["replicas"] == 2)
        assert two["hours_low"] == pytest.approx(lo / 2)
        assert (g["hours_low"], g["hours_high"]) == pytest.approx((lo, hi))
        ex = next(r for r in rows if r["model"] == model and r["method"] == "exhaustive" and r["gpus"] == gpus)
        assert ex["n_evals"] == pytest.approx(math.comb(n_layers, n), rel=1e-12)
    assert projected_hours(3600, 2.0, 2) == pytest.approx(1.0)


def test_cli_writes_the_table_with_provenance_and_refuses_bad_budgets(tmp_path, tiny):
    from swapkl.cli import main
    from swapkl.tables.provenance import read

    model, w = tiny
    model.save_pretrained(tmp_path / "m")
    np.save(tmp_path / "calib.npy", w.input_ids)
    args = ["optimal-search", "--model", str(tmp_path / "m"), "--calib-tokens", str(tmp_path / "calib.npy"),
            "--device", "cpu"]
    assert main([*args, "--budgets", "6", "--out", str(tmp_path / "bad.parquet")]) == 2
    assert not (tmp_path / "bad.parquet").exists()
    assert main([*args, "--budgets", "1-2", "--out", str(tmp_path / "s.parquet")]) == 0
    df = pd.read_parquet(tmp_path / "s.parquet")
    assert set(df["method"]) == {"greedy", "beam", "best_first", "exhaustive"}
    ex = df[(df["method"] == "exhaustive") & (df["budget"] == 2)].iloc[0]
    brute = {s: brute_nll(model, w, list(s)) for s in itertools.combinations(range(L), 2)}
    assert tuple(ex["removed_layers"]) == min(brute, key=brute.get)
    assert (df["gap_to_best"] >= 0).all()
    prov = read(str(tmp_path / "s.parquet"))
    assert prov["calibration_spec"]["tokens"] == str(tmp_path / "calib.npy") and prov["weights_sha256"]
    assert prov["budgets"] == [1, 2]


def test_the_workflow_tables_match_brute_force_and_combine(tmp_path, tiny):
    """What rules search_removal_sets and combine_optimal_search write: each checkpoint's rows under the config's
    names, the exhaustive and greedy sets equal to enumeration and a hand greedy over the stock forward's NLL,
    and the combined table refusing two files of one checkpoint."""
    from swapkl.data.data_spec import DataSpec
    from swapkl.errors import SwapKLError
    from swapkl.studies.optimal_search.jobs import SearchJob
    from swapkl.studies.optimal_search.run import run_optimal_search
    from swapkl.tables.combine import combine_optimal_search

    model, w = tiny
    model.save_pretrained(tmp_path / "m")
    np.save(tmp_path / "calib.npy", w.input_ids)
    files = []
    for label in ("a", "b"):
        files.append(str(tmp_path / f"{label}.parquet"))
        calibration = DataSpec(tokens=str(tmp_path / "calib.npy"))
        run_optimal_search(SearchJob(model=str(tmp_path / "m"), calibration=calibration, out=files[-1],
                                     budgets=[1, 2], device="cpu", metadata={"model": label, "revision": "final"}))
    combine_optimal_search(files, str(tmp_path / "all.parquet"))
    df = pd.read_parquet(tmp_path / "all.parquet")
    assert sorted(set(zip(df["model"], df["revision"]))) == [("a", "final"), ("b", "final")]
    brute = {s: brute_nll(model, w, list(s)) for n in (1, 2) for s in itertools.combinations(range(L), n)}
    first = min(range(L), key=lambda b: brute[(b,)])
    second = min((b for b in range(L) if b != first), key=lambda b: brute[tuple(sorted((first, b)))])
    hand_greedy = {1: (first,), 2: tuple(sorted((first, second)))}
    for (model_label, n), rows in df.groupby(["model", "budget"]):
        by = rows.set_index("method")
        optimum = min((s for s in brute if len(s) == n), key=brute.get)
        assert tuple(by.loc["exhaustive", "removed_layers"]) == optimum and by.loc["exhaustive", "certified"]
        assert by.loc["exhaustive", "cost"] == pytest.approx(brute[optimum], rel=1e-5)
        assert tuple(by.loc["greedy", "removed_layers"]) == hand_greedy[n]
        assert by.loc["greedy", "n_evals"] == greedy_evals(L, n)
        assert by.loc["exhaustive", "n_evals"] == by.loc["exhaustive", "n_enumeration"] == math.comb(L, n)
        assert by.loc["greedy", "gap_to_best"] == pytest.approx(by.loc["greedy", "cost"] - by["cost"].min())
    with pytest.raises(SwapKLError, match="overlap"):
        combine_optimal_search([files[0], files[0]], str(tmp_path / "twice.parquet"))
    assert not (tmp_path / "twice.parquet").exists()


def _hours(text: str) -> float:
    """A duration of docs/optimal_search.md's cost table ("4.6 h", "8.5 days", "1.3e17 years") in hours."""
    value, unit = text.split()
    return float(value) * {"h": 1.0, "days": 24.0, "years": 24.0 * 365.25}[unit]


def test_the_docs_cost_table_is_what_cost_table_computes():
    """Every row of the cost table in docs/optimal_search.md against cost_table(), within the docs' rounding (two
    or three significant figures; the years use 365.25 days)."""
    doc = (Path(__file__).resolve().parents[1] / "docs" / "optimal_search.md").read_text()
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in doc.splitlines()
            if line.startswith("| LLaMA3-")]
    assert len(rows) == 11
    methods = {"greedy": "greedy", "beam (width 3)": "beam3", "exhaustive": "exhaustive"}
    computed = {(r["model"], r["method"], r["gpus"]): r for r in cost_table()}
    for model, removed, method, evals, gpus, low, high in rows:
        row = computed[(model, methods[method], int(gpus))]
        assert removed == f"{row['removed']} of {row['n_layers']}"
        assert float(evals) == pytest.approx(row["n_evals"], rel=0.01), (model, method)
        assert _hours(low) == pytest.approx(row["hours_low"], rel=0.05), (model, method, gpus)
        assert _hours(high) == pytest.approx(row["hours_high"], rel=0.05), (model, method, gpus)
