"""Exact comparisons of integers with constants, and the int64 limits.

An int64 does not fit a float64 beyond 2**53, so comparing a column of integers with a
constant through floats rounds: ``id < 100000000000159236`` becomes ``id < 1.0000000000015923e17``.
Here every comparison ``x op c`` of an integer ``x`` is turned into integer thresholds
instead: the integers with ``x >= c`` are those from ``first_at_least(c)`` on and those with
``x > c`` those from ``first_above(c)`` on. A constant is taken as what it is: an ``int`` or
a ``Fraction`` (an exact decimal, as SQL's ``2.5`` is) exactly, a ``float`` (SQL's ``2.5e0``, a
DOUBLE) the way SQL compares a BIGINT with a DOUBLE, by rounding ``x`` to the nearest double.
"""

from __future__ import annotations

import math
from fractions import Fraction

#: The int64 range. Its minimum is the null sentinel of int64 columns.
I64_MIN, I64_MAX = -(1 << 63), (1 << 63) - 1
#: A threshold beyond every int64 (what ``x < +inf`` or ``x >= 1e30`` come to).
_FAR = 1 << 64


def _first(lo: int, hi: int, pred) -> int:
    """The smallest integer in ``[lo, hi]`` where the monotone ``pred`` holds (it holds at hi)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if pred(mid):
            hi = mid
        else:
            lo = mid + 1
    return hi


def first_at_least(c: int | float | Fraction) -> int:
    """The least integer ``x`` with ``x >= c`` (a float ``c``: with ``float(x) >= c``);
    clamped to ``+-2**64`` for a ``c`` beyond every int64 (NaN, larger than all, as in SQL)."""
    if isinstance(c, float):
        if math.isnan(c) or c > _FAR:
            return _FAR
        if c < -_FAR:
            return -_FAR
        below = math.floor(math.nextafter(c, -math.inf))  # float(below) < c: the search starts above
        return _first(below + 1, math.ceil(c), lambda x: float(x) >= c)
    f = Fraction(c)
    return max(-_FAR, min(_FAR, math.ceil(f)))


def first_above(c: int | float | Fraction) -> int:
    """The least integer ``x`` with ``x > c`` (a float ``c``: with ``float(x) > c``), clamped
    like ``first_at_least``."""
    if isinstance(c, float):
        if math.isnan(c) or c >= _FAR:
            return _FAR
        if c < -_FAR:
            return -_FAR
        return _first(math.floor(c) + 1, math.ceil(math.nextafter(c, math.inf)),
                      lambda x: float(x) > c)
    f = Fraction(c)
    return max(-_FAR, min(_FAR, math.floor(f) + 1))


def int_interval(op: str, c: int | float | Fraction) -> tuple[int, int] | None:
    """The integers ``x`` with ``x op c`` as a half-open ``[start, stop)`` (either end may lie
    beyond int64); None for ``<>``, which is everything but ``int_interval('=', c)``."""
    ge, gt = first_at_least(c), first_above(c)
    return {"=": (ge, gt), "<": (-_FAR, ge), "<=": (-_FAR, gt), ">": (gt, _FAR),
            ">=": (ge, _FAR)}.get(op)


def fits_int64(v: int) -> bool:
    """Whether the integer ``v`` is an int64."""
    return I64_MIN <= v <= I64_MAX


__all__ = ["I64_MAX", "I64_MIN", "first_above", "first_at_least", "fits_int64", "int_interval"]
