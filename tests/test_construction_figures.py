"""The snowball and optimal-search figures draw their tables' numbers, readably."""

from __future__ import annotations

import numpy as np
import pandas as pd

from figure_layout import captured_figures, layout_problems, legends_cover_data
from swapkl.studies.optimal_search.figures import METHODS, OFFSET, plot_optimal_search
from swapkl.figures.palette import VERMILLION
from swapkl.studies.snowball.figures import plot_snowball


def _snowball_table() -> pd.DataFrame:
    bi = [0.29, 0.28, 0.01, 0.74, 0.50, 0.29, 0.29]
    without = [1.0, 0.0, 0.0, 0.0, 1.0, 0.75, 1.0]
    return pd.DataFrame({"block": range(7), "bi": bi, "bi_rank": np.argsort(np.argsort(bi)) + 1,
                         "critical": [b == 2 for b in range(7)], "accuracy": 1.0, "accuracy_without_block": without,
                         "acc_rel": [1 - max(a - 0.25, 0) / 0.75 for a in without], "eps": 0.01,
                         "task": "demo_next_word", "n_docs": 40, "random_baseline": 0.25}).iloc[::-1]


def test_the_snowball_figure_draws_bi_beside_the_accuracy_without_each_block(tmp_path, monkeypatch):
    table = _snowball_table()
    with captured_figures(monkeypatch) as figs:
        plot_snowball(table, tmp_path / "s.png", tmp_path / "s.pdf")
    fig = figs[-1]
    assert (tmp_path / "s.png").stat().st_size > 0 and (tmp_path / "s.pdf").stat().st_size > 0
    assert not layout_problems(fig) + legends_cover_data(fig)
    left, right = fig.axes[:2]
    ordered = table.sort_values("block")
    np.testing.assert_allclose([p.get_height() for p in left.patches], ordered["bi"])
    np.testing.assert_allclose([p.get_height() for p in right.patches], 100 * ordered["accuracy_without_block"])
    critical = [p.get_x() + p.get_width() / 2 for p in left.patches
                if np.allclose(p.get_facecolor()[:3], tuple(int(VERMILLION[i:i + 2], 16) / 255 for i in (1, 3, 5)))]
    assert critical == [2.0]
    assert sorted(ln.get_ydata()[0] for ln in right.get_lines()) == [25.0, 100.0]  # chance and the full model
    assert [t.get_text() for t in right.texts] == ["100%", "0%", "0%", "0%", "100%", "75%", "100%"]
    assert "block 2" in fig._suptitle.get_text() and "0%" in fig._suptitle.get_text()


def _search_table() -> pd.DataFrame:
    rng = np.random.default_rng(0)
    rows = []
    for model in ("llama-demo", "pythia-demo"):
        for n in (1, 2, 3):
            for k, method in enumerate(METHODS):
                rows.append(dict(model=model, revision="step400", n_layers=12, budget=n, method=method,
                                 removed_layers=[k + b for b in range(n)],  # a different set per method
                                 cost=5.3 + rng.uniform(0, 0.01), base_cost=5.31, n_evals=int(12 * n + 7 * k)))
    return pd.DataFrame(rows).sample(frac=1.0, random_state=1)


def test_the_search_figure_draws_each_methods_nll_and_evaluations(tmp_path, monkeypatch):
    table = _search_table()
    with captured_figures(monkeypatch) as figs:
        plot_optimal_search(table, tmp_path / "o.png", tmp_path / "o.pdf")
    fig = figs[-1]
    assert not layout_problems(fig) + legends_cover_data(fig)
    axes = [ax for ax in fig.axes if ax.get_lines()]
    assert len(axes) == 4
    for row, model in enumerate(("llama-demo", "pythia-demo")):
        left, right = axes[2 * row], axes[2 * row + 1]
        assert left.get_title().startswith(model)
        for k, (method, (label, colour, _)) in enumerate(METHODS.items()):
            want = table[(table["model"] == model) & (table["method"] == method)].sort_values("budget")
            [nll] = [ln for ln in left.get_lines() if ln.get_label() == label]
            [evals] = [ln for ln in right.get_lines() if ln.get_label() == label]
            np.testing.assert_allclose(nll.get_ydata(), want["cost"])
            np.testing.assert_allclose(evals.get_ydata(), want["n_evals"])
            np.testing.assert_allclose(nll.get_xdata(), want["budget"] + (k - 1.5) * OFFSET)
        [base] = [ln for ln in left.get_lines() if ln.get_label() == "unpruned model"]
        assert base.get_ydata()[0] == 5.31
