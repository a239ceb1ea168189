"""Figures of swapkl results (matplotlib, Agg; each function writes a PNG and a PDF).

Every figure of the report is an entry of the figure registry (:mod:`.figure_registry`), declared in a module of
:mod:`.entries`; its plot function, of the registry's one signature (``draw_*``), lives in the module of its figure
family, for example:

* :mod:`.trajectory` -- protocol gap vs training step;
* :mod:`.ratio_figure` -- I/R ratio by pair distance;
* :mod:`.heatmaps` -- replacement and interchange KL matrices;
* :mod:`.pruning_figure` and :mod:`.confusion` -- pruning cost and the guides' agreement;
* :mod:`.scale` -- the scale sweep and the mechanism checks.

Shared look and deterministic saving live in :mod:`.style`. This package's ``__init__`` imports nothing, so that
importing :mod:`swapkl.figures.figure_registry` does not import matplotlib.
"""
