"""Figures of the pruning tables: cost per guide, the interchange- against replacement-guided cost, and the
agreement between the guides."""

from swapkl.figures.figure_registry import PRUNING, Figure, register

TABLE = {"pruning": PRUNING}
AGREEMENT = {"agreement": "results/pruning_agreement.parquet"}
PRUNE_PARAMS = {"setup": "model_setup", "prune": "pruning"}
BOOTSTRAP = {"n_boot": "n_boot", "seed": "seed"}

register(Figure("pruning_cost", "swapkl.figures.pruning.cost:plot_delta_ppl", TABLE, "checkpoint", "pruning",
                "delta perplexity and KL vs budget per guide, one checkpoint", targets="prune", subcategory="{model}",
                params=PRUNE_PARAMS))
register(Figure("pruning_agreement", "swapkl.figures.pruning.cost:plot_agreement", AGREEMENT, "checkpoint",
                "agreement", "rank agreement between the pruning guides' per-layer scores, one checkpoint",
                targets="prune", subcategory="{model}", params=PRUNE_PARAMS))
register(Figure("rank_confusion", "swapkl.figures.pruning.confusion:plot_rank_confusion", AGREEMENT, "checkpoint",
                "agreement", "rank confusion of each pruning guide against deletion, one checkpoint",
                rule="plot_pruning_agreement", targets="prune", subcategory="{model}",
                labels={"figure": "rank confusion"}, params={**PRUNE_PARAMS, "guide": "rank_guide"},
                plot_params=("guide",)))
register(Figure("pruning_difference", "swapkl.figures.pruning.cost:plot_ir_panel", TABLE, "global",
                "pruning",
                "interchange- minus replacement-guided pruning cost vs budget, one line per pruned model",
                targets="pruned", subcategory="All models", params={"prune": "all_pruning", **BOOTSTRAP},
                plot_params=tuple(BOOTSTRAP)))
register(Figure("pruning_trajectory", "swapkl.figures.pruning.cost:plot_ir_trajectory", TABLE, "model",
                "pruning", "interchange- minus replacement-guided pruning cost vs training step of one model",
                targets="pruning_trajectory", subcategory="{model}", params={"prune": "pruning", **BOOTSTRAP},
                plot_params=tuple(BOOTSTRAP)))
