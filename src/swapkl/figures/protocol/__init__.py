"""Figures of the probe aggregate (results/swapkl.parquet): gap along training, I/R ratio by distance, heatmaps,
deletion against block influence, weight protocols."""

from swapkl.figures.figure_registry import AGGREGATE, Figure, register

TABLE = {"aggregate": AGGREGATE}
SETUP = {"setup": "model_setup"}
#: the report labels of the two variants of a figure (d_repl from both replacement directions or from one)
BOTH_DIRECTIONS = {"replacement": "both directions (max)"}
ONE_DIRECTION = {"replacement": "one direction"}

register(Figure("gap_trajectory", "swapkl.figures.protocol.trajectory:plot_gap_trajectory", TABLE, "model", "gap",
                "protocol gap vs training step, one panel per pair set (replacement: max of both directions)",
                targets="trajectory", labels=BOTH_DIRECTIONS, params=SETUP, options={"gap": "max"}))
register(Figure("gap_trajectory_fwd", "swapkl.figures.protocol.trajectory:plot_gap_trajectory", TABLE, "model",
                "gap", "protocol gap vs training step, one panel per pair set (replacement: one direction)",
                rule="plot_gap_trajectory", targets="trajectory", labels=ONE_DIRECTION, params=SETUP,
                options={"gap": "fwd"}))
register(Figure("ratio_by_distance", "swapkl.figures.protocol.ratio:plot_ratio_by_distance", TABLE, "model", "ratio",
                "I/R ratio by pair distance, one line per checkpoint (replacement: max of both directions)",
                labels=BOTH_DIRECTIONS, params=SETUP, options={"gap": "max"}))
register(Figure("ratio_by_distance_fwd", "swapkl.figures.protocol.ratio:plot_ratio_by_distance", TABLE, "model",
                "ratio", "I/R ratio by pair distance, one line per checkpoint (replacement: one direction)",
                rule="plot_ratio_by_distance", labels=ONE_DIRECTION, params=SETUP, options={"gap": "fwd"}))
register(Figure("heatmaps", "swapkl.figures.protocol.heatmaps:plot_heatmaps", TABLE, "checkpoint", "heatmaps",
                "replacement and interchange KL heatmaps of one checkpoint", subcategory="{model}", params=SETUP))
register(Figure("deletion_vs_bi", "swapkl.figures.protocol.deletion:plot_deletion_vs_bi", TABLE, "checkpoint",
                "deletion", "deletion KL vs ShortGPT block influence per block", targets="deletion",
                subcategory="{model}", params=SETUP))
register(Figure("weight_protocols", "swapkl.figures.protocol.weights:plot_weight_protocols", TABLE, "checkpoint",
                "weights", "weight averaging and head-level interchange of one checkpoint", targets="weights",
                subcategory="{model}", params=SETUP))
