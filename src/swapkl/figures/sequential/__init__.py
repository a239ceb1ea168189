"""How sure the answer is (the sequential probe, :mod:`swapkl.studies.sequential`): one figure per checkpoint."""

from swapkl.figures.figure_registry import Figure, register

register(Figure("sequential_decisions", "swapkl.figures.sequential.decisions:plot_sequential_decisions",
                {"decisions": "results/decisions.parquet"}, "checkpoint", "answer",
                "each decision of the sequential probe with its interval or stability and the windows it took, one "
                "checkpoint", targets="sequential", subcategory="{model}", params={"setup": "model_setup"}))
