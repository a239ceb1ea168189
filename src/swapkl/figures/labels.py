"""Point labels that do not overlap: points drawn on top of each other (closer than a few pixels) share one
label listing them all; each label goes to the first of a ring of candidate offsets around its point where its
rendered box meets no label placed before it and no plotted point, and stays inside the axes; labels moved beyond
the nearest ring get a thin leader line."""

from __future__ import annotations

import numpy as np
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.transforms import Bbox

#: candidate offsets in points, nearest ring first
_RINGS = (4, 10, 17, 26, 36)
_DIRECTIONS = 12
#: points closer than this (pixels) share one label
MERGE_PX = 9.0
#: half the side of the box around a point that no label may cover (pixels)
POINT_PX = 3.0


def merged_labels(xy: np.ndarray, labels, merge_px: float = MERGE_PX) -> list[tuple[int, str]]:
    """(index of the first point, label) per group of points closer than ``merge_px`` to a point of the group
    (display coordinates ``xy``), the group's labels joined by commas in their given order."""
    n = len(labels)
    group = list(range(n))

    def root(k):
        while group[k] != k:
            k = group[k]
        return k

    for a in range(n):
        for b in range(a + 1, n):
            if np.hypot(*(xy[a] - xy[b])) < merge_px:
                group[root(b)] = root(a)
    members: dict[int, list[int]] = {}
    for k in range(n):
        members.setdefault(root(k), []).append(k)
    return [(ks[0], ", ".join(str(labels[k]) for k in ks)) for ks in members.values()]


def _candidates():
    for r in _RINGS:
        for k in range(_DIRECTIONS):
            a = 2 * np.pi * k / _DIRECTIONS + np.pi / 12
            yield r, (r * np.cos(a), r * np.sin(a))


def place_labels(ax: Axes, x, y, labels, *, fontsize: float = 6) -> list[str]:
    """Annotate the points ``(x, y)`` of ``ax`` with ``labels`` without overlaps (points on top of each other get
    one label listing them); returns the labels that found no free place (not drawn). Call after the axes
    limits are final."""
    fig = ax.figure
    canvas = fig.canvas if isinstance(fig.canvas, FigureCanvasAgg) else FigureCanvasAgg(fig)
    fig.draw_without_rendering()
    renderer = canvas.get_renderer()
    frame = ax.get_window_extent(renderer)
    x, y, labels = np.asarray(x, dtype=float), np.asarray(y, dtype=float), list(labels)
    xy = ax.transData.transform(np.c_[x, y]) if len(labels) else np.zeros((0, 2))
    points = [Bbox.from_extents(px - POINT_PX, py - POINT_PX, px + POINT_PX, py + POINT_PX) for px, py in xy]
    placed, left_out = [], []
    for k, lab in merged_labels(xy, labels):
        xi, yi = x[k], y[k]
        for r, (dx, dy) in _candidates():
            ha = "left" if dx >= 0 else "right"
            va = "bottom" if dy >= 0 else "top"
            arrow = dict(arrowstyle="-", color="#888888", lw=0.5, shrinkA=0, shrinkB=2) if r > _RINGS[0] else None
            t = ax.annotate(str(lab), (xi, yi), xytext=(dx, dy), textcoords="offset points", fontsize=fontsize,
                            ha=ha, va=va, arrowprops=arrow, annotation_clip=False)
            t.set_in_layout(False)
            box = t.get_window_extent(renderer)
            inside = frame.x0 <= box.x0 and box.x1 <= frame.x1 and frame.y0 <= box.y0 and box.y1 <= frame.y1
            if inside and not any(box.overlaps(b) for b in placed + points):
                placed.append(box)
                break
            t.remove()
        else:
            left_out.append(str(lab))
    return left_out
