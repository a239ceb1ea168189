"""Pair-set names (`adjacent`, `within:K`, `all`): what they mean and which one covers a list of them."""

from __future__ import annotations

import re

from swapkl.errors import ConfigError

#: the two protocols whose KLs make a pair's gap and I/R ratio (d_repl - d_inter, d_inter / d_repl)
RATIO_PROTOCOLS = ("replacement", "interchange")

_WITHIN = re.compile(r"^within:([0-9]+)$")


def parse_pair_set(spec: str) -> tuple[str, int | None]:
    """Return ("adjacent", 1) / ("within", K) / ("all", None) for a pair-set name."""
    if spec == "adjacent":
        return "adjacent", 1
    if spec == "all":
        return "all", None
    m = _WITHIN.match(spec)
    if m and int(m.group(1)) >= 1:
        return "within", int(m.group(1))
    raise ConfigError(f"unknown pair set {spec!r}: expected 'adjacent', 'within:K' (K>=1) or 'all'")


def pair_reach(spec: str) -> float:
    """Largest |i-j| of a pair set (`all`: unbounded, infinity)."""
    reach = parse_pair_set(spec)[1]
    return float("inf") if reach is None else reach


def widest_pair_set(sets: list[str]) -> str:
    """The pair set that covers all of ``sets``, probed once: `all` covers everything, `within:K` covers
    `adjacent` and every `within:k` with k <= K."""
    widest = max(map(pair_reach, sets))
    if widest == float("inf"):
        return "all"
    return "adjacent" if widest == 1 else f"within:{widest}"
