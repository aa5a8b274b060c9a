"""The one percentile of the benchmarks: nearest rank. Standard library only, so that scripts run
from the end-to-end tests' venv (journal_latency.py) share it with the bench's."""

import math
from fractions import Fraction


def rank(n: int, q) -> int:
    """The 1-based rank in ascending order of the ``q``-th percentile of ``n`` values: the
    smallest value with at least ``q`` % of the values at or below it, ⌈q·n/100⌉ (at least 1).
    Exact arithmetic: 7/100 × 100 in floating point is 7.000000000000001, whose ceiling is 8."""
    if n < 1:
        raise ValueError("no values")
    return min(n, max(1, math.ceil(Fraction(str(q)) * n / 100)))


def percentile(values, q):
    """The ``q``-th nearest-rank percentile of ``values`` (one of them, never interpolated)."""
    ordered = sorted(values)
    return ordered[rank(len(ordered), q) - 1]


def _ordinal(k: int) -> str:
    suffix = "th" if 10 <= k % 100 <= 20 else {1: "st", 2: "nd", 3: "rd"}.get(k % 10, "th")
    return f"{k:,}{suffix}"


def describe(n: int, q) -> str:
    """Which value the ``q``-th percentile of ``n`` is, in words, counted from the nearer end:
    "the 6th-largest of 500" (p99), "the 250th-smallest of 500" (p50)."""
    k = rank(n, q)
    if k == n:
        return f"the largest of {n:,}"
    if q > 50:
        return f"the {_ordinal(n - k + 1)}-largest of {n:,}"
    return f"the {_ordinal(k)}-smallest of {n:,}"
