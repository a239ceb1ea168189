"""Point labels that do not overlap: each label goes to the first of a ring of candidate offsets around its
point where its rendered box meets no label placed before it and stays inside the axes; labels moved beyond
the nearest ring get a thin leader line."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg

#: candidate offsets in points, nearest ring first
_RINGS = (4, 10, 17, 26, 36)
_DIRECTIONS = 12


def _candidates():
    for r in _RINGS:
        for k in range(_DIRECTIONS):
            a = 2 * np.pi * k / _DIRECTIONS + np.pi / 12
            yield r, (r * np.cos(a), r * np.sin(a))


def place_labels(ax: Axes, x, y, labels, *, fontsize: float = 6) -> list[str]:
    """Annotate the points ``(x, y)`` of ``ax`` with ``labels`` without overlaps; returns the labels that found
    no free place (not drawn). Call after the axes limits are final."""
    fig = ax.figure
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    fig.draw_without_rendering()
    renderer = canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    placed, left_out = [], []
    for xi, yi, lab in zip(x, y, labels):
        for r, (dx, dy) in _candidates():
            ha = "left" if dx >= 0 else "right"
            va = "bottom" if dy >= 0 else "top"
            arrow = dict(arrowstyle="-", color="#888888", lw=0.5, shrinkA=0, shrinkB=2) if r > _RINGS[0] else None
            t = ax.annotate(str(lab), (xi, yi), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize,
                            ha=ha, va=va, arrowprops=arrow, annotation_clip=False)
            t.set_in_layout(False)
            box = t.get_window_extent(renderer)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if inside and not any(box.overlaps(b) for b in placed):
                placed.append(box)
                break
            t.remove()
        else:
            left_out.append(str(lab))
    return left_out
