"""The paper's fixed layer sets in the study config, recomputed from the paper's own random draws, and the
interior random draws of the random baseline (enumeration of every admissible subset)."""

from __future__ import annotations

import itertools
import random
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import yaml

from swapkl.errors import SwapKLError
from swapkl.pruning.selection import BudgetError, fixed_set_keys, random_rng, random_select
from swapkl.pruning.selection_options import SelectionOptions

STUDY = Path(__file__).resolve().parents[1] / "config.yaml"


@pytest.fixture(scope="module")
def models() -> dict:
    return yaml.safe_load(STUDY.read_text())["models"]


def _fixed(models, entry) -> dict:
    return models[entry]["prune"]["fixed_sets"]


def _numpy_interior_draws(n_layers: int) -> list[list[int]]:
    """The paper's 8B random baseline, written from its description: one default_rng(42), drawn in sequence
    for n = 1, 3, 5 from the interior blocks 1..L-2, without replacement, each sorted."""
    rng = np.random.default_rng(42)
    pool = list(range(1, n_layers - 1))
    return [sorted(int(v) for v in rng.choice(pool, n, replace=False)) for n in (1, 3, 5)]


def test_llama_random_sets_are_the_papers_default_rng_draws(models):
    assert _fixed(models, "Llama-3.1-8B-paper")["paper-random"] == _numpy_interior_draws(32)
    # and the published table's sets
    assert _numpy_interior_draws(32) == [[3], [14, 19, 22], [3, 6, 16, 19, 29]]


def test_qwen_rng42_sets_are_the_default_rng_draws(models):
    assert _fixed(models, "Qwen3-8B-paper")["paper-random-rng42"] == _numpy_interior_draws(36)


def test_gpt2_random_sets_are_the_sweeps_five_trials(models):
    """compression_sweep: random.seed(42), then for n = 1..5, 5 trials of random.sample(range(1, 23), n)."""
    random.seed(42)
    expected = [sorted(random.sample(range(1, 23), n)) for n in range(1, 6) for _ in range(5)]
    assert _fixed(models, "GPT-2-Medium")["paper-random"] == expected


def test_every_published_set_is_configured(models):
    llama = _fixed(models, "Llama-3.1-8B-paper")
    assert llama["paper-interchange"] == [[25], [24, 25, 26], [22, 23, 24, 25, 26]]
    assert llama["paper-replacement"] == [[11], [9, 10, 11], [7, 8, 9, 10, 11]]
    assert llama["paper-sleb-iterative"][2] == [10, 11, 12, 25, 28] and llama["paper-bi"][2] == [2, 3, 4, 5, 6]
    qwen = _fixed(models, "Qwen3-8B-paper")
    assert qwen["paper-replacement"][-1] == [25, 28, 30, 31, 32]
    assert qwen["paper-interchange-clustered"] == [[15, 17, 20], [15, 17, 18, 19, 20]]
    # the clustered greedy runs over the paper's swap-similar region 15..21
    assert models["Qwen3-8B-paper"]["prune"]["clustered_region"] == [15, 22]
    for entry in ("Llama-3.1-8B-paper", "Qwen3-8B-paper", "pythia-1.4b-paper", "GPT-2-Medium"):
        for name, sets in _fixed(models, entry).items():
            assert all(len(set(s)) == len(s) for s in sets), (entry, name)


def test_several_sets_of_one_size_are_all_kept():
    keys = fixed_set_keys({"r": [[1], [2], [3, 4], [5]], "s": [[7]]})
    assert keys == [("r", 0, [1]), ("r", 1, [2]), ("r", None, [3, 4]), ("r", 2, [5]), ("s", None, [7])]
    gpt2 = fixed_set_keys({"paper-random": [[21], [4], [1], [9], [8]]})
    assert len({(n, k) for n, k, _ in gpt2}) == 5


def _admissible(n_layers, n, spacing, lo, hi):
    return [c for c in itertools.combinations(range(lo, hi), n) if all(b - a > spacing for a, b in zip(c, c[1:]))]


@pytest.mark.parametrize("spacing", [0, 1])
def test_interior_draws_are_uniform_over_interior_subsets(spacing):
    """Every admissible subset of blocks 1..L-2 is drawn with frequency 1/count (enumeration); no draw
    touches block 0 or L-1. Tolerance: 5 binomial standard errors of the rarest cell."""
    n_layers, n, draws = 8, 2, 12000
    valid = _admissible(n_layers, n, spacing, 1, n_layers - 1)
    counts = dict.fromkeys(valid, 0)
    rng = np.random.default_rng(1)
    for _ in range(draws):
        counts[tuple(random_select(n_layers, n, spacing, rng, interior=True))] += 1  # KeyError if outside
    p = 1 / len(valid)
    tol = 5 * np.sqrt(p * (1 - p) / draws)
    assert np.all(np.abs(np.array(list(counts.values())) / draws - p) < tol)


def test_old_behaviour_reaches_the_ends_and_the_default_does_not():
    ends = set()
    for k in range(200):
        ends |= set(random_select(6, 2, 0, random_rng(0, 2, k))) & {0, 5}
    assert ends == {0, 5}
    assert SelectionOptions().random_interior is True
    assert SelectionOptions(random_interior=False).as_dict()["random_interior"] is False


def test_interior_budget_errors_name_the_interior():
    with pytest.raises(BudgetError, match="interior blocks 1..4"):
        random_select(6, 3, 1, random_rng(0, 3, 0), interior=True)  # 4 interior blocks hold 2 at spacing 1
    with pytest.raises(SwapKLError, match="no interior block"):
        random_select(2, 1, 0, random_rng(0, 1, 0), interior=True)


def test_the_cost_figure_draws_the_mean_of_several_sets_of_one_size():
    from swapkl.figures.pruning.cost import _fixed_mean

    rows = pd.DataFrame(dict(budget=[1, 1, 1, 2], feasible=True, delta_ppl_pct=[5.0, 8.0, 2.0, 30.0],
                             kl_mean=[0.1, 0.3, 0.2, 0.5]))
    out, several = _fixed_mean(rows)
    assert several and out["budget"].tolist() == [1, 2]
    assert out["delta_ppl_pct"].tolist() == [5.0, 30.0] and out["delta_ppl_pct_ci_low"].tolist() == [2.0, 30.0]
    assert out["delta_ppl_pct_ci_high"].tolist() == [8.0, 30.0] and out["kl_mean"].tolist() == pytest.approx([0.2, 0.5])
    single, several = _fixed_mean(rows.iloc[[0, 3]])
    assert not several and len(single) == 2


def test_sets_of_one_size_keep_distinct_export_folders_and_relevance_rows():
    """Export folders and relevance keys carry the index of sets of one size (random_draw): none overwrites."""
    from collections import namedtuple

    from swapkl.export import _choice_folder
    from swapkl.model.choice_scores import BASE
    from swapkl.relevance.scored_models import PrunedSet, Scan
    from swapkl.tables.schemas import RELEVANCE_KEY

    Row = namedtuple("Row", "guide budget random_draw fixed_set")
    names = {_choice_folder(Row("fixed", 1, k, "paper-random")) for k in range(5)}
    assert len(names) == 5 and "fixed-n1-draw3-paper-random" in names
    sets = [PrunedSet("fixed", 1, (b,), random_draw=k, fixed_set="paper-random") for k, b in enumerate((2, 3, 2))]
    scan = Scan(5, sets)
    scores = {BASE: np.ones(4)} | {v.key: np.ones(4) for v in scan.variants}
    rows = pd.DataFrame(scan.rows("m", "r", "t", "acc", scores, 0.25)).reindex(columns=RELEVANCE_KEY)
    assert not rows.duplicated().any() and len(rows) == 5 + 3
