"""Figures of healing: recovery after pruning, and the third test (equivalence after healing)."""

from swapkl.figures.figure_registry import Figure, register


register(Figure("recovery", "swapkl.figures.healing.recovery:plot_recovery", {"recovery": "results/recovery.parquet"},
                "global", "recovery", "the guides' delta PPL before and after healing", targets="heal"))
register(Figure("test_agreement", "swapkl.figures.healing.third_test:plot_test_agreement",
                {"agreement": "results/test_agreement/{model}/{revision}.parquet"}, "checkpoint",
                "third_test", "Kendall's tau between every two tests of one checkpoint (the disagreement map)",
                rule="plot_third_test", targets="healed_probes", labels={"figure": "disagreement map"}))
register(Figure("healed_curves", "swapkl.figures.healing.third_test:plot_healed_curves",
                {"healed": "results/healed_probes/{model}/{revision}.parquet"}, "checkpoint",
                "third_test", "the healed variants' recovery curves of one checkpoint", rule="plot_third_test",
                targets="healed_probes", labels={"figure": "recovery curves"}))
