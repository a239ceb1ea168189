"""Protocol gap along training across the seeds of a family: the across-seed band, every seed's line,
and how stable the pair ranking is across seeds."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.figures.stepaxis import set_step_axis
from swapkl.figures.palette import BLUE, GREEN, GREY, ORANGE, VERMILLION, cycled
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure
from swapkl.figures.protocol.trajectory import GAP_LABELS, pair_set_title
from swapkl.tables.schemas import read_seeds

#: the fewest seeds over which a step gets the mean +- sd band and the min/max lines (with fewer, the seeds are
#: drawn themselves)
BAND_SEEDS = 3
#: line styles of the seeds drawn on their own (a family of fewer than BAND_SEEDS seeds)
_SEED_STYLES = ("-o", "--s", ":^")
#: the colours of the rank-agreement row (the seeds' own lines share one legend with it, in other colours)
_ROW3_COLOURS = (GREY, VERMILLION, GREEN, ORANGE)
#: the band rows: (column prefix in the seeds table, y label, GAP_LABELS key)
_GAP_ROWS = (("gap", "gap, both\ndirections (nats)", "max"), ("gap_fwd", "gap, one\ndirection (nats)", "fwd"))


def absent_note(fam: pd.DataFrame) -> str:
    """'; absent on the hub (left out): seed 9 at step40000, ...' from the family rows' ``absent_seeds``."""
    absent = {}
    for revision, seeds in zip(fam["revision"], fam["absent_seeds"]):
        if isinstance(seeds, (list, np.ndarray)) and len(seeds):
            absent.setdefault(revision, sorted(int(x) for x in seeds))
    if not absent:
        return ""
    return "; absent on the hub (left out): " + ", ".join(
        f"seed{'s' if len(v) > 1 else ''} {', '.join(map(str, v))} at {r}" for r, v in absent.items())


def plot_seed_band(seeds: pd.DataFrame | str | Path, out_png, out_pdf, *, family: str) -> None:
    """Mean per-pair gap vs training step of every seed of ``family``, one column per pair set.

    Rows 1-2: the clean gap (d_repl = max of both directions) and the paper's one-direction gap. Where three or
    more seeds are, the band is the mean +- one standard deviation over seeds (ddof 1), dashed lines the seeds'
    minimum and maximum, thin grey lines the single seeds. A family of fewer than three seeds gets no spread
    statistic (a standard deviation of two values says little): each seed is drawn as its own coloured line,
    labelled with its seed. Row 3: pair-ranking stability across seeds (mean pairwise Spearman and Kendall's W
    of the per-pair gap), at steps with two or more seeds. Revisions without a step are left out.
    """
    df = seeds if isinstance(seeds, pd.DataFrame) else read_seeds(seeds)
    fam = df[(df["kind"] == "family") & (df["family"] == family) & df["step"].notna()]
    members = df[(df["kind"] == "member") & (df["family"] == family) & df["step"].notna()]
    if not (fam["n_seeds"] >= 2).any():
        raise SwapKLError(f"seeds table has no step with two or more seeds of {family} (families: "
                          f"{', '.join(sorted(set(df['family'].dropna()))) or 'none'})")
    sets = list(dict.fromkeys(fam["pair_set"]))
    banded = bool((fam["n_seeds"] >= BAND_SEEDS).any())  # else each seed is drawn as its own line
    seed_ids = sorted(int(v) for v in set(members["seed"]))
    with figure_style():
        fig = new_figure(3.6 * len(sets) + 0.6, 7.4)
        axes = fig.subplots(3, len(sets), sharex=True, squeeze=False, gridspec_kw={"height_ratios": [2, 2, 1.3]})
        desc = ""
        for c, s in enumerate(sets):
            every = fam[fam["pair_set"] == s].sort_values("step", kind="mergesort")
            t = every[every["n_seeds"] >= 2]  # across-seed statistics need two seeds
            x = t["step"].to_numpy(dtype=np.float64)
            wide = t["n_seeds"].to_numpy() >= BAND_SEEDS  # a spread statistic only over three seeds or more
            for r, (q, label, _) in enumerate(_GAP_ROWS):
                ax = axes[r, c]
                if wide.any():
                    mean, sd = t[f"{q}_seed_mean"].to_numpy(float)[wide], t[f"{q}_seed_sd"].to_numpy(float)[wide]
                    ax.fill_between(x[wide], mean - sd, mean + sd, color=BLUE, alpha=0.25, linewidth=0,
                                    label="mean ± sd over seeds")
                    ax.plot(x[wide], t[f"{q}_seed_min"].to_numpy(float)[wide], "--", color=BLUE, linewidth=0.9,
                            label="min and max over seeds")
                    ax.plot(x[wide], t[f"{q}_seed_max"].to_numpy(float)[wide], "--", color=BLUE, linewidth=0.9)
                for k, (seed, m) in enumerate(members[members["pair_set"] == s].groupby("seed")):
                    m = m.sort_values("step", kind="mergesort")
                    xs, ys = m["step"].to_numpy(float), m[f"{q}_mean"].to_numpy(float)
                    if banded:
                        ax.plot(xs, ys, "-", color=GREY, linewidth=0.7, alpha=0.8,
                                label="single seeds" if seed == members["seed"].min() else None)
                    else:
                        ax.plot(xs, ys, _SEED_STYLES[k % len(_SEED_STYLES)], color=cycled(k, skip=_ROW3_COLOURS),
                                linewidth=1.2, label=f"seed {int(seed)}")
                if wide.any():
                    ax.plot(x[wide], mean, "-o", color=BLUE, label="mean over seeds")
                ax.axhline(0.0, color="black", linewidth=0.8, zorder=0)
                if c == 0:
                    ax.set_ylabel(label)
            ax = axes[2, c]
            rho = "mean pairwise Spearman" if banded else "Spearman between the two seeds"
            ax.plot(x, t["spearman_gap"].to_numpy(float), "-o", color=VERMILLION, label=f"{rho} (gap)")
            if banded:  # of two rankings, Kendall's W is (1 + Spearman) / 2: nothing new
                ax.plot(x, t["kendall_w_gap"].to_numpy(float), "--s", color=GREEN, label="Kendall's W (gap)")
            ax.plot(x, t["spearman_gap_fwd"].to_numpy(float), ":^", color=ORANGE, label=f"{rho} (one-direction gap)")
            ax.set_ylim(-1.05, 1.05)
            ax.axhline(0.0, color="black", linewidth=0.8, zorder=0)
            ax.set_xlabel("training step")
            if c == 0:
                ax.set_ylabel("rank agreement\n(dimensionless)")
            axes[0, c].set_title(pair_set_title(s, every["n_pairs"].iloc[-1]))
            for ax in axes[:, c]:
                desc = set_step_axis(ax, every["step"].to_numpy(dtype=np.float64))
        n_seeds = [int(n) for n in fam["n_seeds"]]
        fit_title(fig, f"{family}: protocol gap (replacement KL − interchange KL) over training, across seeds")
        handles = [h for a in (axes[0, 0], axes[2, 0]) for h in zip(*a.get_legend_handles_labels())]
        fig.legend([h for h, _ in handles], [t for _, t in handles], loc="outside right center", frameon=False,
                   fontsize="x-small")
        per_step = f"{min(n_seeds)}" if min(n_seeds) == max(n_seeds) else f"{min(n_seeds)} to {max(n_seeds)}"
        spread = ("band, min and max where three or more, rank agreement where two or more" if banded else
                  f"only {max(n_seeds)} seeds: each drawn on its own, no spread statistic; rank agreement between them")
        add_note(fig, f"mean over pairs of the per-pair gap for each seed; seeds {seed_ids}, "
                      f"{per_step} per step ({spread}); "
                      f"{GAP_LABELS['max']} (row 1); "
                      f"{GAP_LABELS['fwd']} (row 2); KL(p_base ‖ p_variant) in nats; {desc}"
                      f"{absent_note(fam)}")
        save_figure(fig, out_png, out_pdf)


