"""The disagreement map of one checkpoint: Kendall's tau between every two tests, pair and block level."""

from __future__ import annotations

import numpy as np
import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.figures.style import add_note, figure_style, new_figure, save_figure
from swapkl.probes.disagreement import MIN_ITEMS

LEVELS = (("pair", "pairs (i, j)"), ("block", "blocks"))


def _matrix(rows: pd.DataFrame) -> tuple[list[str], np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Tests, Kendall's tau and its CI per cell, and each cell's item count where it is too few to test (else 0)."""
    tests = list(dict.fromkeys([*rows["test_a"], *rows["test_b"]]))
    n = len(tests)
    tau, lo, hi = (np.full((n, n), np.nan) for _ in range(3))
    few = np.zeros((n, n), dtype=int)
    np.fill_diagonal(tau, 1.0)
    for r in rows.itertuples(index=False):
        a, b = tests.index(r.test_a), tests.index(r.test_b)
        for x, y in ((a, b), (b, a)):
            tau[x, y], lo[x, y], hi[x, y] = r.kendall, r.kendall_ci_low, r.kendall_ci_high
            few[x, y] = r.n_items if getattr(r, "too_few_items", False) else 0
    return tests, tau, lo, hi, few


def plot_test_agreement(table: pd.DataFrame | str, out_png, out_pdf) -> None:
    df = table if isinstance(table, pd.DataFrame) else pd.read_parquet(table)
    levels = [(lv, label) for lv, label in LEVELS if (df["level"] == lv).any()]
    if not levels:
        raise SwapKLError("the agreement table has no rows to plot")
    sizes = [len(set(df.loc[df["level"] == lv, "test_a"]) | set(df.loc[df["level"] == lv, "test_b"]))
             for lv, _ in levels]
    with figure_style():
        fig = new_figure(sum(1.0 + 0.62 * s for s in sizes) + 1.0, 1.6 + 0.55 * max(sizes))
        axes = fig.subplots(1, len(levels), squeeze=False)[0]
        for ax, (lv, label) in zip(axes, levels):
            tests, tau, lo, hi, few = _matrix(df[df["level"] == lv])
            im = ax.imshow(tau, vmin=-1, vmax=1, cmap="RdBu_r")
            with_ci = len(tests) <= 7  # larger maps show tau only (the CIs are in the table)
            for x in range(len(tests)):
                for y in range(len(tests)):
                    if x != y and np.isfinite(tau[x, y]):
                        text = f"{tau[x, y]:.2f}" + (f"\n(n={few[x, y]}: too few)" if few[x, y] else
                                                     f"\n[{lo[x, y]:.2f}, {hi[x, y]:.2f}]" if with_ci else "")
                        ax.text(y, x, text, ha="center", va="center", fontsize=5.5 if with_ci else 6.5)
            ax.grid(False)
            ax.set_xticks(range(len(tests)), tests, rotation=60, ha="right", fontsize=7)
            ax.set_yticks(range(len(tests)), tests, fontsize=7)
            ax.set_title(f"rankings of {label}")
        fig.colorbar(im, ax=list(axes), shrink=0.7, label="Kendall's tau")
        model, revision = df["model"].iloc[0], df["revision"].iloc[0]
        n_boot = int(df["n_boot"].iloc[0])
        add_note(fig, f"{model} @ {revision}: Kendall's tau-b between tests over the items both score; 95% "
                      f"bootstrap CI over probe windows ({n_boot} resamples) in brackets (in the table for maps of "
                      f"more than 7 tests). Cells marked \"too few\" compare fewer than {MIN_ITEMS} items: too few to "
                      "test, no CI.")
        save_figure(fig, out_png, out_pdf)


PROTOCOL_COLOURS = {"healed_replacement": "#1b9e77", "healed_interchange": "#d95f02", "healed_deletion": "#7570b3"}


def plot_healed_curves(table: pd.DataFrame | str, out_png, out_pdf) -> None:
    """KL to the base model against heal steps, one line per healed variant, one panel per protocol."""
    df = table if isinstance(table, pd.DataFrame) else pd.read_parquet(table)
    if df.empty:
        raise SwapKLError("the healed table has no rows to plot")
    protocols = [p for p in PROTOCOL_COLOURS if (df["protocol"] == p).any()]
    with figure_style():
        fig = new_figure(3.0 * len(protocols), 2.8)
        axes = fig.subplots(1, len(protocols), squeeze=False)[0]
        for ax, protocol in zip(axes, protocols):
            rows = df[df["protocol"] == protocol]
            for (i, j), g in rows.groupby(["layer_i", "layer_j"], dropna=False, sort=True):
                g = g.sort_values("heal_steps")
                label = f"{int(i)}" if pd.isna(j) else f"{int(i)}←{int(j)}" if protocol == "healed_replacement" \
                    else f"{int(i)}↔{int(j)}"
                ax.plot(g["heal_steps"], g["kl_after"], marker="o", ms=3, lw=1, color=PROTOCOL_COLOURS[protocol],
                        alpha=0.8)
                ax.annotate(label, (g["heal_steps"].iloc[-1], g["kl_after"].iloc[-1]), fontsize=6,
                            xytext=(3, 0), textcoords="offset points", va="center")
            ax.set_yscale("symlog", linthresh=1e-6)
            ax.set_xlabel("heal steps")
            ax.set_ylabel("KL(p_base ‖ p_variant)")
            ax.set_title(protocol)
        model, revision = df["model"].iloc[0], df["revision"].iloc[0]
        add_note(fig, f"{model} @ {revision}: KL on the probe windows after each measured number of heal steps "
                      "(0 = the base protocol); symmetric log scale, linear below 1e-6.")
        save_figure(fig, out_png, out_pdf)


def draw_test_agreement(inputs, out_png, out_pdf, *, wildcards, params):
    """The disagreement map of the checkpoint's agreement table (the table holds one checkpoint)."""
    plot_test_agreement(inputs["agreement"], out_png, out_pdf)


def draw_healed_curves(inputs, out_png, out_pdf, *, wildcards, params):
    """The healed variants' recovery curves of the checkpoint's healed-probe table (one checkpoint)."""
    plot_healed_curves(inputs["healed"], out_png, out_pdf)
