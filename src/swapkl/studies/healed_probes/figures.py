"""The disagreement map of one checkpoint: Kendall's tau between every two tests, pair and block level."""

from __future__ import annotations

import numpy as np
import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.figures.labels import place_labels
from swapkl.figures.style import add_note, figure_style, fit_title, new_figure, save_figure
from swapkl.probes.disagreement import MIN_ITEMS

#: the cells of two tests that share too few items to test
TOO_FEW_GREY = "#d9d9d9"

LEVELS = (("pair", "pairs (i, j)"), ("block", "blocks"))

#: the readable name of each test of swapkl.probes.disagreement
TEST_LABELS = {
    "replacement_max": "replacement (max)",
    "replacement_fwd": "replacement (i←j)",
    "interchange": "interchange",
    "healed_replacement": "replacement, healed",
    "healed_replacement_max": "replacement, healed",
    "healed_interchange": "interchange, healed",
    "deletion": "deletion KL",
    "healed_deletion": "deletion KL, healed",
    "bi": "ShortGPT BI",
    "angular": "angular distance",
    "accrel": "accuracy relevance",
}
#: how the protocols of the healed table read in a title
PROTOCOL_TITLES = {"healed_replacement": "Replacement M(i←j), healed",
                   "healed_interchange": "Interchange M(i↔j), healed",
                   "healed_deletion": "Deletion M(−i), healed"}


def label_of_test(name: str) -> str:
    """The readable name of test ``name``: ``X_block`` is pair test X as a block score, ``X@member`` test X on
    another member of the seed family."""
    test, _, member = name.partition("@")
    block = test.endswith("_block")
    base = test[: -len("_block")] if block else test
    label = TEST_LABELS.get(base, base)
    if block:
        label += ", per block"
    return f"{label} [{member}]" if member else label


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
    from matplotlib import colormaps

    df = table if isinstance(table, pd.DataFrame) else pd.read_parquet(table)
    levels = [(lv, label) for lv, label in LEVELS if (df["level"] == lv).any()]
    if not levels:
        raise SwapKLError("the agreement table has no rows to plot")
    sizes = [len(set(df.loc[df["level"] == lv, "test_a"]) | set(df.loc[df["level"] == lv, "test_b"]))
             for lv, _ in levels]
    # upright labels (more than five tests) need room below the map; the layout leaves them a little short
    longest = max(len(label_of_test(t)) for t in [*df["test_a"], *df["test_b"]])
    below = 0.015 * longest if max(sizes) > 5 else 0.0
    with figure_style():
        fig = new_figure(sum(2.4 + 0.62 * s for s in sizes) + 1.0, 3.2 + 0.55 * max(sizes) + below)
        axes = fig.subplots(1, len(levels), squeeze=False)[0]
        for ax, (lv, label) in zip(axes, levels):
            tests, tau, lo, hi, few = _matrix(df[df["level"] == lv])
            # too few items to test: a grey cell with its n, no colour for a tau that says nothing
            shown = np.where(few > 0, np.nan, tau)
            cmap = colormaps["RdBu_r"].with_extremes(bad=TOO_FEW_GREY)
            im = ax.imshow(shown, vmin=-1, vmax=1, cmap=cmap)
            with_ci = len(tests) <= 7  # larger maps show tau only (the CIs are in the table)
            for x in range(len(tests)):
                for y in range(len(tests)):
                    if x != y and few[x, y]:
                        ax.text(y, x, f"n={few[x, y]}", ha="center", va="center", fontsize=6.5, color="0.25")
                    elif x != y and np.isfinite(tau[x, y]):
                        text = f"{tau[x, y]:.2f}" + (f"\n[{lo[x, y]:.2f}, {hi[x, y]:.2f}]" if with_ci else "")
                        ax.text(y, x, text, ha="center", va="center", fontsize=5.5 if with_ci else 6.5,
                                color="white" if abs(tau[x, y]) > 0.6 else "black")
            ax.grid(False)
            names = [label_of_test(t) for t in tests]
            steep = len(tests) > 5  # slanted labels of many tests run into each other
            ax.set_xticks(range(len(tests)), names, rotation=90 if steep else 60, ha="center" if steep else "right",
                          fontsize=7)
            ax.set_yticks(range(len(tests)), names, fontsize=7)
            ax.set_title(f"rankings of {label}")
        fig.colorbar(im, ax=list(axes), shrink=0.7, label="Kendall's tau")
        model, revision = df["model"].iloc[0], df["revision"].iloc[0]
        fit_title(fig, f"{model} @ {revision}: do the tests of layer equivalence rank alike?")
        n_boot = int(df["n_boot"].iloc[0])
        add_note(fig, "Kendall's tau-b between tests over the items both score; 95% "
                      f"bootstrap CI over probe windows ({n_boot} resamples) in brackets (in the table for maps of "
                      "more than 7 tests). Tests: KL of each probe (replacement: max of both directions, or r(i←j) alone), "
                      "after healing, on another seed's model [in brackets], and pair tests as block scores "
                      f"(s(i) = min over j of d(i, j)). Grey cells compare fewer than {MIN_ITEMS} items (n=...): too few "
                      "to test, so no colour and no CI (their tau is in the table).", width=0.9)
        save_figure(fig, out_png, out_pdf)


PROTOCOL_COLOURS = {"healed_replacement": "#1b9e77", "healed_interchange": "#d95f02", "healed_deletion": "#7570b3"}


def plot_healed_curves(table: pd.DataFrame | str, out_png, out_pdf) -> None:
    """Each healed variant's KL to the base model along its heal steps, as a share of its KL before healing (a
    linear axis: a heal that removes a few percent of a KL spanning decades shows), one line per variant, one
    panel per protocol."""
    df = table if isinstance(table, pd.DataFrame) else pd.read_parquet(table)
    if df.empty:
        raise SwapKLError("the healed table has no rows to plot")
    protocols = [p for p in PROTOCOL_COLOURS if (df["protocol"] == p).any()]
    with figure_style():
        fig = new_figure(max(3.4 * len(protocols), 7.0), 3.6)
        axes = fig.subplots(1, len(protocols), squeeze=False)[0]
        ends, lowest, highest = [], 1.0, 1.0
        for ax, protocol in zip(axes, protocols):
            rows = df[df["protocol"] == protocol]
            xs, ys, names = [], [], []
            for (i, j), g in rows.groupby(["layer_i", "layer_j"], dropna=False, sort=True):
                g = g.sort_values("heal_steps")
                before = g["kl_before"].to_numpy(dtype=float)
                share = np.divide(g["kl_after"].to_numpy(dtype=float), before, out=np.full(len(g), np.nan),
                                  where=before > 0)
                label = f"{int(i)}" if pd.isna(j) else f"{int(i)}←{int(j)}" if protocol == "healed_replacement" \
                    else f"{int(i)}↔{int(j)}"
                ax.plot(g["heal_steps"], share, marker="o", ms=3, lw=1, color=PROTOCOL_COLOURS[protocol],
                        alpha=0.8, label=label)
                if np.isfinite(share).any():  # a heal step may raise the KL for a while: the axis keeps it in view
                    lowest, highest = min(lowest, float(np.nanmin(share))), max(highest, float(np.nanmax(share)))
                xs.append(g["heal_steps"].iloc[-1]), ys.append(share[-1]), names.append(label)
            ax.axhline(1.0, color="#888888", lw=0.6, ls="--")
            ax.set_xlabel("heal (LoRA) steps")
            ax.set_ylabel("KL left (share of the KL before healing)")
            ax.set_title(PROTOCOL_TITLES.get(protocol, protocol), fontsize=9)
            last = max(float(rows["heal_steps"].max()), 1.0)
            ax.set_xlim(-0.04 * last, 1.3 * last)  # room for the end labels
            ends.append((ax, xs, ys, names))
        span = highest - lowest
        for ax in axes:  # one scale: the panels compare
            ax.set_ylim(max(0.0, lowest - 0.1 * span - 0.01), highest + 0.05 * span + 0.02)
        model, revision = df["model"].iloc[0], df["revision"].iloc[0]
        fit_title(fig, f"{model} @ {revision}: the third test, KL to the base model while each variant heals")
        add_note(fig, "KL(p_base ‖ p_variant) on the probe windows after each measured number of heal steps, divided "
                      "by the variant's KL before healing (1, dashed: nothing recovered; 0: the base model's "
                      "predictions); one line per variant, labelled at its last step (variants that end on top of "
                      "each other share one label). results/healed.parquet holds the KL values.", width=0.9)
        for ax, xs, ys, names in ends:
            place_labels(ax, xs, ys, names)
        save_figure(fig, out_png, out_pdf)
