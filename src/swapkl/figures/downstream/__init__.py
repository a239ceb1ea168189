"""Figures of the downstream benchmarks: one table figure per scored checkpoint."""

from swapkl.figures.figure_registry import Figure, register

register(Figure("downstream", "swapkl.figures.downstream.accuracy:plot_downstream",
                {"downstream": "results/downstream/{model}/{revision}.parquet"}, "checkpoint", "recovery",
                "downstream task scores of a checkpoint's base, pruned and healed models (a table figure)",
                targets="downstream", labels={"figure": "downstream benchmarks"}))
