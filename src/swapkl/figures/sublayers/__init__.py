"""The protocol gap inside the block (the sublayers study, :mod:`swapkl.studies.sublayers`): one figure per model.
The statements a run supports, the study's section of the answer page, are :mod:`swapkl.figures.sublayer_statements`
(a plain module: naming it from the study's declaration must not reach this family's drawing code)."""

from swapkl.figures.figure_registry import Figure, register

register(Figure("sublayer_decomposition", "swapkl.figures.sublayers.decomposition:plot_sublayer_decomposition",
                {"gaps": "results/sublayer_gaps.parquet", "sublayer_pruning": "results/sublayer_pruning.parquet"},
                "model", "sublayers", "each pair's gap split over attention and MLP, sublayer deletion cost per "
                "parameter, and sublayer against block pruning of one model", targets="sublayers",
                params={"setup": "model_setup"}))
