"""Sequential probing to a stated confidence: which decisions the windows seen so far settle, and which variants
still need windows.

A sequential probe draws windows from a pool in batches (in the pool's order, so every variant sees a prefix of
it) and, after each batch, asks the questions the run is for. A variant keeps getting windows only while a
question it takes part in is still open. This module holds the statistics; the model runs are
:mod:`swapkl.studies.sequential.probe`.

The evidence is, for each variant v, its per-window KL sums ``x[v, w]`` over the first ``n[v]`` windows of the
pool, and the scored tokens ``t[w]`` of each window (the same for every variant). A variant's KL on its windows is
the token-weighted ratio ``sum(x[v, :n]) / sum(t[:n])``, as the uniform probe computes it.

**Intervals.** A difference of two KLs on their common windows (the shorter prefix, ``n``) is estimated with the
window as the unit: each window's influence on a ratio estimate ``d`` is ``(x[w] - d t[w]) / mean(t)`` (the
linearisation of the ratio), and the interval is Student's t on the mean of the paired influences, ``n - 1``
degrees of freedom. With few windows a percentile bootstrap is too narrow; the t-interval is not.

**Repeated looks.** A run evaluates its decisions at most ``len(design.looks)`` times, planned in advance
(:attr:`Design.looks`). Each interval is taken at level ``1 - alpha / n_looks`` (Bonferroni over the planned
looks), so the chance that any look's interval misses is at most ``alpha``: a decision declared at any look holds
at the stated confidence however often the run looked. (A design with one look is the uniform probe's interval.)
``tests/test_sequential_stats.py`` checks the coverage by simulation, counting the first answer each run declares.
So an interval decision (sign, half-width) that holds is kept as it was at its look (:func:`keep_held`): its
variants may go on for another decision, and a later look's interval, which may straddle its bound again, does
not reopen it. A set's stability is a share of resamples, not an interval, and is estimated anew at every look.

**Decisions** (:class:`Decisions`):

* ``sign``: the sign of each pair's gap ``max(r_ij, r_ji) - d_inter``. Positive when either direction's
  difference ``r - d_inter`` has an interval above 0, negative when both have intervals below 0, each interval at
  ``alpha / 2`` (the two directions share the error budget); otherwise open.
* ``halfwidth``: the mean gap of a pair set has an interval whose half-width is at most ``rel`` times the
  estimate's magnitude (each pair's gap in its larger direction at the current estimates; the window influences
  of the pairs averaged, so the interval is over windows).
* ``set``: a guide's removal set at a budget is stable: the share of window resamples (each variant's own windows,
  resampled alike where they are the same, :func:`own_resamples`) on which the guide picks the same blocks is at
  least ``stability``. This is a stability statement, not a confidence level: it says how often other windows of
  the same text would give the same answer. While it is open, only the variants that can still change the
  answer get windows (:func:`set_decision`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np

from swapkl.errors import SwapKLError
from swapkl.stats.sequential_design import Decisions

#: the states of a decision
HOLDS, OPEN = "holds", "undecided"


@dataclass
class Decision:
    """One decision at a look: what it is about, its state, its estimate and interval (or stability), the
    windows it rests on and the variants it needs while open."""

    kind: str  # sign | halfwidth | set
    subject: str  # "3-4", "adjacent", "interchange@2"
    state: str
    estimate: float
    low: float
    high: float
    windows: int
    variants: tuple[str, ...]
    answer: str = ""  # "+", "-", the removed blocks "3,7"
    look: int = 0  # the look it was evaluated at (for a held interval decision: the look it first held)


# ------------------------------------------------------------------------------------------ the evidence


class Evidence:
    """Per-window KL sums of each variant over a prefix of the pool, and the pool's scored tokens per window."""

    def __init__(self, tokens: Sequence[float] = ()):
        self._tokens = [float(t) for t in tokens]
        self.sums: dict[str, list[float]] = {}

    @property
    def tokens(self) -> np.ndarray:
        """Scored tokens of each window of the pool seen so far."""
        return np.asarray(self._tokens, dtype=np.float64)

    def add_tokens(self, window: int, tokens: float) -> None:
        """The scored tokens of pool window ``window`` (the next one)."""
        if window != len(self._tokens):
            raise SwapKLError(f"window {window} arrived after {len(self._tokens)} windows: the pool is read in order")
        self._tokens.append(float(tokens))

    def add(self, key: str, window: int, kl_sum: float) -> None:
        """The KL sum of variant ``key`` on pool window ``window`` (windows arrive in the pool's order)."""
        seen = self.sums.setdefault(key, [])
        if window != len(seen) or window >= len(self._tokens):
            raise SwapKLError(f"variant {key}: window {window} arrived after {len(seen)} windows; a sequential probe "
                              "gives each variant a prefix of the pool")
        seen.append(float(kl_sum))

    def n(self, key: str) -> int:
        return len(self.sums.get(key, ()))

    def common(self, keys) -> int:
        return min(self.n(k) for k in keys)

    def matrix(self, keys, n: int) -> np.ndarray:
        """``[len(keys), n]`` KL sums of ``keys`` on the first ``n`` windows."""
        return np.array([self.sums[k][:n] for k in keys], dtype=np.float64).reshape(len(keys), n)

    def kl(self, key: str, n: int | None = None) -> float:
        n = self.n(key) if n is None else n
        return ratio(np.asarray(self.sums[key][:n]), self.tokens[:n])


def ratio(sums: np.ndarray, tokens: np.ndarray) -> float:
    total = float(np.sum(tokens))
    return float(np.sum(sums) / total) if total > 0 else math.nan


def influences(sums: np.ndarray, tokens: np.ndarray) -> np.ndarray:
    """Each window's influence on the ratio estimate ``sum(sums) / sum(tokens)`` (rows: estimates)."""
    sums = np.atleast_2d(sums)
    d = sums.sum(axis=1, keepdims=True) / tokens.sum()
    return (sums - d * tokens) / tokens.mean()


def t_interval(estimate: float, infl: np.ndarray, alpha: float) -> tuple[float, float]:
    """Student's t interval at level ``1 - alpha`` around ``estimate`` from per-window influences ``infl``."""
    from scipy.stats import t as student_t

    n = len(infl)
    if n < 2:
        return -math.inf, math.inf
    half = float(student_t.ppf(1 - alpha / 2, n - 1) * np.std(infl, ddof=1) / math.sqrt(n))
    return estimate - half, estimate + half


def paired_difference(a: np.ndarray, b: np.ndarray, tokens: np.ndarray, alpha: float) -> tuple[float, float, float]:
    """(ratio of ``a`` minus ratio of ``b``, interval low, high): two per-window sums over the same windows with
    ``tokens`` per window, the interval on the paired influences."""
    x = np.stack([a, b])
    est = ratio(x[0], tokens) - ratio(x[1], tokens)
    u = influences(x, tokens)
    lo, hi = t_interval(est, u[0] - u[1], alpha)
    return est, lo, hi


def mean_gap(triples: np.ndarray, tokens: np.ndarray, alpha: float, *,
             one_direction: bool = False) -> tuple[float, float, float]:
    """(mean gap over pairs, interval low, high) from ``[n_pairs, 3, n_windows]`` per-window KL sums of each pair's
    replacement i<-j, replacement j<-i and interchange: each pair's gap in its larger replacement direction (or
    i<-j for ``one_direction``) at the estimates, the pairs' window influences averaged."""
    n_pairs = triples.shape[0]
    x = triples.reshape(n_pairs * 3, -1)
    d = x.sum(axis=1) / tokens.sum()
    infl = influences(x, tokens)
    gaps, rows = [], []
    for p in range(n_pairs):
        a, b, c = 3 * p, 3 * p + 1, 3 * p + 2
        repl = a if one_direction or d[a] >= d[b] else b
        gaps.append(d[repl] - d[c])
        rows.append(infl[repl] - infl[c])
    est = float(np.mean(gaps))
    lo, hi = t_interval(est, np.mean(rows, axis=0), alpha)
    return est, lo, hi


def difference(evidence: Evidence, a: str, b: str, alpha: float) -> tuple[float, float, float, int]:
    """(KL(a) - KL(b), interval low, high, windows) on the common windows of ``a`` and ``b``."""
    n = evidence.common((a, b))
    x = evidence.matrix((a, b), n)
    return (*paired_difference(x[0], x[1], evidence.tokens[:n], alpha), n)


# ------------------------------------------------------------------------------------------ the decisions


def pair_keys(i: int, j: int) -> tuple[str, str, str]:
    """The variant keys of pair i < j: replacement i<-j, replacement j<-i, interchange i<->j."""
    return f"replacement:{i}:{j}", f"replacement:{j}:{i}", f"interchange:{i}:{j}"


def sign_decision(evidence: Evidence, i: int, j: int, alpha: float) -> Decision:
    """The sign of pair (i, j)'s gap ``max(r_ij, r_ji) - d_inter`` (module docstring)."""
    r_ij, r_ji, inter = pair_keys(i, j)
    fwd = difference(evidence, r_ij, inter, alpha / 2)
    rev = difference(evidence, r_ji, inter, alpha / 2)
    n = evidence.common((r_ij, r_ji, inter))
    gap = max(evidence.kl(r_ij, n), evidence.kl(r_ji, n)) - evidence.kl(inter, n)
    low, high = max(fwd[1], rev[1]), max(fwd[2], rev[2])  # bounds of max(a, b) - c from those of a - c, b - c
    answer = "+" if low > 0 else "-" if high < 0 else ""
    return Decision("sign", f"{i}-{j}", HOLDS if answer else OPEN, gap, low, high, n, (r_ij, r_ji, inter), answer)


def halfwidth_decision(evidence: Evidence, name: str, pairs: Sequence[tuple[int, int]], rel: float,
                       alpha: float) -> Decision:
    """The mean gap of the pairs of set ``name`` to a relative half-width ``rel`` (module docstring)."""
    keys = tuple(k for i, j in pairs for k in pair_keys(i, j))
    n = evidence.common(keys)
    est, lo, hi = mean_gap(evidence.matrix(keys, n).reshape(len(pairs), 3, n), evidence.tokens[:n], alpha)
    holds = (hi - lo) / 2 <= rel * abs(est)
    return Decision("halfwidth", name, HOLDS if holds else OPEN, est, lo, hi, n, keys, f"+-{rel:.0%}")


def own_resamples(evidence: Evidence, keys: Sequence[str], n_boot: int, seed: int) -> np.ndarray:
    """``[n_boot, len(keys)]`` KLs of each variant on bootstrap resamples of its own windows. One set of uniform
    draws serves every variant (draw k picks window ``floor(u * n_v)`` of a variant's ``n_v``), so variants that
    saw the same windows are resampled alike, as the uniform probe's bootstrap pairs them."""
    n_max = max(evidence.n(k) for k in keys)
    u = np.random.default_rng(seed).random((n_boot, n_max))
    tokens = evidence.tokens
    out = np.empty((n_boot, len(keys)))
    rows = np.arange(n_boot)[:, None]
    for c, key in enumerate(keys):
        n = evidence.n(key)
        idx = np.floor(u[:, :n] * n).astype(np.int64)
        counts = np.zeros((n_boot, n))
        np.add.at(counts, (rows, idx), 1.0)
        out[:, c] = counts @ np.asarray(evidence.sums[key]) / (counts @ tokens[:n])
    return out


def ratio_interval(evidence: Evidence, key: str, alpha: float) -> tuple[float, float]:
    """The t-interval of one variant's KL on its own windows."""
    n = evidence.n(key)
    x, t = np.asarray(evidence.sums[key])[None, :], evidence.tokens[:n]
    return t_interval(ratio(x[0], t), influences(x, t)[0], alpha)


def set_decision(evidence: Evidence, guide: str, budget: int, keys: Sequence[str],
                 select: Callable[[dict[str, float]], tuple[int, ...] | None], decisions: Decisions,
                 seed: int, alpha: float = 0.05) -> Decision:
    """Whether ``select`` ({variant key: KL} -> removed blocks) picks the same blocks on at least
    ``decisions.stability`` of the bootstrap resamples of the windows (each variant's own, :func:`own_resamples`).

    While it does not, the variants it needs are those that can still change the answer: the ones whose KL, moved
    to either end of its interval at level ``1 - alpha`` with the others at their estimates, changes the blocks
    chosen. The rest stop getting windows, so the windows go where the decision is still open."""
    keys = tuple(keys)
    point = {k: evidence.kl(k) for k in keys}
    chosen = select(point)
    boot = own_resamples(evidence, keys, decisions.n_boot, seed)
    same = sum(select(dict(zip(keys, row))) == chosen for row in boot) / decisions.n_boot
    holds = chosen is not None and same >= decisions.stability
    needed = []
    if not holds:
        for k in keys:
            lo, hi = ratio_interval(evidence, k, alpha)
            if any(select({**point, k: v}) != chosen for v in (lo, hi)):
                needed.append(k)
        needed = needed or list(keys)  # no single variant moves it: all of them, jointly
    answer = "" if chosen is None else ",".join(map(str, chosen))
    # windows: the most any variant it reads saw (those that cannot move it stopped earlier)
    return Decision("set", f"{guide}@{budget}", HOLDS if holds else OPEN, float(same), math.nan, math.nan,
                    max(evidence.n(k) for k in keys), tuple(needed), answer)


#: the decisions whose intervals the planned looks' Bonferroni split covers: one that holds stays held
INTERVAL_KINDS = ("sign", "halfwidth")


def keep_held(before: list[Decision], now: list[Decision]) -> list[Decision]:
    """``now`` (every decision at this look), with each interval decision that held at an earlier look (in
    ``before``) kept as it was then (module docstring, repeated looks)."""
    held = {(d.kind, d.subject): d for d in before if d.kind in INTERVAL_KINDS and d.state == HOLDS}
    return [held.get((d.kind, d.subject), d) for d in now]


def still_needed(decided: list[Decision]) -> set[str]:
    """The variants that take part in an open decision: the ones that get the next windows."""
    return {k for d in decided if d.state == OPEN for k in d.variants}
