"""The position-encoding ablation's figure: drawn when the config's `pe_ablation` block is enabled."""

from swapkl.figures.figure_registry import Figure, register

register(Figure("pe_ablation", "swapkl.figures.pe_ablation.encodings:plot_pe_ablation",
                {"pe_ablation": "results/pe_ablation.parquet"}, "global", "scale",
                "I/R ratio by pair distance per position encoding and depth (models trained from scratch)",
                targets="pe_ablation"))
