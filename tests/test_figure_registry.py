"""The figure registry (swapkl.figures.figure_registry): every plot function is registered by the family that holds it,
every entry is complete, the registered plot functions draw the data of their tables, and a new figure family
(tests/toy_figure: its entry, its plot function and its caption) dropped into a copy of the package reaches the
command line, the workflow's dry-run DAG and the report's targets."""

from __future__ import annotations

import ast
import csv
import importlib.util
import inspect
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure as MplFigure

from probe_fixtures import probe_files, random_values, write_checkpoint
from repo_copy import repo_copy
import swapkl.studies  # noqa: F401  (the study folders register the figures they hold)
from swapkl.errors import SwapKLError
from swapkl.figures import figure_registry as registry
from swapkl.probes.aggregate import aggregate
from swapkl.probes.aggregate import AggregateJob
from swapkl.figures.figure_registry import SECTIONS, Figure, figures, jobs, register
from swapkl.figures.protocol.ratio import plot_ratio_by_distance
from swapkl.figures.protocol.trajectory import plot_gap_trajectory
from swapkl.study import STUDIES

REPO = Path(__file__).resolve().parents[1]
FIGURES_PACKAGE = REPO / "src" / "swapkl" / "figures"


def drawn(monkeypatch) -> list[MplFigure]:
    """The matplotlib figures saved from now on (read back before they are written)."""
    seen: list[MplFigure] = []
    save = MplFigure.savefig

    def record(self, *args, **kwargs):
        if not seen or seen[-1] is not self:
            seen.append(self)
        return save(self, *args, **kwargs)

    monkeypatch.setattr(MplFigure, "savefig", record)
    return seen


def test_every_entry_names_a_plot_function_that_takes_the_one_call():
    """Every entry names a plot function defined in its module, which takes the one call of Figure.draw: the inputs
    it reads in order, the PNG and PDF, the scope's wildcards it names, the entry's options and plot params; and no
    figure module keeps a function of another signature for the registry (``draw_*``)."""
    for fig in figures().values():
        module, _, name = fig.plot.partition(":")
        plot = fig.function()
        assert plot.__module__ == module and plot.__name__ == name, fig.name
        takes = inspect.signature(plot).parameters
        named = {w: "x" for w in fig.wildcards if w in takes}
        tables = list(fig.inputs if fig.reads is None else fig.reads)
        inspect.signature(plot).bind(*tables, out_png="p", out_pdf="q", **named, **fig.options,
                                     **dict.fromkeys(fig.plot_params))
    for path in set(FIGURES_PACKAGE.rglob("*.py")) - {FIGURES_PACKAGE / "figure_registry.py"}:
        tree = ast.parse(path.read_text())
        assert not [n.name for n in tree.body if isinstance(n, ast.FunctionDef) and n.name.startswith("draw_")], path


# In a fresh interpreter, wraps the registry's `register` before any family or study folder is imported, then
# imports them all; prints {figure: [the module that registered it, its plot]}.
WHO_REGISTERS = """
import json, sys
from swapkl.figures import figure_registry
found = {}
register = figure_registry.register
def recording(figure):
    found[figure.name] = [sys._getframe(1).f_globals["__name__"], figure.plot]
    return register(figure)
figure_registry.register = recording
import swapkl.studies
figure_registry.figures()
print(json.dumps(found))
"""


# Prints the registry's order after the study folders and the figure families are imported in the order given.
ORDER = """
import json, sys
from swapkl.figures.figure_registry import figures
if sys.argv[1] == "studies first":
    import swapkl.studies
    print(json.dumps(list(figures())))
else:
    figures()
    import swapkl.studies
    print(json.dumps(list(figures())))
"""


def test_a_study_folders_figure_names_its_caption_by_its_path():
    """A figure drawn by a study folder whose caption is a bare name (which would be looked for in
    workflow/report/) is refused when it is declared, naming the figure."""
    with pytest.raises(SwapKLError, match="figure toy_score: a study folder's figure names its caption file by its "
                                          "path"):
        Figure("toy_score", "swapkl.studies.toy_study.figures:plot_toy_score", {"scores": "s.parquet"},
               "checkpoint", "scale", "a toy")
    folder = Figure("toy_score", "swapkl.studies.toy_study.figures:plot_toy_score", {"scores": "s.parquet"},
                    "checkpoint", "scale", "a toy", caption="/somewhere/toy_score.rst")
    assert folder.in_study_folder and folder.caption_path("workflow/report") == "/somewhere/toy_score.rst"
    family = Figure("toy_bars", "swapkl.figures.toy.bars:plot", {"a": "a.parquet"}, "checkpoint", "scale", "a toy")
    assert not family.in_study_folder and family.caption_path("workflow/report") == "workflow/report/toy_bars.rst"

def test_the_registry_order_does_not_depend_on_what_was_imported_first():
    """Within a report section the families' figures come before the study folders' (each in its own order), so
    importing swapkl.studies before or after the families gives the same list, section by section."""
    orders = [json.loads(subprocess.run([sys.executable, "-c", ORDER, first], env={**os.environ,
                                                                                    "PYTHONPATH": str(REPO / "src")},
                                        capture_output=True, text=True, check=True).stdout)
              for first in ("studies first", "families first")]
    assert orders[0] == orders[1] == list(figures())
    sections = [figures()[name].section for name in orders[0]]
    assert sections == sorted(sections, key=list(SECTIONS).index)
    for section in set(sections):
        in_folders = [figures()[n].in_study_folder for n in orders[0] if figures()[n].section == section]
        assert in_folders == sorted(in_folders), section  # False (a family's) before True (a folder's)

def test_each_figure_is_registered_by_the_family_that_draws_it():
    """An entry sits beside its plot function: the family package whose import registers a figure holds the module
    of its plot function, and the plain helper modules register nothing."""
    proc = subprocess.run([sys.executable, "-c", WHO_REGISTERS], env={**os.environ, "PYTHONPATH": str(REPO / "src")},
                          capture_output=True, text=True, check=True)
    found = json.loads(proc.stdout)
    assert set(found) == set(figures())
    families = {p.parent.name for p in FIGURES_PACKAGE.glob("*/__init__.py")}
    folders = {study.folder.name for study in STUDIES.entries()}
    for name, (module, plot) in found.items():
        # registered by a family or a study folder (its package), not by a helper module, beside the module that
        # draws it
        package, _, family = module.rpartition(".")
        assert (package, family) in {("swapkl.figures", f) for f in families} | {("swapkl.studies", f) for f in folders}
        assert plot.startswith(f"{module}."), (name, module, plot)
    assert {"recovery", "downstream", "sequential_decisions"} <= {n for n, (m, _) in found.items()
                                                                   if m.startswith("swapkl.studies.")}


def test_every_entry_is_complete():
    for fig in figures().values():
        assert callable(fig.function()), fig.name
        assert Path(fig.caption_path(REPO / "workflow" / "report")).is_file(), fig.name
        # a study folder's figure: its caption lies in the folder
        assert not fig.in_study_folder or Path(fig.caption).parent == Path(fig.function().__code__.co_filename).parent
        assert fig.section in SECTIONS and fig.help, fig.name
        for name, pattern in fig.inputs.items():  # an expanded input's {model} is filled in by the expansion
            assert set(re.findall(r"{(\w+)}", pattern)) <= ({"model"} if name in fig.expand else set(fig.wildcards))
    # one output folder per figure, one rule name per job, and every figure family is discovered
    assert len({f.folder for f in figures().values()}) == len(figures())
    families = {p.parent.name for p in FIGURES_PACKAGE.glob("*/__init__.py")}
    assert {f"swapkl.figures.{family}" for family in families} <= set(sys.modules)


def test_a_rule_draws_figures_of_one_scope():
    for rule, figs in jobs().items():
        assert rule.startswith("plot_") and len({f.scope for f in figs}) == 1, rule


def test_registry_entries_are_checked():
    with pytest.raises(Exception, match="scope"):
        Figure("bad", "m:f", {}, "weekly", "gap", "help")
    with pytest.raises(Exception, match="section"):
        Figure("bad", "m:f", {}, "global", "nowhere", "help")
    existing = next(iter(figures().values()))
    with pytest.raises(Exception, match="registered twice"):
        register(Figure(existing.name, "m:f", {}, "global", "gap", "another"))


def test_the_training_curves_figure_draws_the_logged_losses(tmp_path, monkeypatch):
    logs = {}
    for name, scale in (("demo-a", 1.0), ("demo-b", 0.5)):
        rows = ["step,heldout_loss,train_loss"]
        rows += [f"{s},{'' if s % 20 else 3 + scale / (s + 1)},{2.5 + scale / (s + 1)}" for s in range(0, 101, 10)]
        (tmp_path / f"{name}.csv").write_text("\n".join(rows) + "\n")
        logs[name] = str(tmp_path / f"{name}.csv")
    seen = drawn(monkeypatch)
    fig = registry.figure("training_curves")
    fig.draw({}, tmp_path / "t.png", tmp_path / "t.pdf", wildcards={}, params={"training_logs": logs})
    lines = {line.get_label(): line for line in seen[0].axes[0].get_lines()}
    for name, path in logs.items():
        with open(path) as fh:
            table = list(csv.DictReader(fh))
        heldout = [(float(r["step"]), float(r["heldout_loss"])) for r in table if r["heldout_loss"]]
        train = [(float(r["step"]), float(r["train_loss"])) for r in table]
        for label, expected in ((f"{name}: held-out loss", heldout), (f"{name}: training loss", train)):
            line = lines[label]
            assert np.allclose(line.get_xdata(), [s for s, _ in expected]), label
            assert np.allclose(line.get_ydata(), [v for _, v in expected]), label


def test_the_ratio_by_distance_figure_draws_the_median_ratio_per_distance(agg_path, tmp_path, monkeypatch):
    seen = drawn(monkeypatch)
    registry.figure("ratio_by_distance").draw({"aggregate": str(agg_path)}, tmp_path / "r.png", tmp_path / "r.pdf",
                                              wildcards={"model": "toy"}, params={})
    table = pd.read_parquet(agg_path)
    pairs = table[(table["kind"] == "pair") & (table["model"] == "toy") & table["duplicate_of"].isna()]
    lines = {line.get_label(): line for line in seen[0].axes[0].get_lines() if line.get_label().startswith("step")}
    assert set(lines) == set(pairs["revision"])
    for revision, line in lines.items():
        p = pairs[(pairs["revision"] == revision) & np.isfinite(pairs["ratio_ir"].astype(float))]
        medians = {d: float(np.median(g["ratio_ir"].astype(float))) for d, g in p.groupby("distance")}
        assert np.allclose(line.get_ydata(), [medians[d] for d in sorted(medians)]), revision
        shift = line.get_xdata()[0] - min(medians)
        assert np.allclose(np.asarray(line.get_xdata()) - shift, sorted(medians)), revision


@pytest.fixture(scope="module")
def agg_path(tmp_path_factory):
    d, layers = tmp_path_factory.mktemp("agg"), 5
    files, reprs = [], []
    pairs = [(i, j) for i in range(layers) for j in range(i + 1, layers) if j - i <= 2]
    for k, revision in enumerate(["step0", "step100", "step200"]):
        repl, inter, dele = random_values(layers, seed=k, pairs=pairs)
        p = write_checkpoint(d / "in", model="toy", revision=revision, n_layers=layers, repl=repl, inter=inter,
                             deletion=dele, bi=[0.1] * layers, seed=k)
        files += probe_files(p)
        reprs.append(p["repr"])
    aggregate(AggregateJob(probe_files=files, repr_files=reprs, out=d / "swapkl.parquet",
                           pair_sets={"toy": ["adjacent", "within:2"]}, n_boot=20))
    return d / "swapkl.parquet"


TOY = Path(__file__).with_name("toy_figure")  # a figure family: its entry, its plot function, its caption


def _tree_with_toy(tmp_path: Path) -> Path:
    """A copy of the workflow and the package with tests/toy_figure dropped in as a figure family (and its caption
    in the report's folder): the three files a new figure is."""
    tree = repo_copy(tmp_path, "profiles", "config")  # the demo profile and its config
    shutil.copytree(TOY, tree / "src" / "swapkl" / "figures" / "toy_figure", ignore=shutil.ignore_patterns("*.rst"))
    shutil.copy(TOY / "toy_figure.rst", tree / "workflow" / "report" / "toy_figure.rst")
    return tree


def _toy_draw():
    """The toy's plot function, loaded from its file alone (importing the toy package would register the toy here)."""
    spec = importlib.util.spec_from_file_location("toy_figure_bars", TOY / "bars.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.plot_toy


def test_the_toy_figure_draws_its_table(agg_path, tmp_path, monkeypatch):
    seen = drawn(monkeypatch)
    _toy_draw()(str(agg_path), out_png=tmp_path / "t.png", out_pdf=tmp_path / "t.pdf", model="toy",
                revision="step100")
    table = pd.read_parquet(agg_path)
    counts = table[(table["revision"] == "step100")].groupby("kind")["ratio_ir"].count()
    assert [b.get_height() for b in seen[0].axes[0].patches] == list(counts.to_numpy())


def test_a_toy_figure_family_reaches_the_command_line_the_dry_run_and_the_report_targets(agg_path, tmp_path):
    """Dropped into the package as the only change, the toy family gets a `swapkl figures` kind that draws what its
    plot function draws, a plot rule with one job per checkpoint that has heatmaps (same scope and selection), and
    its files among the final outputs."""
    tree = _tree_with_toy(tmp_path)
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    cli = [sys.executable, "-m", "swapkl", "figures"]
    kinds = subprocess.run([*cli, "--help"], env=env, cwd=tree, capture_output=True, text=True, check=True).stdout
    assert "toy-figure" in kinds and "toy-figure" not in subprocess.run(
        [*cli, "--help"], capture_output=True, text=True, check=True).stdout
    png, pdf = tmp_path / "cli.png", tmp_path / "cli.pdf"
    subprocess.run([*cli, "toy-figure", "--aggregate", str(agg_path), "--model", "toy", "--revision", "step100",
                    "--out-png", str(png), "--out-pdf", str(pdf)], env=env, cwd=tree, check=True)
    _toy_draw()(str(agg_path), out_png=tmp_path / "direct.png", out_pdf=tmp_path / "direct.pdf", model="toy",
                revision="step100")
    assert png.read_bytes() == (tmp_path / "direct.png").read_bytes()
    assert pdf.read_bytes() == (tmp_path / "direct.pdf").read_bytes()

    proc = subprocess.run([sys.executable, "-m", "snakemake", "--nolock", "--dry-run", "--cores", "1",
                           "--workflow-profile", "profiles/demo", "--forceall"], cwd=tree, env=env,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    out = proc.stdout + proc.stderr
    toy_jobs = re.findall(r"^rule plot_toy_figure:\n(?:    .*\n)*?    output: (.*)\n", out, re.M)
    heatmaps = re.findall(r"^rule plot_heatmaps:\n(?:    .*\n)*?    output: (.*)\n", out, re.M)
    assert toy_jobs and len(toy_jobs) == len(heatmaps)
    expected = {p.replace("/heatmaps/", "/toy_figure/") for line in heatmaps for p in line.split(", ")}
    assert {p for line in toy_jobs for p in line.split(", ")} == expected
    final = re.search(r"^(?:local)?rule all:\n    input: (.*)\n", out, re.M).group(1).split(", ")
    assert expected <= set(final)


def test_importing_the_registry_imports_no_plotting_library():
    code = ("import sys; from swapkl.figures.figure_registry import figures; figures(); "
            "print(sorted(m for m in ('matplotlib', 'pandas', 'torch') if m in sys.modules))")
    proc = subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONPATH": str(REPO / "src")},
                          capture_output=True, text=True, check=True)
    assert proc.stdout.strip() == "[]"
    assert importlib.import_module("swapkl.figures.figure_registry").FORMATS == ("png", "pdf")


@pytest.mark.parametrize("name, plot, gap", [("gap_trajectory", plot_gap_trajectory, "max"),
                                             ("gap_trajectory_fwd", plot_gap_trajectory, "fwd"),
                                             ("ratio_by_distance", plot_ratio_by_distance, "max"),
                                             ("ratio_by_distance_fwd", plot_ratio_by_distance, "fwd")])
def test_a_registered_gap_figure_is_its_plot_function_with_its_gap(name, plot, gap, agg_path, tmp_path):
    """The entry draws the bytes of the plot function called directly with the gap its name says, not the other's."""
    registry.figure(name).draw({"aggregate": str(agg_path)}, tmp_path / "r.png", tmp_path / "r.pdf",
                               wildcards={"model": "toy"}, params={"setup": "unused"})
    plot(str(agg_path), tmp_path / "p.png", tmp_path / "p.pdf", model="toy", gap=gap)
    plot(str(agg_path), tmp_path / "o.png", tmp_path / "o.pdf", model="toy", gap={"max": "fwd", "fwd": "max"}[gap])
    assert (tmp_path / "r.png").read_bytes() == (tmp_path / "p.png").read_bytes()
    assert (tmp_path / "r.pdf").read_bytes() == (tmp_path / "p.pdf").read_bytes()
    assert (tmp_path / "r.png").read_bytes() != (tmp_path / "o.png").read_bytes()


def test_docs_list_every_plot_rule_with_its_figures_and_functions():
    """docs/extending.md's table of plot rules (made in a loop, so no `rule plot_x` line to grep) names every rule
    of the registry with its figures and their plot functions (whose path names the family that declares each)."""
    doc = (REPO / "docs" / "extending.md").read_text()
    rows = {m.group(1): m.group(0) for m in re.finditer(r"^\| `(plot_[a-z_]+)` \|.*$", doc, re.M)}
    assert set(rows) == set(jobs()), sorted(set(rows) ^ set(jobs()))
    for rule, figs in jobs().items():
        for fig in figs:
            assert f"`{fig.name}`" in rows[rule], (rule, fig.name)
            assert f"`{fig.plot.removeprefix('swapkl.figures.')}`" in rows[rule], (rule, fig.plot)


def test_a_missing_wildcard_is_an_error_even_where_the_function_does_not_name_it(tmp_path):
    """Figure.draw passes a plot function the wildcards it names, but every wildcard of the scope must be given: a
    rule that forgets one is a bug, not a figure of some other checkpoint."""
    fig = registry.figure("test_agreement")  # its plot function names no wildcard
    assert not {"model", "revision"} & set(inspect.signature(fig.function()).parameters)
    with pytest.raises(KeyError, match="revision"):
        fig.draw({"agreement": str(tmp_path / "none.parquet")}, tmp_path / "a.png", tmp_path / "a.pdf",
                 wildcards={"model": "m"}, params={})
