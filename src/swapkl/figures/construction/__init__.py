"""The snowball construction's and the optimal removal-set search's figures: drawn when the config's `snowball`
block or a model's `optimal_search` block is enabled."""

from swapkl.figures.figure_registry import Figure, register

register(Figure("snowball", "swapkl.figures.construction.snowball:plot_snowball",
                {"snowball": "results/snowball.parquet"}, "global", "relevance",
                "block influence per block of the snowball model beside its accuracy without the block",
                targets="snowball"))
register(Figure("optimal_search", "swapkl.figures.construction.optimal_search:plot_optimal_search",
                {"optimal_search": "results/optimal_search.parquet"}, "global", "pruning",
                "calibration NLL and evaluations of greedy, beam, best-first and exhaustive removal-set search",
                targets="optimal_search"))
