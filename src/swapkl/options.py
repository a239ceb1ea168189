"""Checks of numeric and device options, shared by the command line and the Python API.

Every check raises :class:`~swapkl.errors.SwapKLError` with one line naming the option and the
value, before anything is loaded or computed: a negative chunk size or seed must never reach
the engine (``torch.empty`` with a negative size, ``default_rng(-1)``), where it gives either a
traceback after hours of work or, worse, numbers from uninitialised memory.
"""

from __future__ import annotations

import math
import numbers
import re

from swapkl.errors import SwapKLError

DEVICE_PATTERN = re.compile(r"auto|cpu|cuda(:[0-9]+)?|mps")


def require_int(name: str, value, least: int) -> int:
    """``value`` as an int, which must be an integer (not a bool or float) and at least ``least``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise SwapKLError(f"{name} must be an integer, got {value!r}")
    if value < least:
        raise SwapKLError(f"{name} must be at least {least}, got {value}")
    return int(value)


def require_finite(name: str, value, *, least: float | None = None, above: float | None = None) -> float:
    """``value`` as a float, which must be a finite real number (not a bool, NaN or infinite), at least ``least``
    or above ``above`` when given: an infinite learning rate or weight decay fails much later, with a message about
    something else."""
    bound = "" if least is None and above is None else (f" >= {least:g}" if least is not None else f" > {above:g}")
    if isinstance(value, bool) or not isinstance(value, numbers.Real):  # numpy's integers and floats are Real
        raise SwapKLError(f"{name} must be a number, got {value!r}")
    if not _finite(value) or (least is not None and value < least) or (above is not None and value <= above):
        raise SwapKLError(f"{name} must be a finite number{bound}, got {value!r}")
    return float(value)


def _finite(value) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int beyond any float
        return False


def require_device(device: str) -> str:
    """One of ``auto``, ``cpu``, ``cuda``, ``cuda:N``, ``mps``."""
    if not isinstance(device, str) or not DEVICE_PATTERN.fullmatch(device):
        raise SwapKLError(f"unknown device {device!r}: choose cpu, cuda, cuda:N, mps or auto")
    return device
