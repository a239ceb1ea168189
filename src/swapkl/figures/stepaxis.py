"""A training-step x axis: linear over a narrow range of steps, else logarithmic yet showing step 0.

When the largest step is at most :data:`LINEAR_SPAN` times the smallest positive one (the demo's 0, 100, 400),
the axis is linear: a log axis would draw such steps about evenly spaced, hiding how far apart they are. Otherwise,
with step 0 among the plotted steps the axis is ``symlog`` with ``linthresh`` = the smallest
positive step and ``linscale`` = 0.5: steps from 0 to that step are linear and take half a
decade of width, everything above is logarithmic. Without step 0 it is a plain log axis.
Up to :data:`MAX_STEP_TICKS` distinct steps each get a labelled tick, otherwise the decades do.
"""

from __future__ import annotations

import math

from matplotlib.axes import Axes
from matplotlib.ticker import FixedLocator, FuncFormatter, NullLocator

LINSCALE = 0.5
MAX_STEP_TICKS = 8  # up to this many distinct steps, each gets a tick; else decades
#: a linear axis when the largest step is at most this many times the smallest positive step
LINEAR_SPAN = 30


def step_label(step: float, _pos=None) -> str:
    """0, 1, 10, 100, 1k, 10k, 100k, 1M ..."""
    step = float(step)
    if step == 0:
        return "0"
    for div, suffix in ((1e6, "M"), (1e3, "k")):
        if abs(step) >= div:
            v = step / div
            return f"{v:g}{suffix}"
    return f"{step:g}"


def set_step_axis(ax: Axes, steps) -> str:
    """Scale and ticks of ``ax``'s x axis for these training steps; returns a short description."""
    steps = sorted({int(s) for s in steps})
    positive = [s for s in steps if s > 0]
    if not positive:
        ax.set_xscale("linear")
        ax.set_xticks(steps or [0])
        ax.xaxis.set_major_formatter(FuncFormatter(step_label))
        return "linear step axis"
    lo, hi = positive[0], positive[-1]
    if hi <= LINEAR_SPAN * lo and len(steps) <= MAX_STEP_TICKS:
        ax.set_xscale("linear")
        ax.set_xticks(steps)
        ax.set_xlim(steps[0] - 0.05 * hi, hi * 1.05)
        ax.xaxis.set_minor_locator(NullLocator())
        ax.xaxis.set_major_formatter(FuncFormatter(step_label))
        return "x: linear step axis"
    decades = [10 ** k for k in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1)]
    if len(steps) <= MAX_STEP_TICKS:
        ticks = list(positive)  # few checkpoints: a tick at each
    else:
        ticks = [d for d in decades if lo <= d <= hi * 1.0001] or [lo, hi]
    if steps[0] == 0:
        ax.set_xscale("symlog", linthresh=lo, linscale=LINSCALE)
        ticks = [0] + ([lo] if lo not in ticks else []) + ticks
        left = -0.15 * lo
        desc = f"x: symlog (linear from 0 to {step_label(lo)}, log above)"
    else:
        ax.set_xscale("log")
        left = lo / 10 ** 0.15
        desc = "x: log scale"
    ax.set_xlim(left, hi * 10 ** 0.15)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.xaxis.set_major_formatter(FuncFormatter(step_label))
    return desc
