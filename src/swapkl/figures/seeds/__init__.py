"""Figures of the seed families: the gap's across-seed band, and what explains the gap (covariates)."""

from swapkl.figures.figure_registry import Figure, register

register(Figure("seed_band", "swapkl.figures.seeds.band:plot_seed_band", {"seeds": "results/seeds.parquet"},
                "family", "seeds", "protocol gap vs training step across the seeds of a family", folder="seeds",
                constrained=True, params={"setup": "family_setup"}))
register(Figure("covariates", "swapkl.figures.seeds.covariates:plot_covariate_correlations",
                {"correlations": "results/covariate_correlations.parquet"}, "global", "covariates",
                "Spearman correlation of each covariate with the protocol gap", targets="covariates",
                params={"families": "families"}, plot_params=("families",)))
