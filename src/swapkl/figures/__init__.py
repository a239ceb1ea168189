"""Figures of swapkl results (matplotlib, Agg; each function writes a PNG and a PDF).

One module per figure family:

* :func:`plot_gap_trajectory` -- protocol gap vs training step (:mod:`.trajectory`);
* :func:`plot_ratio_by_distance` -- I/R ratio by pair distance (:mod:`.ratio_figure`);
* :func:`plot_heatmaps` -- replacement and interchange KL matrices (:mod:`.heatmaps`);
* :func:`plot_deletion_vs_bi` -- deletion KL vs ShortGPT BI per block (:mod:`.deletion`);
* :func:`plot_training_curves` -- demo models' loss curves (:mod:`.training`);
* :func:`plot_weight_protocols` -- averaging and head-level interchange (:mod:`.weights`);
* :func:`plot_seed_band` -- the gap across the seeds of a family (:mod:`.seeds_figure`).

Shared look and deterministic saving live in :mod:`.style`.
"""
