"""The pruning guides' names, read where the config is validated: without importing the guides.

The guide registry (:mod:`swapkl.pruning.guides.guide_registry`) is the one place a guide is named: each module
of the guides package calls ``register_guide("name", ...)``. Importing that package pulls in numpy, which
the config package may not import (it runs where Snakemake runs). So this module reads
the same calls from the package's source with :mod:`ast` (nothing is executed): every ``register_guide`` call
whose first argument is a string literal. A call applied to ``None`` (``register_guide("base", ...)(None)``)
registers a row derived from the others, which chooses no blocks of its own. ``tests/test_config_names.py`` checks
that the names read here are exactly the registry's.
"""

from __future__ import annotations

import ast
from functools import lru_cache
from pathlib import Path

#: the guides package's folder, beside this package's
GUIDES_DIR = Path(__file__).resolve().parents[1] / "pruning" / "guides"


def _registrations(tree: ast.AST) -> list[tuple[str, bool]]:
    """(name, chooses blocks) of every ``register_guide("name", ...)`` in one module."""
    derived = {id(node.func) for node in ast.walk(tree) if isinstance(node, ast.Call) and len(node.args) == 1
               and isinstance(node.args[0], ast.Constant) and node.args[0].value is None}
    out = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "register_guide"
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            out.append((node.args[0].value, id(node) not in derived))
    return out


@lru_cache(maxsize=None)
def guide_registrations(folder: str = str(GUIDES_DIR)) -> tuple[tuple[str, bool], ...]:
    """(name, chooses blocks) of every guide registered in the modules of ``folder``, sorted by name."""
    found = []
    for path in sorted(Path(folder).glob("*.py")):
        found += _registrations(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
    return tuple(sorted(found))


def selecting_guides() -> list[str]:
    """The guides that choose blocks (and so have pruned models to export or score), sorted."""
    return [name for name, chooses in guide_registrations() if chooses]
