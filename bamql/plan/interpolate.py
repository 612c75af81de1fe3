"""DuckDB's linear interpolation between a quantile's two neighbours, for doubles and for a
DECIMAL's integers: one definition for the fused quantiles (``exec.quantiles``) and the
plan tree's (``plan.aggregates``)."""

from __future__ import annotations

import numpy as np


def between(xl: np.ndarray, xh: np.ndarray, d: np.ndarray) -> np.ndarray:
    """Doubles ``d`` of the way from ``xl`` to ``xh``, as DuckDB interpolates them:
    ``lo * (1 - d) + hi * d``, whose build fuses the last multiply and add (one rounding);
    at ``d == 0`` the value itself (no interpolation: an infinity stays one)."""
    xl, xh = xl.astype(np.float64), xh.astype(np.float64)
    with np.errstate(all="ignore"):
        return np.where(d == 0, xl, fused_multiply_add(xl, 1.0 - d, xh * d))


#: Veltkamp's splitter for doubles (2**27 + 1): ``x`` into halves whose products are exact
_SPLIT = 134217729.0


def fused_multiply_add(a: np.ndarray, b: np.ndarray, c: np.ndarray) -> np.ndarray:
    """``a * b + c`` as a fused multiply-add computes it, one rounding at the end: the
    product's rounding error found exactly (Dekker's two-product), the sum's too (Knuth's
    two-sum), both errors added back last; where a part overflows (an infinity, a value
    past 2**996), the plain ``a * b + c``."""
    with np.errstate(all="ignore"):
        p = a * b
        t = _SPLIT * a
        ah = t - (t - a)
        al = a - ah
        t = _SPLIT * b
        bh = t - (t - b)
        bl = b - bh
        e = ((ah * bh - p) + ah * bl + al * bh) + al * bl
        s = p + c
        v = s - p
        err = (p - (s - v)) + (c - v)
        fix = err + e
        out = np.where(fix == 0, s, s + fix)  # -0.0 + 0.0 would lose a zero's sign
        return np.where(np.isfinite(out) & np.isfinite(e), out, p + c)


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
