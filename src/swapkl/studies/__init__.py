"""Studies of the layer-order literature: spans, Jacobians, the RoPE counterfactual, scaling, slices, and the
sequential probe.

A study kept in its own folder here (a subpackage) declares itself in its ``__init__`` with
:func:`swapkl.study.register_study`: its stage, its rules, its config section's schema and its tables' captions
lie in the folder (see docs/extending.md). Importing this package imports every such folder, so a new study is
its folder, with no list to keep in step. A folder's ``__init__`` imports only light modules (its job
description and the declaration), since the workflow imports it where Snakemake runs.
"""

import importlib
import pkgutil

for _module in pkgutil.iter_modules(__path__):
    if _module.ispkg:
        importlib.import_module(f"{__name__}.{_module.name}")
