"""Pruning guides: every rule that chooses which blocks to remove, registered here, in table order
(:mod:`swapkl.pruning.guides.guide_registry`).

Each line names a guide, its place in the tables (``rank``), its label, its family and the function that
chooses its blocks (``"module:function"`` in this folder, imported only when the guide runs), so this package
imports no numpy: the workflow's config checks guide names against it where Snakemake runs. A new guide is its
line here and its function (in a module of this folder, a new one or an existing one), plus its test.
"""

from swapkl.pruning.guides.guide_registry import (BEAM_WIDTH, Guide, Pruned, Selection, get_guide, guide_names,
                                                  register_guide, registered)

_HERE = __name__

# the unpruned model and the random draws' summary: rows derived from the others (no function)
register_guide("base", None, rank=0, label="Unpruned model", family="control", plotted=False)
register_guide("random_mean", None, rank=910, label="Random (mean ± s.d. of draws; band: min–max)",
               family="control")
# the probes' per-layer scores (protocol.py)
register_guide("interchange", f"{_HERE}.protocol:interchange", rank=10, label="Interchange-guided",
               family="interchange")
register_guide("replacement_max", f"{_HERE}.protocol:replacement_max", rank=20, label="Replacement-guided (max)",
               family="replacement")
register_guide("replacement_mean", f"{_HERE}.protocol:replacement_mean", rank=30,
               label="Replacement-guided (mean)", family="replacement")
register_guide("deletion", f"{_HERE}.protocol:deletion", rank=40, label="Deletion-KL-guided", family="removal")
register_guide("anti_interchange", f"{_HERE}.protocol:anti_interchange", rank=50,
               label="Anti-guided (highest interchange first)", family="control")
register_guide("interchange_clustered", f"{_HERE}.protocol:interchange_clustered", rank=52,
               label="Interchange-guided within a region (paper's clustered)", family="interchange")
register_guide("replacement_max_clustered", f"{_HERE}.protocol:replacement_max_clustered", rank=54,
               label="Replacement-guided within a region", family="replacement")
register_guide("fixed", f"{_HERE}.protocol:fixed_sets", rank=58, label="Fixed layer set", family="control",
               plotted=False)
# the residual stream's similarities (residual.py)
register_guide("bi", f"{_HERE}.residual:bi", rank=60, label="ShortGPT BI (lowest first)", family="representation")
register_guide("angular", f"{_HERE}.residual:angular", rank=70, label="Gromov angular (contiguous block)",
               family="representation")
register_guide("cka", f"{_HERE}.residual:cka", rank=95, label="Linear CKA of block input and output (highest first)",
               family="representation")
# measured removal costs on calibration windows (calibration.py)
register_guide("sleb_iterative", f"{_HERE}.calibration:sleb_iterative_guide", rank=80,
               label="SLEB-iterative (calibration NLL)", family="removal")
register_guide("sleb_greedy", f"{_HERE}.calibration:sleb_greedy", rank=85,
               label="SLEB-greedy (one-shot calibration NLL)", family="removal")
register_guide("accuracy_iterative", f"{_HERE}.calibration:accuracy_iterative", rank=90,
               label="Accuracy-guided iterative (calibration next-token acc.)", family="removal")
register_guide("beam", f"{_HERE}.calibration:beam", rank=120,
               label=f"Beam search (width {BEAM_WIDTH}, interchange seeds, calibration NLL)", family="removal")
register_guide("sleb_matched", f"{_HERE}.calibration:sleb_matched", rank=125,
               label="SLEB-iterative at the beam's evaluation count", family="removal", plotted=False)
# gradients (gradient.py) and layer merging (laco.py)
register_guide("taylor", f"{_HERE}.gradient:taylor", rank=100,
               label="First-order Taylor (|weight x gradient|, lowest first)", family="gradient")
register_guide("laco", f"{_HERE}.laco:laco", rank=110, label="LaCo merge (adjacent pairs averaged, by interchange KL)",
               family="merge")
register_guide("laco_paper", f"{_HERE}.laco:laco_paper", rank=112,
               label="LaCo merge in the paper's order (by replacement KL, max)", family="merge")
# random draws (draws.py)
register_guide("random", f"{_HERE}.draws:random_draws", rank=900, label="Random (one draw)", family="control",
               plotted=False)

__all__ = ["Guide", "Pruned", "Selection", "get_guide", "guide_names", "register_guide", "registered"]
