"""A toy figure family, complete: this entry, its plot function in ``bars.py`` and its caption ``toy_figure.rst``.
tests/test_figure_registry.py drops the folder into a copy of ``src/swapkl/figures/`` (and the caption into
``workflow/report/``) and finds the figure on the command line, in the dry-run DAG and among the report's targets."""

from swapkl.figures.figure_registry import AGGREGATE, Figure, register

register(Figure("toy_figure", "swapkl.figures.toy_figure.bars:plot_toy", {"aggregate": AGGREGATE}, "checkpoint",
                "gap", "a toy figure: rows with an I/R ratio per kind, one checkpoint"))
