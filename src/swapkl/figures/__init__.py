"""Figures of swapkl results (matplotlib, Agg; each function writes a PNG and a PDF).

One module per figure family:

* :func:`plot_gap_trajectory` -- protocol gap vs training step (:mod:`.trajectory`);
* :func:`plot_ratio_by_distance` -- I/R ratio by pair distance (:mod:`.ratio`);
* :func:`plot_heatmaps` -- replacement and interchange KL matrices (:mod:`.heatmaps`);
* :func:`plot_deletion_vs_bi` -- deletion KL vs ShortGPT BI per block (:mod:`.deletion`);
* :func:`plot_training_curves` -- demo models' loss curves (:mod:`.training`);
* :func:`plot_weight_protocols` -- averaging and head-level interchange (:mod:`.weights`);
* :func:`plot_seed_band` -- the gap across the seeds of a family (:mod:`.seeds`).

Shared look and deterministic saving live in :mod:`.style`.
"""

from swapkl.figures.deletion import plot_deletion_vs_bi
from swapkl.figures.heatmaps import plot_heatmaps
from swapkl.figures.ratio import plot_ratio_by_distance
from swapkl.figures.seeds import plot_seed_band
from swapkl.figures.training import plot_training_curves
from swapkl.figures.trajectory import plot_gap_trajectory
from swapkl.figures.weights import plot_weight_protocols

__all__ = ["plot_deletion_vs_bi", "plot_gap_trajectory", "plot_heatmaps", "plot_ratio_by_distance",
           "plot_seed_band", "plot_training_curves", "plot_weight_protocols"]
