"""Training curves of the demo models: held-out and training loss vs step."""

from __future__ import annotations

import os
from pathlib import Path

import pandas as pd

from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import open_input
from swapkl.figures.style import add_note, figure_style, new_figure, save_figure
from swapkl.figures.palette import GREY
from swapkl.figures.palette import cycled

COLUMNS = ("step", "heldout_loss", "train_loss")


def read_training_log(path: str | Path) -> pd.DataFrame:
    """A training-log CSV with columns step, heldout_loss, train_loss (empty cells allowed in the
    loss columns), sorted by step."""
    path = str(path)
    if not os.path.lexists(path):
        raise SwapKLError(f"{path}: training log not found")
    try:
        with open_input(path, "training log", "r", encoding="utf-8") as fh:
            df = pd.read_csv(fh)
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as e:
        raise SwapKLError(f"{path}: not a readable CSV ({str(e).splitlines()[0]})") from None
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise SwapKLError(f"{path}: training log lacks column(s) {', '.join(missing)}")
    if df.empty:
        raise SwapKLError(f"{path}: training log has no rows")
    for c in COLUMNS:
        try:
            df[c] = pd.to_numeric(df[c])
        except (ValueError, TypeError):
            raise SwapKLError(f"{path}: column {c} is not numeric") from None
    if df["step"].isna().any():
        raise SwapKLError(f"{path}: column step has empty cells")
    return df.sort_values("step", kind="mergesort").reset_index(drop=True)


def plot_training_curves(training_logs: dict[str, str | Path], out_png, out_pdf) -> None:
    """One colour per model: held-out loss (solid, markers) and training loss (dashed)."""
    if not training_logs:
        raise SwapKLError("plot_training_curves: no training logs given")
    logs = {name: read_training_log(p) for name, p in training_logs.items()}
    with figure_style():
        fig = new_figure(6.4, 4.2)
        ax = fig.subplots()
        for k, (name, df) in enumerate(logs.items()):
            colour = cycled(k, skip=(GREY,))
            tr = df.dropna(subset=["train_loss"])
            ho = df.dropna(subset=["heldout_loss"])
            if len(tr):
                ax.plot(tr["step"], tr["train_loss"], "--", color=colour, alpha=0.8, linewidth=1.1,
                        label=f"{name}: training loss")
            if len(ho):
                ax.plot(ho["step"], ho["heldout_loss"], "-o", color=colour, label=f"{name}: held-out loss")
        ax.set_xlabel("training step")
        ax.set_ylabel("next-token loss (nats per token)")
        ax.set_title("Demo models: loss during training")
        ax.legend(frameon=False, loc="best")
        last = ", ".join(f"{n} {float(df['heldout_loss'].dropna().iloc[-1]):.3f}"
                         for n, df in logs.items() if df["heldout_loss"].notna().any())
        add_note(fig, "held-out loss: mean NLL on held-out windows at each evaluation; training loss: "
                      f"mean over the logged steps' batches; final held-out loss: {last or 'n/a'}")
        save_figure(fig, out_png, out_pdf)
