"""Figures of accuracy-based relevance (AccRel) against cosine similarity, one checkpoint each."""

from swapkl.figures.figure_registry import AGGREGATE, Figure, register

RELEVANCE = "results/relevance.parquet"


def _relevance(name: str, plot: str, inputs: dict, help_: str, figure: str) -> None:
    register(Figure(name, f"swapkl.figures.relevance.ranks:{plot}", inputs, "checkpoint", "relevance", help_,
                    targets="relevance", subcategory="{model}", labels={"figure": figure}))


_relevance("relevance_cosine", "plot_cosine_vs_relevance", {"relevance": RELEVANCE, "aggregate": AGGREGATE},
           "cosine similarity (1 - BI) vs AccRel per block and task", "cosine vs AccRel")
_relevance("relevance_zscores", "plot_relevance_zscores", {"relevance": RELEVANCE}, "per-task z-scores of AccRel", "task z-scores")
_relevance("relevance_confusion", "plot_relevance_confusion", {"stats": "results/relevance_stats.parquet"},
           "rank confusion matrix of AccRel against cosine, one panel per task", "rank confusion vs cosine")
