"""The middle-span experiments of one checkpoint."""

from swapkl.figures.figure_registry import Figure, register

register(Figure("spans", "swapkl.figures.spans.span_kl:plot_spans", {"spans": "results/spans.parquet"}, "checkpoint",
                "spans", "KL against middle-span width per variant of one checkpoint", targets="spans",
                subcategory="{model}", params={"setup": "model_setup", "spans": "spans"}))
