"""The toy figure's drawing: how many rows of each kind have an I/R ratio at one checkpoint, as a bar chart."""

import pandas as pd

from swapkl.figures.style import figure_style, new_figure, save_figure


def plot_toy(aggregate, out_png, out_pdf, *, model: str, revision: str) -> None:
    table = aggregate if isinstance(aggregate, pd.DataFrame) else pd.read_parquet(aggregate)
    rows = table[(table["model"] == model) & (table["revision"] == revision)]
    counts = rows.groupby("kind")["ratio_ir"].count()
    with figure_style():
        fig = new_figure(3, 2)
        fig.subplots().bar(list(counts.index), counts.to_numpy())
        save_figure(fig, out_png, out_pdf)
