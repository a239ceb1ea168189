"""Layout checks of rendered matplotlib figures: texts that overlap, texts outside the canvas, legends that
cover data. Every check works on what the Agg renderer actually drew (text extents from the renderer)."""

from __future__ import annotations

import contextlib
import importlib
import pkgutil
from pathlib import Path

import numpy as np
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.collections import Collection
from matplotlib.figure import Figure
from matplotlib.text import Text

import swapkl.figures
import swapkl.studies
from swapkl.figures.style import figure_style

SLACK = 1.0  # pixels two boxes may share (antialiased edges)


@contextlib.contextmanager
def captured_figures(monkeypatch):
    """Every Figure passed to ``save_figure`` by any module of :mod:`swapkl.figures` or its families, or by a study
    folder's figures (``swapkl.studies.<study>.figures``; still saved)."""
    figs: list[Figure] = []
    names = [info.name for info in pkgutil.walk_packages(swapkl.figures.__path__, "swapkl.figures.")]
    names += [f"swapkl.studies.{folder.name}.figures" for folder in sorted(Path(swapkl.studies.__path__[0]).iterdir())
              if (folder / "figures.py").is_file()]
    for name in names:
        mod = importlib.import_module(name)
        original = getattr(mod, "save_figure", None)
        if original is None:
            continue

        def wrapped(fig, png, pdf, _orig=original):
            figs.append(fig)
            return _orig(fig, png, pdf)

        monkeypatch.setattr(mod, "save_figure", wrapped)
    yield figs


def drawn_texts(fig: Figure) -> list[tuple[Text, object]]:
    """(text, window extent) of every non-empty text the renderer draws, in drawing order."""
    seen: list[tuple[Text, object]] = []
    original = Text.draw

    def draw(self, renderer):
        original(self, renderer)
        if self.get_visible() and self.get_text().strip():
            seen.append((self, self.get_window_extent(renderer)))

    Text.draw = draw
    try:
        with figure_style():
            FigureCanvasAgg(fig).draw()
    finally:
        Text.draw = original
    return seen


def _overlap(a, b) -> bool:
    return (min(a.x1, b.x1) - max(a.x0, b.x0) > SLACK) and (min(a.y1, b.y1) - max(a.y0, b.y0) > SLACK)


def layout_problems(fig: Figure) -> list[str]:
    """Pairs of drawn texts whose boxes overlap, texts that reach outside the canvas, and texts that reach into a
    legend they are not part of (a title running into the line samples of a legend beside it)."""
    texts = drawn_texts(fig)
    canvas = fig.bbox
    problems = []
    renderer = fig.canvas.get_renderer()
    legends = [*fig.legends, *(ax.get_legend() for ax in fig.get_axes() if ax.get_legend() is not None)]
    for leg in legends:
        box, own = leg.get_window_extent(renderer), {id(x) for x in (*leg.get_texts(), leg.get_title())}
        problems += [f"into a legend: {t.get_text()!r}" for t, b in texts if id(t) not in own and _overlap(b, box)]
    for t, box in texts:
        if box.x0 < canvas.x0 - SLACK or box.x1 > canvas.x1 + SLACK or box.y0 < canvas.y0 - SLACK \
                or box.y1 > canvas.y1 + SLACK:
            problems.append(f"outside the canvas: {t.get_text()!r}")
    for k, (t, a) in enumerate(texts):
        for u, b in texts[k + 1:]:
            if _overlap(a, b):
                problems.append(f"overlap: {t.get_text()!r} / {u.get_text()!r}")
    return problems


def legends_cover_data(fig: Figure) -> list[str]:
    """Legends inside an axes that cover a plotted point of that axes (lines and scatter points)."""
    with figure_style():
        renderer = FigureCanvasAgg(fig).get_renderer()
        FigureCanvasAgg(fig).draw()
    problems = []
    for ax in fig.get_axes():
        leg = ax.get_legend()
        if leg is None:
            continue
        box = leg.get_window_extent(renderer)
        pts = [np.column_stack(line.get_data()) for line in ax.get_lines() if line.get_visible()]
        pts += [c.get_offsets() for c in ax.collections if isinstance(c, Collection) and len(c.get_offsets())]
        pts = [np.asarray(p, dtype=float) for p in pts if len(p)]
        if not pts:
            continue
        xy = ax.transData.transform(np.vstack(pts))
        xy = xy[np.isfinite(xy).all(axis=1)]
        inside = (xy[:, 0] > box.x0) & (xy[:, 0] < box.x1) & (xy[:, 1] > box.y0) & (xy[:, 1] < box.y1)
        if inside.any():
            problems.append(f"legend of {ax.get_title()!r} covers {int(inside.sum())} data point(s)")
    return problems
