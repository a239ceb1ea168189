"""Every figure drawn from a small synthetic table: the plotted data against an independent computation, and
the rendered layout (no two texts overlap, no text leaves the canvas, no legend covers data)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from matplotlib.colors import to_hex
from scipy import stats

import synthetic_tables as syn
from figure_layout import captured_figures, layout_problems, legends_cover_data
from probe_fixtures import probe_files, random_values, write_checkpoint
from swapkl.probes.aggregate import aggregate, read_aggregate
from swapkl.probes.aggregate import AggregateJob
from swapkl.figures.protocol.deletion import plot_deletion_vs_bi
from swapkl.figures.protocol.trajectory import plot_gap_trajectory
from swapkl.figures.protocol.heatmaps import plot_heatmaps
from swapkl.figures.protocol.ratio import plot_ratio_by_distance
from swapkl.figures.seeds.band import plot_seed_band
from swapkl.figures.palette import BLUE, GREY
from swapkl.figures.pruning import cost as pfig
from swapkl.figures.pruning.confusion import plot_rank_confusion
from swapkl.figures.relevance.ranks import plot_cosine_vs_relevance, plot_relevance_zscores
from swapkl.figures.guide_style import guide_look
from swapkl.pruning.guides.guide_registry import FAMILIES, registered

L = 12


@pytest.fixture(scope="module")
def agg(tmp_path_factory):
    """Aggregate of three checkpoints whose KL ranges differ by two decades, with one exact zero."""
    d = tmp_path_factory.mktemp("layout")
    files, reprs = [], []
    pairs = [(i, j) for i in range(L) for j in range(i + 1, L) if j - i <= 3]
    for k, rev in enumerate(["step0", "step1000", "step16000"]):
        repl, inter, dele = random_values(L, seed=k, pairs=pairs)
        scale = 10.0 ** (k - 1)
        repl = {p: v * scale for p, v in repl.items()}
        inter = {p: v * scale for p, v in inter.items()}
        if k == 0:
            inter[pairs[0]] = 0.0
        p = write_checkpoint(d / "in", model="toy", revision=rev, n_layers=L, repl=repl, inter=inter, deletion=dele,
                             bi=list(np.random.default_rng(k).uniform(0.01, 0.4, L)), seed=k)
        files += probe_files(p)
        reprs.append(p["repr"])
    out = d / "swapkl.parquet"
    aggregate(AggregateJob(probe_files=files, repr_files=reprs, out=out,
                           pair_sets={"toy": ["adjacent", "within:2", "within:3"]}, n_boot=30))
    return read_aggregate(out)


@pytest.fixture
def figs(monkeypatch):
    with captured_figures(monkeypatch) as f:
        yield f


def _clean(fig):
    problems = layout_problems(fig) + legends_cover_data(fig)
    assert not problems, "\n".join(problems)


def _draw(tmp_path, name, call, figs):
    call(tmp_path / f"{name}.png", tmp_path / f"{name}.pdf")
    assert (tmp_path / f"{name}.png").stat().st_size > 0
    return figs[-1]


@pytest.mark.parametrize("gap", ["max", "fwd"])
@pytest.mark.parametrize("sets", [1, 3])
def test_gap_trajectory(agg, figs, tmp_path, gap, sets):
    """With one pair set the figure is narrow: its title must wrap, not run off the canvas."""
    if sets == 1:
        agg = agg[(agg["kind"] != "summary") | (agg["pair_set"] == "adjacent")]
    fig = _draw(tmp_path, "traj", lambda p, q: plot_gap_trajectory(agg, p, q, model="toy", gap=gap), figs)
    _clean(fig)


def test_ratio_and_deletion(agg, figs, tmp_path):
    _clean(_draw(tmp_path, "ratio", lambda p, q: plot_ratio_by_distance(agg, p, q, model="toy"), figs))
    _clean(_draw(tmp_path, "del", lambda p, q: plot_deletion_vs_bi(agg, p, q, model="toy", revision="step1000"),
                 figs))


@pytest.mark.parametrize("seeds", [(0, 1, 2), (0, 1)])
def test_seed_band(figs, tmp_path, seeds):
    """Three seeds: the mean +- sd band, and the min and max lines at the table's values, over the grey single
    seeds. Two seeds: no spread statistic at all (no band, no sd, no min/max, no mean): each seed drawn as its
    own line, labelled with its seed, at its member rows' values."""
    from matplotlib.collections import PolyCollection

    table = syn.seeds_table(seeds=seeds)
    fig = _draw(tmp_path, "seeds", lambda p, q: plot_seed_band(table, p, q, family="fam"), figs)
    _clean(fig)
    ax = fig.axes[0]  # gap, both directions, adjacent pairs
    fam = table[(table["kind"] == "family") & (table["pair_set"] == "adjacent")].sort_values("step")
    members = table[(table["kind"] == "member") & (table["pair_set"] == "adjacent")]
    dashed = [line for line in ax.get_lines() if line.get_linestyle() == "--" and to_hex(line.get_color()) == to_hex(BLUE)]
    bands = [c for c in ax.collections if isinstance(c, PolyCollection)]
    legend = [t.get_text() for t in fig.legends[0].get_texts()]
    if len(seeds) == 2:
        assert dashed == [] and bands == []
        assert not any("sd" in t or "over seeds" in t or "min" in t or "W" in t for t in legend), legend
        for seed in seeds:
            line = next(ln for ln in ax.get_lines() if ln.get_label() == f"seed {seed}")
            m = members[members["seed"] == seed].sort_values("step")
            assert list(line.get_xdata()) == list(m["step"]) and list(line.get_ydata()) == list(m["gap_mean"])
        assert f"seed {seeds[0]}" in legend and "no spread statistic" in " ".join(fig._supxlabel.get_text().split())
    else:
        assert [list(line.get_ydata()) for line in dashed] == [list(fam["gap_seed_min"]), list(fam["gap_seed_max"])]
        assert len(bands) == 1
        top = bands[0].get_paths()[0].vertices[:, 1]
        assert np.isclose(top.max(), (fam["gap_seed_mean"] + fam["gap_seed_sd"]).max())
        singles = [line for line in ax.get_lines() if to_hex(line.get_color()) == to_hex(GREY)]
        assert len(singles) == len(seeds)


# ------------------------------------------------------------------ plotted data against direct computations


def _ppl_pct(nll, base, tok):
    return 100 * (np.exp(np.sum(nll) / np.sum(tok)) / np.exp(np.sum(base) / np.sum(tok)) - 1)


def test_pruning_difference_draws_the_difference_of_costs(figs, tmp_path):
    """The panel's points are ΔPPL%(interchange) − ΔPPL%(replacement, max), from the stored window sums; no
    ratio of the signed costs (which are negative at n = 1 here) is drawn."""
    df = syn.pruning_table()
    fig = _draw(tmp_path, "ir", lambda p, q: pfig.plot_ir_panel(df, p, q, n_boot=50), figs)
    _clean(fig)
    _clean(_draw(tmp_path, "irt", lambda p, q: pfig.plot_ir_trajectory(df, "toy", p, q, n_boot=50), figs))
    g = df[df["revision"] == "step16000"]
    pick = lambda guide, n: g[(g["guide"] == guide) & (g["budget"] == n)].iloc[0]  # noqa: E731
    base = pick("base", 0)
    want = [_ppl_pct(pick("interchange", n)["window_nll_sum"], base["window_nll_sum"], base["window_tokens"])
            - _ppl_pct(pick("replacement_max", n)["window_nll_sum"], base["window_nll_sum"], base["window_tokens"])
            for n in (1, 2, 3, 4)]
    line = [ln for ln in fig.axes[0].get_lines() if len(ln.get_xdata()) == 4][0]
    assert np.allclose(line.get_ydata(), want, rtol=1e-9, atol=1e-9)
    assert "ratio" not in fig.axes[0].get_ylabel().lower()
    # two models with names as long as make real's: the legend beside the panel leaves the title whole
    two = pd.concat([syn.pruning_table(model="gemma3-270m"), syn.pruning_table(model="smollm2-135m")])
    _clean(_draw(tmp_path, "ir2", lambda p, q: pfig.plot_ir_panel(two, p, q, n_boot=20), figs))
    long = syn.pruning_table(model="pythia-160m-deduped-seed3")
    _clean(_draw(tmp_path, "irt2", lambda p, q: pfig.plot_ir_trajectory(long, "pythia-160m-deduped-seed3", p, q,
                                                                         n_boot=20), figs))


def test_pruning_difference_draws_hollow_where_both_guides_removed_the_same_blocks(figs, tmp_path):
    """A difference of 0 because both guides removed the same blocks (SmolLM2-135M at n = 1, 2 in make real) is
    not a measured tie: those points are hollow, and the legend says what hollow means."""
    from swapkl.pruning.cost_ratio import ir_ratios

    df = syn.pruning_table()
    inter = (df["guide"] == "interchange") & (df["budget"] >= 3)
    df.loc[inter, "removed_layers"] = df.loc[inter, "budget"].map(lambda n: list(range(1, n + 1)))
    ir = ir_ratios(df, n_boot=20)
    assert ir.set_index(["revision", "budget"])["same_blocks"].to_dict() == {
        (rev, n): n < 3 for rev in ("step0", "step1000", "step16000") for n in (1, 2, 3, 4)}
    fig = _draw(tmp_path, "hollow", lambda p, q: pfig.plot_ir_panel(df, p, q, n_boot=20), figs)
    _clean(fig)
    hollow = [ln for ln in fig.axes[0].get_lines() if ln.get_markerfacecolor() == "white"]
    assert [list(ln.get_xdata()) for ln in hollow] == [[1.0, 2.0]]
    assert pfig.SAME_BLOCKS in [t.get_text() for t in fig.legends[0].get_texts()]
    fig = _draw(tmp_path, "hollow_t", lambda p, q: pfig.plot_ir_trajectory(df, "toy", p, q, n_boot=20), figs)
    hollow = [ln for ln in fig.axes[0].get_lines() if ln.get_markerfacecolor() == "white"]
    assert sorted(len(ln.get_xdata()) for ln in hollow) == [0, 0, 3, 3]  # n = 1, 2 at every step; none at 3, 4
    # no point hollow: no legend line for it
    df.loc[df["guide"] == "interchange", "removed_layers"] = df.loc[df["guide"] == "interchange", "budget"].map(
        lambda n: list(range(1, n + 1)))
    fig = _draw(tmp_path, "solid", lambda p, q: pfig.plot_ir_panel(df, p, q, n_boot=20), figs)
    assert pfig.SAME_BLOCKS not in [t.get_text() for t in fig.legends[0].get_texts()]


def test_pruning_ratio_column_only_where_both_costs_are_clearly_positive():
    from swapkl.pruning.cost_ratio import ir_ratios

    ir = ir_ratios(syn.pruning_table(), n_boot=200, seed=0)
    low = ir[ir["budget"] == 1]  # both costs negative: no ratio
    assert not low["ratio_defined"].any() and low["ir_ratio"].isna().all()
    high = ir[ir["budget"] == 4]
    assert high["ratio_defined"].all()
    assert np.allclose(high["ir_ratio"], high["delta_num"] / high["delta_den"])
    assert ((ir["ir_diff_ci_low"] <= ir["ir_diff"]) & (ir["ir_diff"] <= ir["ir_diff_ci_high"])).all()


def _cost_points(ax) -> dict[str, tuple[float, float]]:
    """rule label -> (x, y) of every error-bar point of one pruning-cost panel."""
    out = {}
    for c in ax.containers:
        x, y = c.lines[0].get_data()
        out[c.get_label()] = (float(x[0]), float(y[0]))
    return out


def test_pruning_cost_styles_come_from_the_registry(figs, tmp_path):
    """One panel per budget and quantity, one line per rule, grouped under its family's bold header in the
    registry's family order, in the registry's colour and marker; every point at its table value."""
    df = syn.pruning_table()
    fig = _draw(tmp_path, "cost", lambda p, q: pfig.plot_delta_ppl(df, "toy", "step16000", p, q), figs)
    _clean(fig)
    budgets = sorted(set(df["budget"]) - {0})
    assert len(fig.axes) == 2 * len(budgets) + 2  # and the across-budgets column
    plotted = [g for g in registered() if g.plotted]
    g16 = df[df["revision"] == "step16000"]
    for r, column in enumerate(("delta_ppl_pct", "kl_mean")):
        for c, n in enumerate(budgets):
            ax = fig.axes[r * len(budgets) + c]
            points = _cost_points(ax)
            for g in plotted:
                label = pfig.cost_label(g.label)
                line = next(cont for cont in ax.containers if cont.get_label() == label).lines[0]
                look = guide_look(g.name)
                assert (to_hex(line.get_color()), line.get_marker()) == (to_hex(look.colour), look.marker), g.name
                want = g16[(g16["guide"] == g.name) & (g16["budget"] == n)][column].iloc[0]
                assert points[label][0] == pytest.approx(want, rel=1e-12), (g.name, column, n)
    assert len({guide_look(g.name)[1:] for g in plotted}) == len(plotted), "two guides look alike"
    ticks = fig.axes[0].get_yticklabels()
    headers = [t.get_text() for t in ticks if t.get_fontweight() == "bold"]
    assert headers == [f.label for f in FAMILIES.values() if any(g.family == f.name for g in plotted)]
    rows = [t.get_text() for t in ticks]
    for g in plotted:  # each rule sits under its own family's header
        family_header = FAMILIES[g.family].label
        k = rows.index(pfig.cost_label(g.label))
        assert max(h for h in range(k) if rows[h] in headers and ticks[h].get_fontweight() == "bold") \
            == rows.index(family_header), g.name


def test_agreement_cells_show_the_spearman_of_the_scores(figs, tmp_path):
    agr = syn.agreement_table()
    fig = _draw(tmp_path, "agr", lambda p, q: pfig.plot_agreement(agr, "toy", "step16000", p, q), figs)
    _clean(fig)
    ax = fig.axes[0]
    cells = [t.get_text() for t in ax.texts]
    row = agr[(agr["guide"] == "interchange") & (agr["reference"] == "bi")].iloc[0]
    assert f"{row['spearman']:.2f}".replace("-", "\u2212") in cells
    box = ax.get_position()
    assert box.width * box.height > 0.3, "the heatmap fills too little of the canvas"


def test_rank_confusion_reports_spearman_of_the_ranks(figs, tmp_path):
    agr = syn.agreement_table()
    fig = _draw(tmp_path, "conf", lambda p, q: plot_rank_confusion(agr, "toy", "step16000", p, q), figs)
    _clean(fig)
    r = agr[(agr["guide"] == "bi") & (agr["reference"] == "deletion")].iloc[0]
    rho = stats.spearmanr(r["guide_rank"], r["reference_rank"]).statistic
    assert f"Spearman ρ = {rho:.2f}\nof the ranks of the" in fig.axes[0].get_title()
    assert abs(r["pearson"]) > 0.99 and abs(rho) < 0.9  # the outlier drives Pearson, not the drawn statistic
    assert "ShortGPT BI" in fig.axes[0].get_ylabel() and "bi" not in [t.get_text() for t in fig.axes[1].get_yticklabels()]


def test_relevance_cosine_axes_leave_out_the_boundary_blocks(figs, tmp_path):
    rel, ragg = syn.relevance_tables()
    fig = _draw(tmp_path, "cos", lambda p, q: plot_cosine_vs_relevance(rel, ragg, p, q, model="toy",
                                                                        revision="step16000"), figs)
    _clean(fig)
    cos = 1 - ragg.sort_values("layer_i")["value"].to_numpy()
    for ax in fig.axes:
        lo, hi = ax.get_xlim()
        assert lo <= cos[1:-1].min() and cos[1:-1].max() <= hi
        assert not lo <= cos[0] <= hi  # block 0 (cos 0.2) does not set the range
        assert "blocks off the axes: 0 " in ax.get_xlabel()
    # one task (make real's next-token relevance): a narrow figure, whose title wraps onto the canvas
    one = rel[rel["task"] == "lm"]
    fig = _draw(tmp_path, "cos1", lambda p, q: plot_cosine_vs_relevance(one, ragg, p, q, model="toy",
                                                                         revision="step16000"), figs)
    _clean(fig)
    assert "\n" in fig._suptitle.get_text()


def test_heatmaps_share_one_unclamped_scale_across_checkpoints(agg, figs, tmp_path):
    norms, notes = [], []
    for rev in ("step0", "step1000", "step16000"):
        fig = _draw(tmp_path, rev, lambda p, q: plot_heatmaps(agg, p, q, model="toy", revision=rev), figs)
        _clean(fig)
        im = fig.axes[0].get_images()[0]
        norms.append((im.norm.vmin, im.norm.vmax))
        notes.append(fig._supxlabel.get_text())
    assert len(set(norms)) == 1
    d = agg[(agg["kind"] == "directed") & agg["protocol"].isin(["replacement", "interchange"])]["kl_mean"]
    vmin, vmax = norms[0]
    assert vmin <= d[d > 0].min() and vmax >= d.max()  # nothing above zero saturates
    assert (d == 0).any()  # the exact zero is drawn in the under colour, noted in the figure
    assert "pink: KL of 0" in notes[0] and "pink" not in notes[2]  # step0 holds the zero


def test_relevance_zscores_layout(figs, tmp_path):
    rel, _ = syn.relevance_tables()
    _clean(_draw(tmp_path, "z", lambda p, q: plot_relevance_zscores(rel, p, q, model="toy", revision="step16000"),
                 figs))


def test_covariates_layout(figs, tmp_path):
    from swapkl.figures.seeds.covariates import plot_covariate_correlations

    corr = syn.covariate_correlations()
    _clean(_draw(tmp_path, "cov", lambda p, q: plot_covariate_correlations(corr, p, q), figs))


def test_weight_protocols_layout(figs, tmp_path):
    from swapkl.figures.protocol.weights import plot_weight_protocols

    agg_w = syn.weight_protocol_aggregate()
    _clean(_draw(tmp_path, "w", lambda p, q: plot_weight_protocols(agg_w, p, q, model="toy", revision="step16000"),
                 figs))


def test_relevance_confusion_layout(figs, tmp_path):
    from swapkl.figures.relevance.ranks import plot_relevance_confusion
    from swapkl.relevance.relevance_stats import relevance_statistics

    rel, ragg = syn.relevance_tables()
    st = relevance_statistics(rel, ragg)
    _clean(_draw(tmp_path, "rc", lambda p, q: plot_relevance_confusion(st, p, q, model="toy", revision="step16000"),
                 figs))
    # one task, as make real scores (the y label ran into the panel's three-line title on SmolLM2)
    one = st[st["task"] == st["task"].iloc[0]]
    fig = _draw(tmp_path, "rc1", lambda p, q: plot_relevance_confusion(one, p, q, model="toy", revision="step16000"),
                figs)
    _clean(fig)
    fig.draw_without_rendering()
    ax = fig.axes[0]
    label, title = ax.yaxis.label.get_window_extent(), ax.title.get_window_extent()
    assert label.y1 <= title.y0, (label, title)


def test_training_curves_layout(figs, tmp_path):
    from swapkl.figures.demo.training import plot_training_curves

    logs = {}
    for name, scale in (("demo-a", 1.0), ("demo-b", 0.7), ("demo-c", 0.5)):
        lines = ["step,heldout_loss,train_loss"] + [
            f"{s},{3 + 4 * scale * np.exp(-s / 150):.4f},{2.9 + 4 * scale * np.exp(-s / 150):.4f}"
            for s in range(0, 501, 50)]
        (tmp_path / f"{name}.csv").write_text("\n".join(lines) + "\n")
        logs[name] = tmp_path / f"{name}.csv"
    _clean(_draw(tmp_path, "train", lambda p, q: plot_training_curves(logs, p, q), figs))


def test_pruning_cost_keeps_the_guides_readable_beside_the_anti_guided_bound(figs, tmp_path):
    """The anti-guided bound costs +250% while the guides cost 0.15-1% at n = 1 (growing like n², as in demo
    runs): on an axis reaching 250 the n = 1 guides would share 0.4% of a panel's width. The bound is drawn at the
    panel's right edge with its value written, and the guides spread over the panel (measured on the canvas)."""
    df = syn.pruning_table()
    df = df[df["revision"] == "step16000"].copy()
    ranks = {g.name: k for k, g in enumerate(registered())}
    cost = df["guide"].map(ranks).fillna(0) % 5 * 0.1 + 0.15
    cost = np.where(df["guide"] == "anti_interchange", 250.0, cost * df["budget"] ** 2)
    df["delta_ppl_pct"] = cost
    df["delta_ppl_pct_ci_low"], df["delta_ppl_pct_ci_high"] = cost - 0.05, cost + 0.05
    rand = df["guide"] == "random_mean"
    df.loc[rand, "delta_ppl_pct_sd"] = 0.05
    df.loc[rand, "delta_ppl_pct_min"], df.loc[rand, "delta_ppl_pct_max"] = cost[rand] - 0.05, cost[rand] + 0.05
    fig = _draw(tmp_path, "anti", lambda p, q: pfig.plot_delta_ppl(df, "toy", "step16000", p, q), figs)
    _clean(fig)
    anti = pfig.cost_label(next(g.label for g in registered() if g.name == "anti_interchange"))
    for c, n in enumerate((1, 2, 3, 4)):
        ax = fig.axes[c]
        points = _cost_points(ax)
        assert anti not in points
        assert [t.get_text() for t in ax.texts] == ["+250% →"]
        guides = df[(df["budget"] == n) & ~df["guide"].isin(["anti_interchange", "base"])]["delta_ppl_pct"]
        lo, hi = ax.get_xlim()
        assert hi < 250 and (guides.max() - guides.min()) / (hi - lo) > 0.3, n
    # without the far bound nothing is cut off
    plain = df[df["guide"] != "anti_interchange"]
    fig = _draw(tmp_path, "noanti", lambda p, q: pfig.plot_delta_ppl(plain, "toy", "step16000", p, q), figs)
    assert not any(ax.texts for ax in fig.axes)


def test_every_guide_label_shows_whole_in_the_pruning_cost_figure():
    """No registered guide's label is cut in the cost figure's label column (a cut one read "LaCo merge as the
    paper ordered it (by replacement KL,…" in make real's figures, losing which direction it means)."""
    for guide in registered():
        assert "…" not in pfig.cost_label(guide.label), (guide.name, guide.label)


def test_pruning_cost_bars_the_random_draws_in_both_rows(figs, tmp_path):
    """The random row's bar spans its draws in the KL row too, not only in the perplexity row (whose summary row
    carries the draws' min and max): read from the draws' own rows (as make real writes them: three draws per
    budget beside their mean), a KL bar from the lowest to the highest draw's KL."""
    df = syn.pruning_table()
    df = df[(df["revision"] == "step16000") & (df["guide"] != "anti_interchange")].copy()
    budgets = sorted(set(df["budget"]) - {0})
    draws = []
    for n in budgets:
        mean = df[(df["guide"] == "random_mean") & (df["budget"] == n)].iloc[0]
        for k, (dk, dp) in enumerate(((-0.02, -2.0), (0.0, 1.0), (0.05, 4.0))):
            draws.append({**mean.to_dict(), "guide": "random", "random_draw": float(k),
                          "kl_mean": mean["kl_mean"] + dk, "delta_ppl_pct": mean["delta_ppl_pct"] + dp})
        summary = (df["guide"] == "random_mean") & (df["budget"] == n)
        df.loc[summary, ["kl_mean", "delta_ppl_pct", "delta_ppl_pct_min", "delta_ppl_pct_max"]] = [
            mean["kl_mean"] + 0.01, mean["delta_ppl_pct"] + 1.0, mean["delta_ppl_pct"] - 2.0, mean["delta_ppl_pct"] + 4.0]
    df = pd.concat([df, pd.DataFrame(draws)], ignore_index=True)
    fig = _draw(tmp_path, "kl_draws", lambda p, q: pfig.plot_delta_ppl(df, "toy", "step16000", p, q), figs)
    label = pfig.cost_label(next(g.label for g in registered() if g.name == "random_mean"))
    for c, n in enumerate(budgets):
        mine = [d for d in draws if d["budget"] == n]
        for row, column in ((0, "delta_ppl_pct"), (1, "kl_mean")):
            ax = fig.axes[row * len(budgets) + c]
            bar = next(cont for cont in ax.containers if cont.get_label() == label)
            segment = bar.lines[2][0].get_segments()[0]
            values = [d[column] for d in mine]
            assert (segment[0][0], segment[1][0]) == pytest.approx((min(values), max(values))), (n, column)


def test_pruning_cost_draws_random_draws_by_their_range_and_off_the_guides_axis(figs, tmp_path):
    """As on SmolLM2-135M at n = 4 (make real): guides cost 60-200%, three random draws 150%, 220% and 2600%
    (mean 990, s.d. 1400, so mean − s.d. is below every draw). The random row's bar spans its lowest to highest
    draw; the axis fits the guides, and the random mean sits at the edge with its value. Where the draws lie
    among the guides, the random row is drawn with its min–max bar and nothing is cut."""
    df = syn.pruning_table()
    df = df[(df["revision"] == "step16000") & (df["guide"] != "anti_interchange")].copy()
    ranks = {g.name: k for k, g in enumerate(registered())}
    cost = 60.0 + df["guide"].map(ranks).fillna(0) % 5 * 35.0
    df["delta_ppl_pct"] = cost
    df["delta_ppl_pct_ci_low"], df["delta_ppl_pct_ci_high"] = cost - 10, cost + 10
    rand = df["guide"] == "random_mean"
    df.loc[rand, ["delta_ppl_pct", "delta_ppl_pct_sd", "delta_ppl_pct_min", "delta_ppl_pct_max"]] = \
        [990.0, 1400.0, 150.0, 2600.0]
    fig = _draw(tmp_path, "far_random", lambda p, q: pfig.plot_delta_ppl(df, "toy", "step16000", p, q), figs)
    label = pfig.cost_label(next(g.label for g in registered() if g.name == "random_mean"))
    assert "min–max" in label and "s.d." not in label
    guides = df[~rand & (df["guide"] != "base")]
    for c, n in enumerate(sorted(set(df["budget"]) - {0})):
        ax = fig.axes[c]
        assert label not in _cost_points(ax)
        assert [t.get_text() for t in ax.texts] == ["+990% →"]
        lo, hi = ax.get_xlim()
        g = guides[guides["budget"] == n]
        assert g["delta_ppl_pct_ci_high"].max() < hi < 2 * g["delta_ppl_pct_ci_high"].max()
        assert (g["delta_ppl_pct"].max() - g["delta_ppl_pct"].min()) / (hi - lo) > 0.3
    # draws among the guides: drawn, with the bar from the lowest to the highest draw, not mean ± s.d.
    df.loc[rand, ["delta_ppl_pct", "delta_ppl_pct_min", "delta_ppl_pct_max"]] = [100.0, 70.0, 180.0]
    fig = _draw(tmp_path, "near_random", lambda p, q: pfig.plot_delta_ppl(df, "toy", "step16000", p, q), figs)
    ax = fig.axes[0]
    assert not ax.texts
    bar = next(cont for cont in ax.containers if cont.get_label() == label)
    segment = bar.lines[2][0].get_segments()[0]
    assert (segment[0][0], segment[1][0]) == pytest.approx((70.0, 180.0))
    # Gemma-3-270M at n = 5: LaCo's rule 145,065%, the random mean 67,463% between it and the other rules (<=
    # 13,912%), so far_cut over all points finds no gap of 10x; over the guided rules it does
    laco = df["guide"] == "laco_paper"
    df.loc[laco, ["delta_ppl_pct", "delta_ppl_pct_ci_low", "delta_ppl_pct_ci_high"]] = [145065.0, 80000.0, 260000.0]
    df.loc[rand, ["delta_ppl_pct", "delta_ppl_pct_min", "delta_ppl_pct_max"]] = [67463.0, 972.0, 199183.0]
    fig = _draw(tmp_path, "laco_far", lambda p, q: pfig.plot_delta_ppl(df, "toy", "step16000", p, q), figs)
    ax = fig.axes[0]
    assert sorted(t.get_text() for t in ax.texts) == ["+145,065% →", "+67,463% →"]
    assert ax.get_xlim()[1] < 2 * guides[guides["budget"] == 1]["delta_ppl_pct_ci_high"].max()


def test_rank_confusion_of_a_three_block_model_says_there_is_nothing_to_rank(figs, tmp_path):
    """Three blocks, boundary blocks excluded: one ranked block, no confusion matrix, no chance level (1 − 1/m
    would divide by zero); the figure says why in place of the matrix and in its note."""
    from swapkl.stats.agreement import compare, rank_statistics

    rng = np.random.default_rng(0)
    scores = {name: rng.uniform(0, 1, 3) for name in ("bi", "deletion", "interchange")}
    agr = pd.DataFrame([dict(model="tiny", revision="step0", step=0, n_layers=3, guide=g, reference=r,
                             **compare(x, y), **rank_statistics(x, y))
                        for g, x in scores.items() for r, y in scores.items() if g != r])
    assert (agr["n_ranked"] == 1).all() and agr["guide_rank"].map(len).eq(0).all()
    fig = _draw(tmp_path, "conf3", lambda p, q: plot_rank_confusion(agr, "tiny", "step0", p, q), figs)
    _clean(fig)
    texts = " ".join(t.get_text() for t in fig.findobj(match=lambda a: hasattr(a, "get_text")))
    assert "No rank confusion" in texts and "score 1 block." in texts
    assert "No rank statistics" in texts
    assert not fig.axes[0].images and not fig.axes[0].axison
    assert not [ln for ln in fig.axes[1].get_lines() if "chance" in ln.get_label()]


def test_deletion_and_bi_each_have_their_own_log_axis(agg, figs, tmp_path):
    """No twin axes: deletion KL and BI are drawn on two panels, each at the aggregate's values, both on log
    axes at every checkpoint (step0's narrow KL range included), and the rank panel ranks the same values."""
    from scipy.stats import rankdata

    for rev in ("step0", "step1000"):
        fig = _draw(tmp_path, f"del{rev}", lambda p, q: plot_deletion_vs_bi(agg, p, q, model="toy", revision=rev),
                    figs)
        _clean(fig)
        assert len(fig.axes) == 3  # a twin axis would be a fourth
        kl_ax, rank_ax, bi_ax = fig.axes
        d = agg[(agg["kind"] == "directed") & (agg["revision"] == rev) & (agg["protocol"] == "deletion")]
        d = d.sort_values("layer_i")
        r = agg[(agg["kind"] == "repr") & (agg["revision"] == rev) & (agg["metric"] == "bi") & (agg["width"] == 1)]
        r = r.sort_values("layer_i")
        (kl_line,), (bi_line,) = kl_ax.get_lines(), bi_ax.get_lines()
        assert np.array_equal(kl_line.get_ydata(), d["kl_mean"].to_numpy(float))
        assert np.array_equal(bi_line.get_ydata(), r["value"].to_numpy(float))
        assert kl_ax.get_yscale() == bi_ax.get_yscale() == "log"
        xy = rank_ax.collections[0].get_offsets()
        assert np.array_equal(xy[:, 0], rankdata(-r["value"].to_numpy(float)))
        assert np.array_equal(xy[:, 1], rankdata(-d["kl_mean"].to_numpy(float)))


@pytest.mark.parametrize("gap", ["max", "fwd"])
def test_gap_trajectory_draws_the_share_on_its_own_axis(agg, figs, tmp_path, gap):
    """The largest pair's share of the summed gap (above 1 when other gaps are negative) has a row of its own,
    at the table's values; the ratio row keeps the dimensionless ratios only; the two gap definitions' titles
    differ."""
    from swapkl.probes.aggregate import trajectory

    fig = _draw(tmp_path, "traj", lambda p, q: plot_gap_trajectory(agg, p, q, model="toy", gap=gap), figs)
    prefix = "gap" if gap == "max" else "gap_fwd"
    t = trajectory(agg, "toy")
    t = t[t["pair_set"] == "adjacent"]
    n_sets = len(set(trajectory(agg, "toy")["pair_set"]))
    ratios, shares = fig.axes[2 * n_sets], fig.axes[3 * n_sets]
    (share,) = [ln for ln in shares.get_lines() if len(ln.get_xdata()) == len(t)]
    assert np.allclose(share.get_xdata(), t["step"].to_numpy(float))
    assert np.allclose(share.get_ydata(), t[f"{prefix}_max_share"].to_numpy(float), equal_nan=True)
    assert not any("share" in ln.get_label() for ln in ratios.get_lines())
    title = fig._suptitle.get_text().replace("\n", " ")
    assert ("larger of both directions" in title) == (gap == "max") and ("one direction only" in title) == (gap == "fwd")


def test_ratio_by_distance_shows_the_pairs_behind_each_median(agg, figs, tmp_path):
    """A bottom panel counts the pairs with a finite ratio at each distance, as the aggregate's pair rows do;
    medians of fewer than three pairs are hollow."""
    fig = _draw(tmp_path, "rn", lambda p, q: plot_ratio_by_distance(agg, p, q, model="toy"), figs)
    _clean(fig)
    ax, ax_n = fig.axes
    pairs = agg[(agg["kind"] == "pair") & np.isfinite(agg["ratio_ir"].astype(float))]
    want = pairs.groupby(["revision", "distance"]).size().groupby("distance").max()
    bars = {round(b.get_x() + b.get_width() / 2): b.get_height() for b in ax_n.patches}
    assert bars == {int(d): int(n) for d, n in want.items()}
    assert [t.get_text() for t in ax_n.texts] == [str(int(n)) for n in want]


def test_convergence_marks_the_full_set_and_keeps_the_whole_range(figs, tmp_path):
    """The full-set point (n = n_seqs, rho = 1 by construction) is drawn apart (hollow), the others at the table's
    medians; the rank axis reaches down to 0, so medians of 0.993-1.000 are not stretched over the panel."""
    from swapkl.studies.convergence.figures import plot_convergence

    rows = []
    for protocol, base in (("replacement", 0.993), ("interchange", 0.996)):
        for n in (4, 8, 16, 32):
            med = 1.0 if n == 32 else base + 0.001 * np.log2(n)
            rows.append(dict(model="toy", revision="step400", protocol=protocol, n=n, n_seqs=32, draws=50, n_pairs=30,
                             spearman_median=med, spearman_q05=med - 0.002 * (n < 32), spearman_q95=min(1.0, med + 0.001),
                             top_pair_share=1.0 if n == 32 else 0.5 + 0.01 * n, top_kl=0.01, top_kl_rel_width=0.1))
    table = pd.DataFrame(rows)
    fig = _draw(tmp_path, "conv", lambda p, q: plot_convergence(table, p, q), figs)
    _clean(fig)
    ax = fig.axes[0]
    lo, hi = ax.get_ylim()
    assert lo <= 0.0 and 1.0 <= hi
    xs = []
    for protocol in ("replacement", "interchange"):
        sub = table[(table["protocol"] == protocol)]
        cont = next(c for c in ax.containers if c.get_label() == f"toy@step400 {protocol}")
        x, y = cont.lines[0].get_data()
        # side by side around each n (a few percent on the log axis), so coinciding series both show
        assert np.allclose(x, [4, 8, 16], rtol=0.05) and np.allclose(y, sub[sub["n"] < 32]["spearman_median"])
        xs.append(np.asarray(x))
    assert (xs[0] != xs[1]).all()
    hollow = [ln for ln in ax.get_lines() if ln.get_markerfacecolor() == "white"]
    assert len(hollow) == 2 and all(np.allclose(ln.get_xdata(), [32], rtol=0.05) and list(ln.get_ydata()) == [1.0]
                                    for ln in hollow)
    assert "1 by construction" in fig._supxlabel.get_text()


def test_jacobian_draws_a_far_block_at_the_edge_with_its_value(figs, tmp_path):
    """Block 0 at 2e7 beside blocks at 0.4-10: the axis ends within a decade of the others, block 0 sits at the
    edge with its value written and named in the note; every other block at its table value."""
    from swapkl.studies.jacobian.figures import plot_jacobian

    rng = np.random.default_rng(2)
    norms = np.r_[2.05e7, rng.uniform(0.4, 10.0, 11)]
    table = pd.DataFrame(dict(model="toy", revision="step400", method="exact", block=np.arange(12), norm_mean=norms))
    pairs = pd.DataFrame([dict(kind="pair", model="toy", revision="step400", layer_i=i, layer_j=i + 1, distance=1,
                               d_repl_max=0.01 * (i + 1), d_inter=0.001 * (i + 1), duplicate_of=None)
                          for i in range(11)])
    fig = _draw(tmp_path, "jac", lambda p, q: plot_jacobian(table, pairs, p, q), figs)
    _clean(fig)
    ax = fig.axes[0]
    (line,) = [ln for ln in ax.get_lines() if len(ln.get_xdata()) == 12]
    assert np.allclose(line.get_ydata()[1:], norms[1:])
    top = ax.get_ylim()[1]
    assert top < 10 * norms[1:].max() and line.get_ydata()[0] <= top
    assert [t.get_text() for t in ax.texts] == ["block 0: 2.05e+07"]
    assert "toy block 0 (2.05e+07)" in fig._supxlabel.get_text()


def test_relevance_zscores_colour_scale_spans_the_inner_blocks(figs, tmp_path):
    """Block 0 (AccRel 0.9 beside 0-0.3) saturates; the scale is ± the largest |z| of blocks 1..L-2, computed here
    from the relevance rows, and the saturated cells carry their value."""
    rel, _ = syn.relevance_tables()
    fig = _draw(tmp_path, "zs", lambda p, q: plot_relevance_zscores(rel, p, q, model="toy", revision="step16000"), figs)
    _clean(fig)
    ax = fig.axes[0]
    im = ax.get_images()[0]
    table = rel.pivot_table(index="task", columns="layer", values="relevance")
    z = table.sub(table.mean(axis=1), axis=0).div(table.std(axis=1, ddof=0), axis=0)
    lim = z.loc[:, 1:10].abs().to_numpy().max()
    assert im.norm.vmax == pytest.approx(lim) and im.norm.vmin == pytest.approx(-lim)
    assert np.allclose(im.get_array(), z.to_numpy())
    beyond = [(j, i) for i, row in enumerate(z.to_numpy()) for j, v in enumerate(row) if abs(v) > lim * (1 + 1e-9)]
    assert sorted((round(t.get_position()[0]), round(t.get_position()[1])) for t in ax.texts) == sorted(beyond)
    assert all(j in (0, 11) for j, _ in beyond) and any(j == 0 for j, _ in beyond)


def test_points_on_top_of_each_other_share_one_label():
    from swapkl.figures.labels import merged_labels

    xy = np.array([[0.0, 0.0], [4.0, 0.0], [8.0, 0.0], [50.0, 0.0], [50.0, 30.0]])
    assert merged_labels(xy, [3, 1, 7, 2, 9], merge_px=5) == [(0, "3, 1, 7"), (3, "2"), (4, "9")]


def _healed_table() -> pd.DataFrame:
    """Healed curves of five replacement variants (two ending on the same KL), two interchange and two deletion."""
    rows = []
    variants = [("healed_replacement", 0, 3, 1.8, 0.01), ("healed_replacement", 3, 0, 0.35, 0.02),
                ("healed_replacement", 7, 8, 3.3e-3, 0.03), ("healed_replacement", 8, 7, 3.3e-3, 0.03),
                ("healed_replacement", 5, 6, 1.6e-3, 0.05),
                ("healed_interchange", 0, 3, 2.0, 0.01), ("healed_interchange", 5, 6, 6e-5, 0.04),
                ("healed_deletion", 0, None, 1.7, 0.01), ("healed_deletion", 6, None, 2.4e-3, 0.03)]
    for protocol, i, j, kl, rate in variants:
        for steps in (0, 5, 10):
            rows.append(dict(model="toy", revision="step400", protocol=protocol, layer_i=i, layer_j=j, heal_steps=steps,
                             kl_before=kl, kl_after=kl * (1 - rate * steps)))
    return pd.DataFrame(rows)


def test_healed_curves_titles_data_and_end_labels(figs, tmp_path):
    """Readable titles (no internal protocol names), every curve at the table's KL as a share of the variant's KL
    before healing, and variants that end on the same share one end label instead of overprinting."""
    from swapkl.studies.healed_probes.figures import PROTOCOL_TITLES, plot_healed_curves

    table = _healed_table()
    fig = _draw(tmp_path, "heal", lambda p, q: plot_healed_curves(table, p, q), figs)
    _clean(fig)
    assert "third test" in fig._suptitle.get_text()
    for ax, protocol in zip(fig.axes, ("healed_replacement", "healed_interchange", "healed_deletion")):
        assert ax.get_title() == PROTOCOL_TITLES[protocol] and "_" not in ax.get_title()
        rows = table[table["protocol"] == protocol]
        for (i, j), g in rows.groupby(["layer_i", "layer_j"], dropna=False):
            label = f"{i}" if pd.isna(j) else f"{i}←{int(j)}" if protocol == "healed_replacement" else f"{i}↔{int(j)}"
            (line,) = [ln for ln in ax.get_lines() if ln.get_label() == label]
            g = g.sort_values("heal_steps")
            assert np.allclose(line.get_ydata(), g["kl_after"] / g["kl_before"])
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "7←8, 8←7" in texts and "0←3" in texts and len(texts) == 4
    # a heal step that raises a variant's KL for a while (make real's SmolLM2: 1.39 of its KL before healing)
    rising = table.copy()
    rising.loc[(rising["protocol"] == "healed_interchange") & (rising["heal_steps"] == 5), "kl_after"] *= 1.4
    fig = _draw(tmp_path, "heal_up", lambda p, q: plot_healed_curves(rising, p, q), figs)
    top = max(float((g["kl_after"] / g["kl_before"]).max()) for _, g in rising.groupby("protocol"))
    assert all(ax.get_ylim()[1] > top for ax in fig.axes), top


def test_test_agreement_shows_readable_test_names_and_the_table_taus(figs, tmp_path):
    from swapkl.studies.healed_probes.figures import plot_test_agreement, label_of_test

    tests = ["replacement_max", "interchange", "healed_interchange", "interchange@toy-seed1"]
    rows = [dict(model="toy", revision="step400", level="pair", test_a=a, test_b=b, n_items=30, n_boot=100,
                 kendall=0.1 * (k + 1), kendall_ci_low=0.1 * k, kendall_ci_high=0.1 * (k + 2))
            for k, (a, b) in enumerate((a, b) for x, a in enumerate(tests) for b in tests[x + 1:])]
    table = pd.DataFrame(rows)
    fig = _draw(tmp_path, "ta", lambda p, q: plot_test_agreement(table, p, q), figs)
    _clean(fig)
    ax = fig.axes[0]
    names = [t.get_text() for t in ax.get_yticklabels()]
    assert names == ["replacement (max)", "interchange", "interchange, healed", "interchange [toy-seed1]"]
    assert label_of_test("replacement_max_block") == "replacement (max), per block"
    m = ax.get_images()[0].get_array()
    for r in rows:
        a, b = tests.index(r["test_a"]), tests.index(r["test_b"])
        assert m[a, b] == m[b, a] == pytest.approx(r["kendall"])
    assert "rank alike" in fig._suptitle.get_text()


def test_test_agreement_greys_cells_of_too_few_items(figs, tmp_path):
    """Pairs of tests sharing fewer than MIN_ITEMS items (the demo's healed tests: n = 3): the cell is grey (no
    colour for a tau that says nothing), labelled with its n only, and the labels stay inside their cells, also
    on an 8-test map like the demo's."""
    from matplotlib.colors import to_hex

    from swapkl.studies.healed_probes.figures import TOO_FEW_GREY, plot_test_agreement

    tests = ["replacement_max", "replacement_fwd", "interchange", "healed_replacement", "healed_interchange",
             "replacement_max@pythia-demo-seed1", "replacement_fwd@pythia-demo-seed1", "interchange@pythia-demo-seed1"]
    rows = []
    for x, a in enumerate(tests):
        for b in tests[x + 1:]:
            few = a.startswith("healed") or b.startswith("healed")
            rows.append(dict(model="toy", revision="step400", level="pair", test_a=a, test_b=b, n_boot=100,
                             n_items=3 if few else 30, too_few_items=few, kendall=1.0 if few else 0.5,
                             kendall_ci_low=np.nan if few else 0.4, kendall_ci_high=np.nan if few else 0.6))
    blocks = ["deletion", "healed_deletion", "bi", "angular", "replacement_max_block", "interchange_block"]
    block_rows = [dict(model="toy", revision="step400", level="block", test_a=a, test_b=b, n_boot=100,
                       n_items=2 if "healed" in a + b else 12, too_few_items="healed" in a + b, kendall=0.9,
                       kendall_ci_low=0.8, kendall_ci_high=0.95) for x, a in enumerate(blocks) for b in blocks[x + 1:]]
    table = pd.DataFrame(rows + block_rows)  # both maps side by side, as in the demo
    fig = _draw(tmp_path, "few", lambda p, q: plot_test_agreement(table, p, q), figs)
    _clean(fig)
    ax = fig.axes[0]
    image = ax.get_images()[0]
    m = image.get_array()
    labels = {(round(t.get_position()[1]), round(t.get_position()[0])): t.get_text() for t in ax.texts}
    for r in rows:
        a, b = tests.index(r["test_a"]), tests.index(r["test_b"])
        if r["too_few_items"]:
            assert np.ma.is_masked(m[a, b]) and np.ma.is_masked(m[b, a])
            assert labels[(a, b)] == labels[(b, a)] == "n=3"
        else:
            assert m[a, b] == m[b, a] == pytest.approx(r["kendall"]) and labels[(a, b)] == "0.50"
    assert to_hex(image.get_cmap().get_bad()) == TOO_FEW_GREY
    renderer = fig.canvas.get_renderer()
    cell = ax.transData.transform((1, 0)) - ax.transData.transform((0, 0))
    for t in ax.texts:  # every label narrower than its cell
        assert t.get_window_extent(renderer).width < abs(cell[0]), t.get_text()
    note = fig._supxlabel.get_window_extent(renderer)
    for tick in ax.get_xticklabels():  # the upright test names end above the note (they ran into it)
        assert tick.get_window_extent(renderer).y0 > note.y1, tick.get_text()


def test_recovery_bars_at_the_table_values_with_guide_labels_and_no_legend_over_them(figs, tmp_path):
    from swapkl.studies.heal.figures import plot_recovery

    rows = []
    for guide, cost, healed in (("interchange", 0.57, 0.55), ("bi", 2.0, 1.2)):
        rows.append(dict(model="toy", revision="step400", guide=guide, budget=2, removed_layers=[3, 5], phase="pruned",
                         delta_ppl_pct=cost, net_recovery=np.nan))
        rows.append(dict(model="toy", revision="step400", guide=guide, budget=2, removed_layers=[3, 5], phase="healed",
                         delta_ppl_pct=healed, net_recovery=0.3))
    table = pd.DataFrame(rows)
    fig = _draw(tmp_path, "rec", lambda p, q: plot_recovery(table, p, q), figs)
    _clean(fig)
    ax = fig.axes[0]
    heights = [b.get_height() for b in ax.patches]
    assert heights == pytest.approx([0.57, 2.0, 0.55, 1.2])
    labels = [t.get_text() for t in ax.get_xticklabels()]
    assert labels[0].startswith("Interchange-guided") and "ShortGPT BI" in labels[1]
    box = ax.get_legend().get_window_extent(fig.canvas.get_renderer())
    assert box.x0 >= ax.get_window_extent(fig.canvas.get_renderer()).x1  # beside the axes, over no bar
    assert fig._suptitle.get_text().startswith("Recovery after pruning")


def _task_pruning_rows(n_docs: int = 100) -> pd.DataFrame:
    rows = []
    for task, base in (("copy", 0.86), ("next", 0.36)):
        rows.append(dict(model="toy", revision="step400", calibration=task, calibration_kind="task", method="original",
                         budget=0, n_layers=12, task=task, metric="acc", accuracy=base, n_docs=n_docs))
        for method in ("bi", "accuracy", "interchange"):
            for budget in ((1, 2, 3) if method != "interchange" else (3,)):  # the curve methods add budgets
                rows.append(dict(model="toy", revision="step400", calibration=task, calibration_kind="task",
                                 method=method, budget=budget, n_layers=12, task=task, metric="acc",
                                 accuracy=base - 0.01 * budget * (1 + (method == "accuracy")), n_docs=n_docs))
    return pd.DataFrame(rows)


def test_gromov_curves_show_wilson_intervals_on_a_full_axis(figs, tmp_path):
    """Accuracies on 100 items: each point with its 95% Wilson interval (recomputed here with scipy), the axis
    0-100%, and no generative task named when none ran."""
    from scipy.stats import binomtest
    from swapkl.figures.task_pruning.curves import plot_gromov_curves

    table = _task_pruning_rows()
    fig = _draw(tmp_path, "gro", lambda p, q: plot_gromov_curves(table, p, q), figs)
    _clean(fig)
    ax = fig.axes[0]  # task "copy"
    assert ax.get_ylim() == (0.0, 100.0)
    cont = next(c for c in ax.containers if c.get_label() == "accuracy-guided")
    y = cont.lines[0].get_ydata()
    segments = cont.lines[2][0].get_segments()
    for value, seg in zip(y, segments):
        ci = binomtest(round(value), 100).proportion_ci(method="wilson")
        assert (seg[0][1], seg[1][1]) == pytest.approx((100 * ci.low, 100 * ci.high), abs=1e-9)
    want = [86.0, 84.0, 82.0, 80.0]
    assert np.allclose(y, want)
    assert "GSM8K" not in fig._supxlabel.get_text() and "generative" not in fig._supxlabel.get_text()


def test_task_specific_cells_in_whole_points_with_their_interval(figs, tmp_path):
    from swapkl.figures.task_pruning.curves import plot_task_specific

    table = _task_pruning_rows()
    fig = _draw(tmp_path, "tsp", lambda p, q: plot_task_specific(table, p, q), figs)
    _clean(fig)
    texts = [t.get_text() for t in fig.axes[0].texts]
    assert "86\n[78, 91]" in texts  # binomtest(86, 100) Wilson: [77.9, 91.4]
    assert not any("." in t.split("\n")[0] for t in texts if "[" in t)


def test_downstream_scores_in_whole_points_coloured_against_sampling_noise(figs, tmp_path):
    """Cells show the score in whole points; the colour is the change from the base model, its scale the largest
    half-width of the base score's 95% Wilson interval (scipy's), so a 1-point change on 100 items is pale."""
    from scipy.stats import binomtest
    from swapkl.studies.downstream.figures import plot_downstream

    rows = []
    for phase, guide, budget, removed, scores in (("base", None, 0, [], (0.29, 0.84)),
                                                  ("pruned", "interchange", 1, [6], (0.30, 0.83)),
                                                  ("pruned", "bi", 2, [6, 8], (0.29, 0.70))):
        for task, v in zip(("next", "cont"), scores):
            rows.append(dict(model="toy", revision="step400", phase=phase, guide=guide, budget=budget,
                             random_draw=None, fixed_set=None, checkpoint=None, removed_layers=removed, task=task,
                             score=v, retention=v / 0.5, n=100))
        rows.append(dict(rows[-1], task="average", score=float(np.mean(scores)), n=None))
    table = pd.DataFrame(rows)
    fig = _draw(tmp_path, "ds", lambda p, q: plot_downstream(table, p, q, model="toy", revision="step400"), figs)
    _clean(fig)
    ax = fig.axes[0]
    texts = [t.get_text() for t in ax.texts]
    assert texts[:3] == ["29", "84", "56.5"] and "70" in texts
    half = max((lambda ci: (ci.high - ci.low) / 2)(binomtest(k, 100).proportion_ci(method="wilson")) for k in (29, 84))
    im = ax.get_images()[0]
    assert im.norm.vmax == pytest.approx(100 * half) and im.norm.vmin == pytest.approx(-100 * half)
    assert im.get_array()[2, 1] == pytest.approx(-14.0) and im.get_array()[1, 0] == pytest.approx(1.0)


def test_optimal_search_says_when_every_method_found_the_same_sets(figs, tmp_path):
    from swapkl.studies.optimal_search.figures import plot_optimal_search

    rows = [dict(model="toy", revision="step400", n_layers=12, budget=n, method=m,
                 removed_layers=[3] if n == 1 else ([3, 6] if m != "greedy" else [3, 7]), cost=5.8 + 0.001 * n,
                 base_cost=5.81, gap_to_best=0.0, n_evals=10 * n, n_enumeration=12, bound=5.8, monotone_violations=0,
                 certified=m == "exhaustive", objective="nll")
            for n in (1, 2) for m in ("greedy", "beam", "best_first", "exhaustive")]
    table = pd.DataFrame(rows)
    fig = _draw(tmp_path, "os", lambda p, q: plot_optimal_search(table, p, q), figs)
    _clean(fig)
    assert fig.axes[0].get_title().endswith("\nall methods found the same blocks at n = 1") and not fig.axes[0].texts
    same = table.assign(removed_layers=[[3]] * len(table))
    fig = _draw(tmp_path, "os2", lambda p, q: plot_optimal_search(same, p, q), figs)
    assert fig.axes[0].get_title().endswith("\nall methods found the same blocks at every budget")
    different = table.assign(removed_layers=[[k % 4] for k in range(len(table))])
    fig = _draw(tmp_path, "os3", lambda p, q: plot_optimal_search(different, p, q), figs)
    assert "\n" not in fig.axes[0].get_title()


@pytest.mark.parametrize("n_models", [2, 4])
def test_scaling_says_when_there_are_too_few_models_for_a_trend(figs, tmp_path, n_models):
    from swapkl.studies.scaling.figures import plot_scaling

    table = pd.DataFrame(dict(model=[f"m{k}" for k in range(n_models)], n_params=[1e6 * 10 ** k for k in range(n_models)],
                              gap_mean=np.linspace(0.01, 0.02, n_models), ratio_ir_mean=np.linspace(0.2, 0.3, n_models),
                              position_encoding="rope"))
    fig = _draw(tmp_path, "sc", lambda p, q: plot_scaling(table, p, q), figs)
    _clean(fig)
    offsets = fig.axes[0].collections[0].get_offsets()
    assert np.allclose(offsets[:, 0], table["n_params"]) and np.allclose(offsets[:, 1], table["gap_mean"])
    assert ("no trend with size" in fig._suptitle.get_text()) == (n_models < 3)


@pytest.mark.parametrize("sizes, scale, labels", [
    ((853_568, 862_080), "linear", None),  # the demo's two models, 1% apart: no log axis of 8.54x10^5 ticks
    ((124e6, 1.4e9, 8e9), "log", ["200M", "500M", "1B", "2B", "5B"]),  # GPT-2 small to an 8B model
])
def test_scaling_writes_parameter_counts_as_read_aloud(figs, tmp_path, sizes, scale, labels):
    from swapkl.studies.scaling.figures import parameter_count, plot_scaling

    n = len(sizes)
    table = pd.DataFrame(dict(model=[f"m{k}" for k in range(n)], n_params=list(sizes),
                              gap_mean=np.linspace(0.01, 0.02, n), ratio_ir_mean=np.linspace(0.2, 0.3, n),
                              position_encoding="rope"))
    fig = _draw(tmp_path, "sc", lambda p, q: plot_scaling(table, p, q), figs)
    ax = fig.axes[0]
    assert ax.get_xscale() == scale
    lo, hi = ax.get_xlim()
    shown = [t.get_text() for t, v in zip(ax.get_xticklabels(), ax.get_xticks()) if lo <= v <= hi]
    assert shown and all(x and x[-1] in "KMB" and "10^" not in x and "times" not in x for x in shown), shown
    if labels:
        assert shown == labels
    assert [parameter_count(x) for x in (853_568, 124e6, 1.5e6, 8e9, 950)] == ["853.6K", "124M", "1.5M", "8B", "950"]
    ticks = [v for v in ax.get_xticks() if lo <= v <= hi]
    units = {"K": 1e3, "M": 1e6, "B": 1e9}
    assert [float(x[:-1]) * units[x[-1]] for x in shown] == pytest.approx(ticks, rel=1e-9)  # each label its tick


def test_pruning_cost_puts_the_main_rules_of_every_budget_on_one_axis(figs, tmp_path):
    """The right-hand column: each main rule's cost at every budget on one log axis (its points at the table's
    values, in both rows); a random mean far above the guided rules is left out there, and the title says so."""
    df = syn.pruning_table()
    df = df[(df["revision"] == "step16000") & (df["guide"] != "anti_interchange")].copy()
    budgets = sorted(set(df["budget"]) - {0})
    fig = _draw(tmp_path, "across", lambda p, q: pfig.plot_delta_ppl(df, "toy", "step16000", p, q), figs)
    _clean(fig)
    assert len(fig.axes) == 2 * len(budgets) + 2
    for ax, column in zip(fig.axes[-2:], ("delta_ppl_pct", "kl_mean")):
        drawn = df[df["guide"].isin(pfig.ACROSS_BUDGETS) & df["budget"].isin(budgets)][column]
        scale = "log" if (drawn > 0).all() else "linear"  # a log axis only where every value drawn is positive
        assert ax.get_title().startswith("all budgets, one axis") and ax.get_yscale() == scale, column
        for guide in pfig.ACROSS_BUDGETS:
            label = pfig.cost_label(pfig.GUIDE_STYLE[guide][0])
            line = next(cont for cont in ax.containers if cont.get_label() == label).lines[0]
            rows = df[(df["guide"] == guide) & df["budget"].isin(budgets) & df["random_draw"].isna()]
            assert list(line.get_ydata()) == pytest.approx(list(rows.sort_values("budget")[column])), (guide, column)
    far = df.copy()
    rand = far["guide"] == "random_mean"
    far.loc[rand, ["delta_ppl_pct", "delta_ppl_pct_min", "delta_ppl_pct_max"]] = [1e6, 1e5, 1e7]
    fig = _draw(tmp_path, "across_far", lambda p, q: pfig.plot_delta_ppl(far, "toy", "step16000", p, q), figs)
    top = fig.axes[-2]
    assert "off the axis" in top.get_title()
    assert pfig.cost_label(pfig.GUIDE_STYLE["random_mean"][0]) not in [c.get_label() for c in top.containers]
