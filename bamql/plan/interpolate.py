"""DuckDB's linear interpolation between a quantile's two neighbours, for doubles and for a
DECIMAL's integers: one definition for the fused quantiles (``engine.quantiles``) and the
plan tree's (``plan.aggregates``)."""

from __future__ import annotations

import numpy as np


def between(xl: np.ndarray, xh: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Doubles ``d`` of the way from ``xl`` to ``xh``, as DuckDB interpolates them."""
    xl, xh = xl.astype(np.float64), xh.astype(np.float64)
    with np.errstate(all="ignore"):
        # equal neighbours are the answer as they are (two infinities, two -0.0s); an
        # infinite neighbour is weighed as DuckDB does (lo * (1 - d) + hi * d: -inf
        # beside a number is -inf, not -inf + inf)
        inf = np.isinf(xl) | np.isinf(xh)
        return np.where(xl == xh, xl,
                        np.where(inf, xl * (1 - d) + xh * d, xl + d * (xh - xl)))


def decimal_between(lo: np.ndarray, hi: np.ndarray, d: np.ndarray, precision: int) -> np.ndarray:
    """The integers of a DECIMAL(``precision``, s) ``d`` of the way from ``lo`` to ``hi``
    (either way round), as DuckDB interpolates a DECIMAL: one held in 64 bits (precision up
    to 18) as the double ``lo + (hi - lo) * d`` cut toward zero, a wider one as ``lo`` plus
    ``(hi - lo) * d`` cut toward zero, exact in its integers."""
    lo, hi = lo.astype(np.int64), hi.astype(np.int64)
    step = (hi - lo).astype(np.float64) * d
    if precision <= 18:
        between = np.trunc(lo.astype(np.float64) + step).astype(np.int64)
    else:
        between = lo + np.trunc(step).astype(np.int64)
    return np.where(d == 0, lo, between)  # at a value's own position: that value, exactly


def decimal_between_one(lo: int, hi: int, d: float, precision: int) -> int:
    """:func:`decimal_between` of one pair of integers of any size (a DECIMAL(38)'s)."""
    if d == 0:
        return lo
    if precision <= 18:
        return int(float(lo) + float(hi - lo) * d)
    return lo + int(float(hi - lo) * d)
