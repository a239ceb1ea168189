"""Kill a probe run part-way, the way a test of resuming needs it: deterministically, after a given
number of variants, at the engine's per-variant computation (the sweep's one call per variant)."""

from __future__ import annotations

from contextlib import contextmanager

import pytest

from swapkl.model.engine import ProbeEngine


class Crash(Exception):
    pass


@contextmanager
def crash_after(monkeypatch, n: int):
    """Inside: the engine raises :class:`Crash` when asked for its ``n + 1``-th variant; the block must
    raise it (the run was stopped there)."""
    real, calls = ProbeEngine.token_stats, []

    def flaky(self, state, variant):
        if len(calls) == n:
            raise Crash()
        calls.append(variant.key)
        return real(self, state, variant)

    with monkeypatch.context() as m:
        m.setattr(ProbeEngine, "token_stats", flaky)
        with pytest.raises(Crash):
            yield
