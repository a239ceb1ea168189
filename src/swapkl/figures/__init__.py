"""Figures of swapkl results (matplotlib, Agg; each function writes a PNG and a PDF).

Every figure of the report is an entry of the figure registry (:mod:`.figure_registry`). The figures come in
families, one subpackage each, whose ``__init__`` registers the family's entries and whose modules draw them (the
plot functions the entries name, each called one way, :meth:`.figure_registry.Figure.draw`):

* :mod:`.demo` -- the demo models' training curves;
* :mod:`.protocol` -- protocol gap vs training step, I/R ratio by pair distance, the KL heatmaps, deletion against
  block influence, the weight protocols;
* :mod:`.pruning` -- pruning cost and the guides' agreement; :mod:`.task_pruning` -- pruning on tasks;
* :mod:`.construction` -- the optimal removal search and the snowball construction;
* :mod:`.relevance` -- accuracy-based relevance; :mod:`.downstream` -- downstream benchmarks;
* :mod:`.seeds` -- the gap across training seeds and its covariates; :mod:`.spans` -- middle-span experiments;
* :mod:`.scale` and :mod:`.pe_ablation` -- the scale sweep, the mechanism checks, the position-encoding ablation;
* :mod:`.healing` -- recovery after pruning and the third test.

The plain modules here are the drawing code's helpers, and the sublayers study's answer-page section
(:mod:`.sublayer_statements`): shared look and deterministic saving in :mod:`.style`,
colours in :mod:`.palette`, label placement, step axes, guide looks, aggregate selection. This ``__init__`` and
the families' import nothing but the registry, so that reading the registry does not import matplotlib.
"""
