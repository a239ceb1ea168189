"""Guides that score removal sets on the calibration windows: by calibration NLL
(:func:`swapkl.pruning.sleb.calibration_nll`) SLEB iterative and greedy, and the width-3 beam search seeded
from the best interchange candidates; by next-token accuracy the accuracy-guided iterative pruning
of "Rethinking Layer Relevance" (:mod:`swapkl.pruning.guides.accuracy`). Each reports ``n_evals``, the
number of pruned models it scored on the calibration windows."""

from __future__ import annotations

import numpy as np

from swapkl.pruning.beam import beam_search
from swapkl.pruning.guides.context import GuideContext
from swapkl.pruning.guides.protocol import protocol_scores
from swapkl.pruning.guides.guide_registry import BEAM_WIDTH, Pruned, Selection
from swapkl.pruning.selection import lowest_select
from swapkl.pruning.guides.accuracy import accuracy_guided_sets, window_accuracy

#: step 1 of the beam scores this many layers: the lowest interchange scores (the paper's seed_k)
BEAM_SEEDS = 12


def sleb(ctx: GuideContext):
    """SLEB-iterative up to the largest budget (shared by both SLEB guides)."""
    from swapkl.pruning.sleb import sleb_iterative  # torch side: the figures read the guides without torch

    return ctx.cached("sleb", lambda: sleb_iterative(ctx.engine, ctx.calib, max(ctx.budgets),
                                                     batch_size=ctx.batch_size, device=ctx.device))


def sleb_iterative_guide(ctx: GuideContext) -> Selection | None:
    """Remove one block at a time by least calibration NLL, re-scoring after each removal (nested)."""
    if not ctx.measures:
        return None
    res = sleb(ctx)
    sel = Selection(scores={"sleb_single": res.single_removal_increase(ctx.n_layers)})
    for n in ctx.budgets:
        sel.removed[(n, None)] = Pruned(tuple(res.removed(n)))
        sel.n_evals[(n, None)] = sleb_evals(ctx.n_layers, n)
    return sel


def sleb_greedy(ctx: GuideContext) -> Selection | None:
    """The ``n`` blocks whose single removal raises calibration NLL least (SLEB's step-1 scores), no
    re-scoring, no spacing."""
    if not ctx.measures:
        return ctx.skip("sleb_greedy", "no model and calibration windows to measure")
    from swapkl.pruning.sleb import sleb_iterative  # torch side: the figures read the guides without torch

    # SLEB-iterative's first step when it ran (the same scores), else that one step alone
    res = ctx.measured("sleb") or sleb_iterative(ctx.engine, ctx.calib, 1, batch_size=ctx.batch_size,
                                                 device=ctx.device)
    single = res.single_removal_increase(ctx.n_layers)
    sel = Selection()
    for n in ctx.budgets:
        sel.removed[(n, None)] = Pruned(tuple(lowest_select(single, n)))
        sel.n_evals[(n, None)] = ctx.n_layers
    return sel


def sleb_evals(n_layers: int, n: int) -> int:
    """Calibration evaluations SLEB-iterative spends to remove ``n`` blocks."""
    return sum(n_layers - k for k in range(n))


def sleb_matched(ctx: GuideContext) -> Selection | None:
    """Matched-budget SLEB (the paper's matched-budget comparison): at each budget n, SLEB-iterative
    given as many calibration evaluations as the beam spent to reach n blocks removes as many blocks
    as those evaluations pay for (at most L - 1). Its rows keep the beam's ``budget``; ``removed_layers``
    may hold more or fewer blocks, and ``n_evals`` is what SLEB spent (<= the beam's)."""
    if not ctx.measures:
        return ctx.skip("sleb_matched", "no model and calibration windows to measure")
    beam_sel = ctx.measured("beam") or beam(ctx)  # the beam's evaluation counts, whether or not its rows are chosen
    if beam_sel is None:
        return ctx.skip("sleb_matched", "the beam guide could not run")
    L = ctx.n_layers
    depth = {n: max(k for k in range(L) if sleb_evals(L, k) <= beam_sel.n_evals[(n, None)]) for n in ctx.budgets}
    res = sleb(ctx)
    if max(depth.values()) > len(res.order):
        from swapkl.pruning.sleb import sleb_iterative  # torch side: the figures read the guides without torch

        res = sleb_iterative(ctx.engine, ctx.calib, max(depth.values()), batch_size=ctx.batch_size,
                             device=ctx.device, resume=res)
    sel = Selection()
    for n, k in depth.items():
        sel.removed[(n, None)] = Pruned(tuple(res.removed(k)))
        sel.n_evals[(n, None)] = sleb_evals(L, k)
    return sel


def beam(ctx: GuideContext) -> Selection | None:
    """Width-3 beam over removal sets by calibration NLL; step 1 tries the ``BEAM_SEEDS`` layers
    with the lowest interchange scores; no spacing (:mod:`swapkl.pruning.beam`)."""
    if not ctx.measures:
        return ctx.skip("beam", "no model and calibration windows to measure")
    s = protocol_scores(ctx, "interchange")
    if s is None:
        return ctx.skip("beam", "no interchange rows to seed it")
    seeds = lowest_select(s, min(BEAM_SEEDS, int((s == s).sum())))
    res = beam_search(lambda sets: ctx.calibration_nll(sets)[1], ctx.n_layers, seeds, max(ctx.budgets),
                      BEAM_WIDTH)
    sel = Selection()
    for n in ctx.budgets:
        sel.removed[(n, None)] = Pruned(res.best[n])
        sel.n_evals[(n, None)] = res.evals[n]
    return ctx.cached("beam", lambda: sel)


def accuracy_iterative(ctx: GuideContext) -> Selection | None:
    """Remove one block at a time keeping the highest next-token accuracy on the calibration windows,
    re-scoring after each removal (nested; ties: the set of lowest block indices); per-layer score: the
    accuracy drop of each single removal."""
    if not ctx.measures:
        return ctx.skip("accuracy_iterative", "no model and calibration windows to measure")
    steps: list[dict] = []  # each step's accuracies, the unpruned model's under ()

    def accuracy_of(sets):
        steps.append(window_accuracy(ctx.engine, ctx.calib, sets, batch_size=ctx.batch_size))
        return steps[-1]

    chosen = accuracy_guided_sets(accuracy_of, ctx.n_layers, max(ctx.budgets))
    drop = steps[0][()] - np.array([steps[0][(b,)] for b in range(ctx.n_layers)])
    sel = Selection(scores={"accuracy_single": drop})
    for n in ctx.budgets:
        sel.removed[(n, None)] = Pruned(chosen[n])
        sel.n_evals[(n, None)] = sleb_evals(ctx.n_layers, n)
    return sel
