"""Collect English documentation text that ships with the running Python interpreter.

Sources, visited in a fixed order (``sorted(sys.stdlib_module_names)`` minus an exclusion list):

* pure-Python standard-library modules and packages: their source files are *parsed* with :mod:`ast`,
  never executed, and the docstrings of the module, its top-level functions and classes, and the methods
  of those classes are taken; so no stdlib code runs and no side effect can happen;
* compiled (built-in or extension) modules, which have no source: they are imported and the ``__doc__``
  of the module, its public functions and classes and those classes' own methods are taken;
* the Python language-reference topics shipped in ``pydoc_data/topics.py`` (parsed, not imported).

The text depends only on the Python version (plus which optional compiled modules the build has; the
visited and unavailable modules are reported so two machines can be compared).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import sys
import sysconfig
import warnings
from dataclasses import dataclass, field
from pathlib import Path

# Top-level modules never visited: joke/side-effect modules, GUI toolkits, the test suite, tools with
# their own test trees, and packages that Linux distributions split out of the base interpreter
# (so visiting them would make the corpus depend on which distro packages are installed).
EXCLUDED_MODULES = frozenset({
    "__hello__", "__phello__", "__main__", "antigravity", "this",
    "idlelib", "tkinter", "_tkinter", "turtle", "turtledemo",
    "test", "lib2to3", "distutils", "ensurepip", "venv",
    "readline", "rlcompleter",
    "encodings",  # ~120 generated codec tables with boilerplate docstrings
    "pydoc_data",  # handled separately as the language-reference topics
})
# Path components that mark test code inside packages.
_TEST_PARTS = frozenset({"test", "tests", "idle_test"})


@dataclass
class StdlibDocs:
    """Raw documentation strings in visiting order, plus provenance."""

    texts: list[str] = field(default_factory=list)
    parsed_files: list[str] = field(default_factory=list)  # relative to the stdlib directory
    imported_modules: list[str] = field(default_factory=list)
    unavailable_modules: list[str] = field(default_factory=list)
    topics: int = 0


def _stdlib_dir() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def _is_test_path(rel: Path) -> bool:
    return any(p in _TEST_PARTS or p.startswith("test_") for p in rel.with_suffix("").parts)


def _source_files(stdlib: Path, name: str) -> list[Path] | None:
    """The ``.py`` files of a pure-Python module or package, sorted; None if it has no source."""
    single = stdlib / f"{name}.py"
    if single.is_file():
        return [single]
    package = stdlib / name
    if (package / "__init__.py").is_file():
        files = [p for p in package.rglob("*.py") if not _is_test_path(p.relative_to(stdlib))]
        return sorted(files, key=lambda p: p.relative_to(stdlib).as_posix())
    return None


def _ast_docstrings(source: str) -> list[str]:
    """Docstrings of a module, its top-level defs/classes and the classes' methods, in source order."""
    tree = ast.parse(source)
    out = []
    doc = ast.get_docstring(tree, clean=True)
    if doc:
        out.append(doc)
    defs = (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)
    for node in tree.body:
        if not isinstance(node, defs):
            continue
        doc = ast.get_docstring(node, clean=True)
        if doc:
            out.append(doc)
        if isinstance(node, ast.ClassDef):
            for sub in node.body:
                if isinstance(sub, defs):
                    doc = ast.get_docstring(sub, clean=True)
                    if doc:
                        out.append(doc)
    return out


def _runtime_docstrings(module) -> list[str]:
    """``__doc__`` of a compiled module, its public callables/classes and the classes' own methods."""
    out = []

    def add(obj) -> None:
        doc = getattr(obj, "__doc__", None)
        if isinstance(doc, str) and doc.strip():
            out.append(inspect.cleandoc(doc))

    add(module)
    for name in sorted(vars(module)):
        if name.startswith("_"):
            continue
        obj = vars(module)[name]
        if inspect.isclass(obj):
            add(obj)
            for attr in sorted(vars(obj)):
                if attr.startswith("_"):
                    continue
                member = vars(obj)[attr]
                if callable(member) or inspect.isdatadescriptor(member):
                    add(member)
        elif callable(obj):
            add(obj)
    return out


def _topic_texts(stdlib: Path) -> list[str]:
    """The language-reference topics of ``pydoc_data/topics.py`` (a dict literal), sorted by key."""
    path = stdlib / "pydoc_data" / "topics.py"
    if not path.is_file():
        return []
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict):
            pairs = []
            for k, v in zip(node.value.keys, node.value.values):
                if isinstance(k, ast.Constant) and isinstance(v, ast.Constant) and isinstance(v.value, str):
                    pairs.append((str(k.value), v.value))
            return [text for _, text in sorted(pairs)]
    return []


def collect_stdlib_docs() -> StdlibDocs:
    """Visit the standard library in a fixed order and return its documentation strings."""
    stdlib = _stdlib_dir()
    docs = StdlibDocs()
    for name in sorted(sys.stdlib_module_names):
        if name in EXCLUDED_MODULES:
            continue
        files = _source_files(stdlib, name)
        if files is not None:
            for path in files:
                try:
                    source = path.read_text(encoding="utf-8")
                    texts = _ast_docstrings(source)
                except (OSError, UnicodeDecodeError, SyntaxError, ValueError):
                    continue
                docs.parsed_files.append(path.relative_to(stdlib).as_posix())
                docs.texts.extend(texts)
            continue
        # No source file: a compiled module (or one for another platform, which fails to import).
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                module = sys.modules.get(name) or importlib.import_module(name)
        except Exception:  # noqa: BLE001 - any failure just means "not available on this build"
            docs.unavailable_modules.append(name)
            continue
        if getattr(module, "__file__", None) and str(module.__file__).endswith(".py"):
            continue  # a pure-Python module outside the stdlib dir would not be reproducible
        docs.imported_modules.append(name)
        docs.texts.extend(_runtime_docstrings(module))
    topics = _topic_texts(stdlib)
    docs.topics = len(topics)
    docs.texts.extend(topics)
    return docs
