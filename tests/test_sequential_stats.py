"""swapkl.stats.sequential: its intervals against scipy's t-interval over windows (the independent reference),
and, by simulation on synthetic per-window KLs, that its decisions hold at the stated confidence although the
run looks at the data after every batch (and that the same looks without the adjustment do not)."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from swapkl.errors import SwapKLError
from swapkl.stats.sequential import (HOLDS, OPEN, Evidence, difference, halfwidth_decision, pair_keys, set_decision,
                                     sign_decision, still_needed)
from swapkl.stats.sequential_design import Decisions, Design


def _evidence(per_window: dict[str, np.ndarray], tokens: np.ndarray) -> Evidence:
    ev = Evidence(tokens)
    for key, kl in per_window.items():
        for w, value in enumerate(kl * tokens):
            ev.add(key, w, value)
    return ev


def test_the_interval_of_a_difference_is_the_t_interval_over_windows():
    """With the same scored tokens in every window, a ratio is the mean of the windows' KLs and the linearised
    interval is exactly the one-sample t-interval of the per-window differences."""
    rng = np.random.default_rng(1)
    a, b = rng.lognormal(0, 0.5, 12), rng.lognormal(-0.2, 0.5, 12)
    ev = _evidence({"a": a, "b": b}, np.full(12, 64.0))
    est, lo, hi, n = difference(ev, "a", "b", alpha=0.05)
    want = stats.ttest_1samp(a - b, 0).confidence_interval(0.95)
    assert n == 12 and est == pytest.approx(np.mean(a - b), rel=1e-12)
    assert (lo, hi) == pytest.approx((want.low, want.high), rel=1e-10)


def test_unequal_windows_weigh_by_scored_tokens():
    tokens = np.array([10.0, 64.0, 30.0, 64.0, 5.0])
    a, b = np.array([1.0, 2.0, 0.5, 1.5, 3.0]), np.array([0.5, 1.0, 0.4, 1.0, 1.0])
    ev = _evidence({"a": a, "b": b}, tokens)
    est = difference(ev, "a", "b", 0.05)[0]
    assert est == pytest.approx((a * tokens).sum() / tokens.sum() - (b * tokens).sum() / tokens.sum())
    assert ev.kl("a", 2) == pytest.approx((a[:2] * tokens[:2]).sum() / tokens[:2].sum())


def test_design_looks_and_refusals():
    d = Design(first=16, batch=16, cap=128)
    assert d.looks == [16, 32, 48, 64, 80, 96, 112, 128] and d.alpha_per_look == pytest.approx(0.05 / 8)
    assert Design(first=8, batch=10, cap=30).looks == [8, 18, 28, 30]
    assert d.bounded_by(40).looks == [16, 32, 40]
    with pytest.raises(SwapKLError, match="cap 4 is below its first look at 16"):
        Design(first=16, cap=4)
    with pytest.raises(SwapKLError, match="pool holds 8 windows, fewer than the first look's 16"):
        d.bounded_by(8)


def _simulate_pair(rng, n_windows: int, gap: float):
    """Per-window KLs of one pair: a window effect shared by the three variants (real windows differ in
    difficulty) times variant noise; ``gap`` = max of the replacement means minus the interchange mean."""
    window = rng.lognormal(-0.18, 0.6, n_windows)  # mean 1
    r_ij = 0.30 * window * rng.lognormal(-0.045, 0.3, n_windows)  # lognormal mean exp(mu + s^2 / 2) = 0.30
    r_ji = 0.20 * window * rng.lognormal(-0.045, 0.3, n_windows)
    inter = (0.30 - gap) * window * rng.lognormal(-0.045, 0.3, n_windows)
    return r_ij, r_ji, inter


def _run_signs(rng, design: Design, alpha_per_look: float, gap: float) -> str:
    """The first answer a sequential sign decision gives (``""``: none by the cap)."""
    r_ij, r_ji, inter = _simulate_pair(rng, design.cap, gap)
    keys = pair_keys(0, 1)
    for n in design.looks:
        ev = _evidence(dict(zip(keys, (r_ij[:n], r_ji[:n], inter[:n]))), np.full(n, 64.0))
        d = sign_decision(ev, 0, 1, alpha_per_look)
        if d.state == HOLDS:
            return d.answer
    return ""


def test_a_sign_declared_at_any_look_is_wrong_at_most_alpha_of_the_time():
    """True gap 0 (the interchange mean equals the larger replacement mean): every declared sign is wrong. Over
    2,000 simulated runs with 8 looks, the adjusted decisions err in at most 5% of runs (the bound is loose:
    Bonferroni), while the same looks at an unadjusted 5% each err more often than 5%."""
    design = Design(first=8, batch=8, cap=64)
    runs = 2000
    rng = np.random.default_rng(7)
    wrong = sum(_run_signs(rng, design, design.alpha_per_look, 0.0) != "" for _ in range(runs)) / runs
    rng = np.random.default_rng(7)
    naive = sum(_run_signs(rng, design, 0.05, 0.0) != "" for _ in range(runs)) / runs
    se = math.sqrt(0.05 * 0.95 / runs)
    assert wrong <= 0.05 + 2 * se, wrong
    assert naive > 0.05 + 2 * se, naive  # the adjustment is what keeps the level


def test_a_clear_gap_is_decided_early_and_rightly():
    design = Design(first=8, batch=8, cap=64)
    rng = np.random.default_rng(3)
    answers = [_run_signs(rng, design, design.alpha_per_look, 0.2) for _ in range(200)]
    assert answers.count("+") >= 190 and "-" not in answers


def test_the_mean_gap_interval_covers_the_truth_when_the_run_stops():
    """Stop at the first look where the half-width is within 25% of the estimate (or at the cap): the interval
    reported then covers the true mean gap in at least 95% of 1,000 runs."""
    design = Design(first=8, batch=8, cap=64)
    truth = np.mean([0.15, 0.10])  # the gaps of the two pairs simulated below
    rng = np.random.default_rng(11)
    covered = 0
    for _ in range(1000):
        data = {}
        for p, gap in enumerate((0.15, 0.10)):
            data.update(zip(pair_keys(2 * p, 2 * p + 1), _simulate_pair(rng, design.cap, gap)))
        for n in design.looks:
            ev = _evidence({k: v[:n] for k, v in data.items()}, np.full(n, 64.0))
            d = halfwidth_decision(ev, "two", [(0, 1), (2, 3)], 0.25, design.alpha_per_look)
            if d.state == HOLDS:
                break
        covered += d.low <= truth <= d.high
    assert covered / 1000 >= 0.95 - 2 * math.sqrt(0.05 * 0.95 / 1000), covered


def test_set_stability_and_which_variants_go_on():
    """A guide that removes the block of lowest KL: stable when one block is far below the rest, open when
    two blocks are alike; of the open decision's variants, only the two alike ones can change its answer and get
    more windows (the two far above them cannot, moved anywhere in their intervals)."""
    rng = np.random.default_rng(5)
    n = 16
    clear = {f"deletion:{b}": m * rng.lognormal(0, 0.3, n) for b, m in enumerate((0.1, 1.0, 1.1, 1.2))}
    close = {f"deletion:{b}": m * rng.lognormal(0, 0.3, n) for b, m in enumerate((0.50, 0.51, 2.0, 2.0), start=4)}
    ev = _evidence({**clear, **close}, np.full(n, 64.0))

    def lowest(kl):
        return (min(kl, key=kl.get).split(":")[1],)

    dec = Decisions(n_boot=300)
    a = set_decision(ev, "deletion", 1, list(clear), lowest, dec, seed=0)
    b = set_decision(ev, "deletion", 1, list(close), lowest, dec, seed=0)
    assert (a.state, a.answer) == (HOLDS, "0") and a.estimate >= 0.95
    assert b.state == OPEN and 0.05 < b.estimate < 0.95
    assert still_needed([a, b]) == {"deletion:4", "deletion:5"}


def test_an_interval_decision_that_held_stays_held_and_a_set_is_estimated_anew():
    """The coverage above counts the first answer a run declares, so a sign or half-width that held at a look keeps
    that look's answer, interval and windows; a later look's interval does not reopen it. A set's stability is
    estimated anew at every look, and a decision not held before is taken as it is now."""
    from swapkl.stats.sequential import Decision, keep_held

    held = Decision("sign", "3-4", HOLDS, 0.2, 0.05, 0.35, 16, ("a", "b", "c"), "+", look=1)
    half = Decision("halfwidth", "adjacent", HOLDS, 0.5, 0.46, 0.54, 32, ("a",), "+-10%", look=2)
    was_set = Decision("set", "interchange@1", HOLDS, 0.97, math.nan, math.nan, 32, ("c",), "4", look=2)
    open_before = Decision("sign", "5-6", OPEN, 0.01, -0.1, 0.12, 16, ("d",), "", look=1)
    now = [Decision("sign", "3-4", OPEN, 0.1, -0.02, 0.22, 48, ("a", "b", "c"), "", look=3),
           Decision("halfwidth", "adjacent", OPEN, 0.45, 0.38, 0.52, 48, ("a",), "+-10%", look=3),
           Decision("set", "interchange@1", OPEN, 0.9, math.nan, math.nan, 48, ("c",), "4", look=3),
           Decision("sign", "5-6", HOLDS, 0.2, 0.1, 0.3, 48, ("d",), "+", look=3)]
    kept = keep_held([held, half, was_set, open_before], now)
    assert kept[0] is held and kept[1] is half
    assert kept[2] is now[2] and kept[3] is now[3]
