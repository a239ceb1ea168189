"""What a workflow script can import when it runs, read eagerly: every import statement of the script and,
transitively, of every swapkl module it reaches, at any depth (function-level imports included), so an
import that a rule only reaches lazily (``import lm_eval`` inside a function) still counts."""

from __future__ import annotations

import ast
import importlib.metadata as md
import re
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
SRC = REPO / "src"


def _imports(path: Path) -> set[str]:
    """Dotted names imported anywhere in ``path`` (``from a.b import c`` gives a.b and a.b.c); imports under
    ``if TYPE_CHECKING:`` are left out (they never run), and so are those of a package's module-level
    ``__getattr__`` (PEP 562: it runs only when code reads a name the package does not define, such as
    ``swapkl.probe``, the Python API; tests/test_api.py checks that no script or swapkl module reads one)."""
    tree = ast.parse(path.read_text())
    skip = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            skip |= {id(n) for child in node.body for n in ast.walk(child)}
    if path.name == "__init__.py":
        for node in tree.body:
            if isinstance(node, ast.FunctionDef) and node.name == "__getattr__":
                skip |= {id(n) for n in ast.walk(node)}
    names = set()
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names |= {f"{node.module}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str):
            names |= _named_modules(node.value)
    return names


def _named_modules(text: str) -> set[str]:
    """The swapkl modules a string names for importlib: ``"swapkl.a.b:function"`` (a lazily imported function) or
    ``"swapkl.a"`` (a package whose modules and subpackages are discovered with pkgutil: all of them, as the figure
    registry imports every figure family)."""
    m = re.fullmatch(r"(swapkl(?:\.\w+)+)(?::\w+)?", text)
    if not m:
        return set()
    package = SRC.joinpath(*m.group(1).split("."))
    if not (package / "__init__.py").is_file():
        return {m.group(1)}
    modules = [f.stem for f in package.glob("*.py") if f.stem != "__init__"]
    modules += [f.parent.name for f in package.glob("*/__init__.py")]
    return {m.group(1), *(f"{m.group(1)}.{name}" for name in modules)}


def _module_file(name: str) -> Path | None:
    base = SRC.joinpath(*name.split("."))
    for candidate in (base.with_suffix(".py"), base / "__init__.py"):
        if candidate.is_file():
            return candidate
    return None


def stage_runner_files() -> list[Path]:
    """The module of every registered stage's runner (``"module:function"``): what workflow/scripts/run_job.py
    imports when it runs a stage's job (the runners of the studies kept in folders are named in their
    declarations, which the package imports by name, so the import statements alone do not reach them)."""
    from swapkl.config.stages import STAGES

    runners = [stage.runner for stage in STAGES.values() if isinstance(stage.runner, str)]
    return [_module_file(runner.split(":")[0]) for runner in runners]


def third_party_imports(script: Path) -> set[str]:
    """Top-level names of every non-swapkl, non-stdlib module that ``script`` may import on any code path (for
    workflow/scripts/run_job.py, the stages' runners included)."""
    seen: set[Path] = set()
    todo = [script] + (stage_runner_files() if script.name == "run_job.py" else [])
    found: set[str] = set()
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        for name in _imports(path):
            top = name.split(".")[0]
            if top == "swapkl":
                parts = name.split(".")
                for k in range(1, len(parts) + 1):  # swapkl.a.b imports swapkl, swapkl.a, swapkl.a.b
                    f = _module_file(".".join(parts[:k]))
                    if f is not None:
                        todo.append(f)
            elif top not in sys.stdlib_module_names and top != "__future__":
                found.add(top)
    return found


def _requirement_names(dist: str) -> list[str]:
    try:
        reqs = md.requires(dist) or []
    except md.PackageNotFoundError:
        return []
    return [re.split(r"[ ;<>=!~\[(]", r, maxsplit=1)[0] for r in reqs if "extra ==" not in r]


def provided_imports(distributions: list[str]) -> set[str]:
    """Top-level import names that installing ``distributions`` (with their required dependencies, as installed
    here) provides."""
    by_dist: dict[str, set[str]] = {}
    for top, dists in md.packages_distributions().items():
        for d in dists:
            by_dist.setdefault(d.lower().replace("_", "-"), set()).add(top)
    closure, todo = set(), [d.lower().replace("_", "-") for d in distributions]
    while todo:
        d = todo.pop()
        if d in closure:
            continue
        closure.add(d)
        todo += [r.lower().replace("_", "-") for r in _requirement_names(d)]
    return set().union(*(by_dist.get(d, set()) for d in closure))
