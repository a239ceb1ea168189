"""The toy study's figure: one checkpoint's score against its number of blocks, as one bar."""

import pandas as pd

from swapkl.figures.style import figure_style, new_figure, save_figure


def plot_toy_score(scores, out_png, out_pdf) -> None:
    table = pd.read_parquet(scores)
    with figure_style():
        fig = new_figure(3, 2)
        fig.subplots().bar([str(b) for b in table["blocks"]], table["score"].to_numpy())
        save_figure(fig, out_png, out_pdf)
