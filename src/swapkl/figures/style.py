"""Shared look of swapkl figures and their deterministic, atomic saving.

Figures are built on :class:`matplotlib.figure.Figure` directly (no pyplot, so no global
figure manager and no GUI backend: PNGs are rendered by Agg). :func:`save_figure` writes the
PNG and PDF without timestamps or version strings, so rerunning a figure gives byte-identical
files, and writes both through temporary files so a failure leaves neither half-written.
"""

from __future__ import annotations

import contextlib
import logging
import textwrap
from pathlib import Path

import matplotlib
import matplotlib.font_manager
import numpy as np
from matplotlib.figure import Figure

from swapkl.tables.atomic import replaced_on_success
from swapkl.errors import SwapKLError
from swapkl.tables.file_checks import replaceable, require_distinct
from swapkl.figures.palette import BLUE, VERMILLION

REPLACEMENT_COLOUR = VERMILLION
INTERCHANGE_COLOUR = BLUE
SEQUENTIAL_CMAP = "viridis"

PNG_DPI = 150

RC = {
    "font.family": "DejaVu Sans",
    "font.size": 9,
    "axes.titlesize": 10,
    "axes.labelsize": 9,
    "legend.fontsize": 8,
    "xtick.labelsize": 8,
    "ytick.labelsize": 8,
    "axes.grid": True,
    "grid.alpha": 0.3,
    "grid.linewidth": 0.6,
    "axes.spines.top": False,
    "axes.spines.right": False,
    "lines.linewidth": 1.6,
    "lines.markersize": 4,
    "pdf.fonttype": 42,
    "svg.hashsalt": "swapkl",
    "savefig.dpi": PNG_DPI,
}


@contextlib.contextmanager
def _quiet_font_subsetting():
    """fontTools logs every PDF font subsetting step at INFO; keep it out of rule logs."""
    logger = logging.getLogger("fontTools")
    level = logger.level
    logger.setLevel(max(level, logging.WARNING))
    try:
        yield
    finally:
        logger.setLevel(level)


@contextlib.contextmanager
def figure_style():
    """Context in which figures are built (swapkl's rcParams on top of matplotlib's defaults)."""
    with matplotlib.rc_context(RC):
        yield


def new_figure(width: float, height: float) -> Figure:
    """A figure of ``width`` x ``height`` inches with constrained layout."""
    return Figure(figsize=(width, height), layout="constrained")


def add_note(fig: Figure, text: str, *, width: float = 0.9) -> None:
    """A small grey note under the axes (data and settings), wrapped at ``width`` of the figure's width, so that
    no line runs from edge to edge (matplotlib's own wrapping did, and the PNG cut it at both edges)."""
    fig.get_layout_engine().set(h_pad=0.06)
    per_line = max(20, int(width * fig.get_figwidth() * 72 / (0.56 * 7)))  # DejaVu Sans: ~0.56 em a character
    fig.supxlabel("\n".join(textwrap.wrap(text, per_line)), fontsize=7, color="#444444", ha="center")


def fit_title(fig: Figure, text: str) -> None:
    """``text`` as the figure's title, wrapped at word boundaries to the figure's width (a long title on a narrow
    figure is otherwise clipped at both edges); a line break in ``text`` is kept."""
    size = matplotlib.rcParams["figure.titlesize"]
    points = matplotlib.font_manager.FontProperties(size=size).get_size_in_points()
    per_line = max(20, int(fig.get_figwidth() * 72 / (0.56 * points)) - 2)  # DejaVu Sans: ~0.56 em a character
    fig.suptitle("\n".join(part for line in text.split("\n") for part in textwrap.wrap(line, per_line) or [""]))


def far_cut(values, factor: float) -> float | None:
    """The largest of ``values`` that is not far out, when some are: the values are taken from the top while each
    exceeds ``factor`` times the next (never more than half of them); None when the largest is not far out. A
    panel then ends near the cut and draws the far values at its edge, each with its value written."""
    v = np.asarray(values, dtype=np.float64)
    v = np.sort(v[np.isfinite(v)])[::-1]
    k = 0
    while k < len(v) // 2 and v[k + 1] > 0 and v[k] > factor * v[k + 1]:
        k += 1
    return float(v[k]) if k else None


FIGURE_MARK = "swapkl"


def linear_threshold(values) -> float:
    """A symmetric-log axis's linear range: the power of ten at or below the lower quartile of the values'
    magnitudes, so that most values lie on the logarithmic part however small they are."""
    values = np.asarray(values, dtype=float)
    size = np.abs(values[np.isfinite(values) & (values != 0)])
    return float(10 ** np.floor(np.log10(np.quantile(size, 0.25)))) if size.size else 1.0


#: a panel whose largest magnitude is this many times its smallest nonzero one gets a symmetric-log axis
SYMLOG_SPREAD = 100.0


def symlog_if_spread(ax, values, axis: str = "y") -> str:
    """Put ``axis`` of ``ax`` on a symmetric-log scale when ``values`` span more than :data:`SYMLOG_SPREAD` (small
    values would otherwise sit flat on zero beside large ones); returns the note's words for the axis, or ""."""
    values = np.asarray(values, dtype=float)
    size = np.abs(values[np.isfinite(values) & (values != 0)])
    if size.size < 2 or size.max() <= SYMLOG_SPREAD * size.min():
        return ""
    threshold = linear_threshold(values)
    getattr(ax, f"set_{axis}scale")("symlog", linthresh=threshold)
    return f"{axis}: symmetric log, linear within \u00b1{threshold:g}"


def _figure_written_by_swapkl(path: str) -> bool:
    """Whether ``path`` is a PNG or PDF that :func:`save_figure` wrote (it carries swapkl's mark)."""
    with open(path, "rb") as f:
        data = f.read()
    if data.startswith(b"\x89PNG"):
        return b"tEXtSoftware\x00" + FIGURE_MARK.encode() in data
    return data.startswith(b"%PDF") and b"/Creator (" + FIGURE_MARK.encode() + b")" in data


def save_figure(fig: Figure, out_png: str | Path, out_pdf: str | Path) -> None:
    """Write ``fig`` as PNG and PDF, byte-identical on reruns, atomically.

    Both files are marked as swapkl's (PNG ``Software``, PDF ``Creator``); an existing file at either
    path is only replaced when it carries that mark.
    """
    targets = [(Path(out_png), "png", {"Software": FIGURE_MARK}),
               (Path(out_pdf), "pdf", {"CreationDate": None, "ModDate": None, "Producer": None,
                                       "Creator": FIGURE_MARK})]
    require_distinct({"`out_png`": str(out_png), "`out_pdf`": str(out_pdf)})
    for path, fmt, _ in targets:
        replaceable(str(path), "figure", _figure_written_by_swapkl)
    try:
        with contextlib.ExitStack() as stack:  # both files are written before either replaces its target
            for path, fmt, meta in targets:
                try:
                    path.parent.mkdir(parents=True, exist_ok=True)
                except OSError as e:
                    raise SwapKLError(f"{path.parent}: cannot create the output folder ({e.strerror})") from None
                tmp = stack.enter_context(replaced_on_success(path))
                with figure_style(), _quiet_font_subsetting():
                    fig.savefig(tmp, format=fmt, dpi=PNG_DPI, metadata=meta)
    except OSError as e:
        raise SwapKLError(f"{e.filename or out_png}: cannot write figure ({e.strerror or e})") from None
