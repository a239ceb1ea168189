"""The registry of report figures: one entry per figure, registered by the family package that draws it.

An entry says everything the workflow, the report and the CLI need to know about a figure: its name, its plot
function, the tables it reads, its scope (one figure per checkpoint, per model, per seed family, or one in all), its
caption, its report section and its output files. ``workflow/rules/figures.smk`` makes one ``plot_*`` rule per
:attr:`Figure.rule` from these entries, ``workflow/rules/report.smk`` lists their files among the report's targets,
and ``swapkl figures`` offers one kind per entry.

An entry names its plot function itself, which every caller draws through :meth:`Figure.draw`, one way:
``plot(*tables, out_png=..., out_pdf=..., **wildcards, **options, **plot_params)``, the entry's inputs in their
order (a file, a list of files for an expanded input, or a DataFrame the caller holds), the scope's wildcards the
function names (``model``, ``revision``, ``family``), the entry's fixed ``options`` and the workflow's values of its
``plot_params``. The figures come in families, one subpackage of
:mod:`swapkl.figures` each (``swapkl.figures.pruning``, ``swapkl.figures.protocol``, ...): the family's ``__init__``
registers its entries, and its other modules draw them, so an entry sits beside the code that draws it.
:func:`figures` imports every subpackage, so no list of families has to be kept in step. An entry names its plot
function as ``"swapkl.figures.<family>.<module>:<function>"``, imported only when the figure is drawn: Snakemake
reads the registry to make its rules, and it must not import matplotlib, pandas or torch to do so (they are the
drawing modules' imports; a family's ``__init__`` imports only this module). Adding a figure: its entry and plot
function in a family (docs/extending.md), and a caption file in ``workflow/report/``.

A study kept in a folder of :mod:`swapkl.studies` may hold its figures itself: its declaration registers the entry,
its plot function is a module of the folder (``"swapkl.studies.<study>.<module>:<function>"``) and its caption a
file of the folder, named by its path (:meth:`Figure.caption_path`). Those entries are registered when
:mod:`swapkl.studies` is imported (a layer above this one, which therefore does not import it): whoever reads the
registry imports that package first, as the workflow, the command line and the API do. Within a report section the
families' figures come before the study folders' (each in the order of registration, the folders' in the order
:mod:`swapkl.studies` imports them), so the order does not depend on which was imported first.
"""

from __future__ import annotations

import importlib
import inspect
import os
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from swapkl.errors import SwapKLError
from swapkl.registry import Registry

#: the wildcards of each scope, in the order they appear in an output path
SCOPES = {"checkpoint": ("model", "revision"), "model": ("model",), "family": ("family",), "global": ()}
#: the report's sections, in reading order: key -> title. The answer page of each pruned model opens it (rule
#: summarise_answer, no figure of its own); what the run measured comes next, the scorecard of
#: published numbers after it, the tables last. ``section("key")`` in the workflow numbers them (only the sections
#: a run fills: :func:`numbered_sections`).
SECTIONS = {
    "answer": "The answer: which blocks can be removed, at what cost, how sure",
    "demo": "Demo training",
    "gap": "Protocol gap along training",
    "ratio": "I/R ratio by pair distance",
    "heatmaps": "Replacement and interchange heatmaps",
    "deletion": "Deletion KL and block influence",
    "sublayers": "Inside the block: attention and MLP sublayers",
    "weights": "Weight averaging and head-level swaps",
    "pruning": "Pruning cost",
    "agreement": "Agreement between pruning guides",
    "relevance": "Accuracy-based relevance",
    "seeds": "Protocol gap across training seeds",
    "covariates": "What explains the gap",
    "spans": "Middle-span experiments",
    "scale": "Scale and mechanisms",
    "recovery": "Recovery after pruning",
    "third_test": "The third test: equivalence after healing",
    "scorecard": "Reproduction scorecard: published numbers against swapkl",
    "tables": "Tables",
}
#: sections a run has whatever it draws: the tables, and the reproduction scorecard (made by every run; a section of
#: its own only where the run reproduces a published number, else among the tables: swapkl.config.targets)
ALWAYS_PRESENT = ("scorecard", "tables")


def numbered_sections(present) -> dict[str, str]:
    """The report category of each section in ``present`` (keys of :data:`SECTIONS`): ``"NN. title"``, numbered
    1, 2, ... in reading order over the present sections only, so a run that fills no weight-protocol figure has
    no gap in the numbers. The numbers have two digits when there are ten sections or more: the report's menu
    sorts its categories as text, which would put 10 before 2."""
    unknown = set(present) - set(SECTIONS)
    if unknown:
        raise SwapKLError(f"unknown report sections {sorted(unknown)}; known: {', '.join(SECTIONS)}")
    keys = [key for key in SECTIONS if key in present]
    width = len(str(len(keys)))
    return {key: f"{k:0{width}d}. {SECTIONS[key]}" for k, key in enumerate(keys, 1)}


#: where the figures go; formats written by every plot function
FIGURES_DIR = "results/figures"
FORMATS = ("png", "pdf")

#: the package whose subpackages are the figure families (each registers its figures when imported)
FIGURES_PACKAGE = "swapkl.figures"
#: the package whose study folders may register figures of their own (imported by the registry's readers)
STUDIES_PACKAGE = "swapkl.studies"

AGGREGATE = "results/swapkl.parquet"
PRUNING = "results/pruning.parquet"


@dataclass(frozen=True)
class Figure:
    """One report figure (a PNG for the report and a PDF for print).

    ``caption``: its caption file's name in ``workflow/report/`` (default ``<name>.rst``), or the file's absolute
    path for a figure a study folder holds. ``inputs``: input name -> file pattern; a pattern may use the scope's
    wildcards, and an input named in ``expand`` is a ``{model}`` pattern expanded over the models of the workflow's
    selection of that name.
    ``targets``: the workflow's selection of the instances the report gets (default: per scope, every checkpoint,
    model or family that is not a seed family member; one for a global figure). ``params``: names of values the
    rule passes to the caption and the plot function (workflow/rules/figures.smk defines each name).
    ``plot_params``: those of ``params`` the plot function reads (the CLI asks for them). ``options``: keyword
    arguments every call passes (``gap="fwd"`` for the one-direction twins). ``reads``: the inputs the plot function
    takes, in order (default: all of them; an input that is only the rule's dependency, as the demo's training runs,
    whose logs reach the function through a param, is left out).
    """

    name: str
    plot: str | Callable
    inputs: Mapping[str, str]
    scope: str
    section: str
    help: str
    caption: str = ""
    rule: str = ""
    folder: str = ""
    log: str = ""
    targets: str = ""
    subcategory: str | None = None
    labels: Mapping[str, str] = field(default_factory=dict)
    params: Mapping[str, str] = field(default_factory=dict)
    plot_params: tuple[str, ...] = ()
    expand: Mapping[str, str] = field(default_factory=dict)
    constrained: bool = False
    options: Mapping[str, object] = field(default_factory=dict)
    reads: tuple[str, ...] | None = None

    def __post_init__(self):
        defaults = {"caption": f"{self.name}.rst", "rule": f"plot_{self.name}", "folder": self.name,
                    "targets": self.scope}
        for key, value in defaults.items():
            if not getattr(self, key):
                object.__setattr__(self, key, value)
        if self.scope not in SCOPES:
            raise SwapKLError(f"figure {self.name}: scope {self.scope!r} is not one of {', '.join(SCOPES)}")
        if self.section not in SECTIONS:
            raise SwapKLError(f"figure {self.name}: section {self.section!r} is not one of {', '.join(SECTIONS)}")
        unknown = set(self.plot_params) - set(self.params)
        if unknown:
            raise SwapKLError(f"figure {self.name}: plot_params {sorted(unknown)} are not among its params")
        unknown = set(self.reads or ()) - set(self.inputs)
        if unknown:
            raise SwapKLError(f"figure {self.name}: reads {sorted(unknown)} are not among its inputs")
        if self.in_study_folder and not os.path.isabs(self.caption):
            raise SwapKLError(f"figure {self.name}: a study folder's figure names its caption file by its path "
                              f"(caption=str(STUDY.folder / {self.caption!r})), not {self.caption!r}")

    def caption_path(self, report_dir) -> str:
        """The caption file: ``caption`` itself where it is a path (a study folder's figure), else the file of that
        name in ``report_dir`` (the workflow's ``workflow/report``, as the caller reaches it)."""
        return self.caption if os.path.isabs(self.caption) else os.path.join(report_dir, self.caption)

    @property
    def in_study_folder(self) -> bool:
        """Whether a study folder of :mod:`swapkl.studies` draws it (its plot function is the folder's)."""
        return isinstance(self.plot, str) and self.plot.startswith(STUDIES_PACKAGE + ".")

    def function(self) -> Callable:
        """The plot function (imported from its module when the entry names it as ``"module:function"``)."""
        if callable(self.plot):
            return self.plot
        module, _, name = self.plot.partition(":")
        return getattr(importlib.import_module(module), name)

    def draw(self, inputs: Mapping[str, object], out_png, out_pdf, *, wildcards: Mapping[str, str],
             params: Mapping[str, object]) -> None:
        """Draw one instance: the plot function on the inputs it reads (``inputs``: name -> file, list of files or
        DataFrame), in the entry's order, with the scope's wildcards it names, the entry's options and the values
        of its ``plot_params`` (from ``params``)."""
        plot = self.function()
        takes = inspect.signature(plot).parameters
        scope = {w: wildcards[w] for w in self.wildcards}  # every wildcard of the scope is given (a rule's bug else)
        named = {w: value for w, value in scope.items() if w in takes}
        tables = [inputs[name] for name in (self.inputs if self.reads is None else self.reads)]
        plot(*tables, out_png=out_png, out_pdf=out_pdf, **named, **self.options,
             **{name: params[name] for name in self.plot_params})

    @property
    def wildcards(self) -> tuple[str, ...]:
        return SCOPES[self.scope]

    @property
    def kind(self) -> str:
        """The figure's name on the command line (``swapkl figures KIND``)."""
        return self.name.replace("_", "-")

    def stem(self) -> str:
        """The output path without its extension, with the scope's wildcards as ``{name}`` placeholders."""
        return "/".join([FIGURES_DIR, self.folder, *(f"{{{w}}}" for w in self.wildcards)])

    def outputs(self, **wildcards: str) -> list[str]:
        """The PNG and PDF of one instance (placeholders kept for the wildcards not given)."""
        keep = {w: f"{{{w}}}" for w in self.wildcards}
        return [f"{self.stem()}.{ext}".format(**{**keep, **wildcards}) for ext in FORMATS]

    def log_file(self) -> str:
        if self.log:
            return self.log
        folder = {"family": "seeds/{family}"}.get(self.scope, "/".join(f"{{{w}}}" for w in self.wildcards))
        return "/".join(p for p in ("logs", folder, f"{self.rule}.log") if p)

    def report_labels(self) -> dict[str, str]:
        return {**{w: f"{{{w}}}" for w in self.wildcards}, **self.labels}


_REGISTRY: Registry[Figure] = Registry("figure", order=lambda fig: (list(SECTIONS).index(fig.section),
                                                                    fig.in_study_folder), same_again=True)


def register(figure: Figure) -> Figure:
    """Add ``figure`` to the registry (a name may be registered once); returns it."""
    return _REGISTRY.add(figure.name, figure)


def discover() -> None:
    """Import every figure family (each subpackage of :mod:`swapkl.figures`), so that each registers its figures.
    The package's plain modules (style, palette, labels, ...) are helpers of the drawing code and are not imported."""
    package = importlib.import_module(FIGURES_PACKAGE)
    for module in pkgutil.iter_modules(package.__path__):
        if module.ispkg:
            importlib.import_module(f"{FIGURES_PACKAGE}.{module.name}")


def figures() -> dict[str, Figure]:
    """Every registered figure by name, in report order (by section, then in registration order); every figure
    family is imported first."""
    discover()
    return {fig.name: fig for fig in _REGISTRY.entries()}


def figure(name: str) -> Figure:
    discover()
    return _REGISTRY[name]


def jobs() -> dict[str, list[Figure]]:
    """The figures of each plot rule, by rule name (figures sharing a rule are drawn by one job)."""
    out: dict[str, list[Figure]] = {}
    for fig in figures().values():
        out.setdefault(fig.rule, []).append(fig)
    for rule, figs in out.items():
        if len({(f.scope, f.targets, f.log_file()) for f in figs}) > 1:
            raise SwapKLError(f"rule {rule}: its figures {[f.name for f in figs]} differ in scope, targets or log")
    return out


def job_inputs(figs: list[Figure]) -> dict[str, str]:
    """The inputs of a plot rule: those of its figures together (one file pattern per input name)."""
    out: dict[str, str] = {}
    for fig in figs:
        for name, pattern in fig.inputs.items():
            if out.setdefault(name, pattern) != pattern:
                raise SwapKLError(f"rule {fig.rule}: input {name!r} is {out[name]!r} and {pattern!r}")
    return out


def output_key(fig: Figure, ext: str) -> str:
    """The name of a figure's output in its rule (``<figure>_png``, ``<figure>_pdf``)."""
    return f"{fig.name}_{ext}"


def draw_job(rule: str, inputs: Mapping[str, object], outputs: Mapping[str, str], wildcards: Mapping[str, str],
             params: Mapping[str, object]) -> None:
    """Draw every figure of plot rule ``rule`` (the workflow's plot_figure.py script calls this)."""
    for fig in jobs()[rule]:
        fig.draw(inputs, outputs[output_key(fig, "png")], outputs[output_key(fig, "pdf")], wildcards=wildcards,
                 params=params)
