"""Scaled-integer storage of decimal floats: the narrow encoding of money and distances.

Taxi fares, tips and distances are decimals of two digits held in float64. Stored as
``round(value * 10**scale)`` in an int16 they take a quarter of the bytes, and a decode
(``stored / 10**scale``, one correctly rounded division) gives back the very same double,
because the writer stores a column this way only when every one of its values round-trips.
Streams and the PCIe floor shrink with the bytes; gathers still cost one page per row.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

import numba
import numpy as np
import pyarrow as pa

from bamql.storage.format import MAX_DECIMALS, SCALED_TYPES

_POW10 = np.array([10.0**d for d in range(MAX_DECIMALS + 1)])
#: Scaled floats are int16 at narrowest: the measures then share a width, which row groups
#: need (equal rows per page), and int8 would only save on a few tiny surcharge columns.
_WIDTHS = tuple(np.dtype(t) for t in SCALED_TYPES)


@numba.njit(nogil=True, cache=True)
def _scan(v: np.ndarray, pow10: np.ndarray, d0: int) -> tuple[int, float, float]:
    """Fewest decimals ``d >= d0`` with which every non-NaN value round-trips (``-1`` if
    none does, or a value is infinite or a negative zero), and the min and max non-NaN value."""
    d = d0
    top = len(pow10) - 1
    lo, hi = np.inf, -np.inf
    for x in v:
        if x != x:
            continue
        if x < lo:
            lo = x
        if x > hi:
            hi = x
        if d < 0:
            continue
        if not np.isfinite(x) or (x == 0.0 and math.copysign(1.0, x) < 0.0):
            d = -1  # an infinity or a negative zero has no scaled-integer form
            continue
        while d <= top and np.round(x * pow10[d]) / pow10[d] != x:
            d += 1
        if d > top:
            d = -1
    return d, lo, hi


@numba.njit(nogil=True, cache=True)
def _encode(v: np.ndarray, p: float, sentinel: int, out: np.ndarray) -> int:
    """Fill ``out`` with ``round(v * p)`` (NaN -> ``sentinel``); return the index of the
    first value that does not round-trip or does not fit, or -1."""
    lo = sentinel + 1
    hi = -(sentinel + 1)
    for i in range(len(v)):
        x = v[i]
        if x != x:
            out[i] = sentinel
            continue
        s = np.round(x * p)
        if s / p != x or s < lo or s > hi or (x == 0.0 and math.copysign(1.0, x) < 0.0):
            return i
        out[i] = np.int64(s)
    return -1


@dataclass
class DecimalScan:
    """What a pass over one float column found: its decimals so far and its range."""

    decimals: int = 0  # -1: not decimal (or not finite)
    lo: float = np.inf
    hi: float = -np.inf
    rows: int = 0

    def update(self, values: np.ndarray, real_nans: bool = False) -> None:
        """Take in the next values (float64, NaN for null); ``real_nans``: some NaNs among
        them are values, not nulls, which scaled integers cannot hold."""
        if real_nans:
            self.decimals = -1
        if self.decimals < 0 or not len(values):
            return
        d, lo, hi = _scan(np.ascontiguousarray(values, dtype=np.float64), _POW10, self.decimals)
        self.decimals = d
        self.lo, self.hi = min(self.lo, lo), max(self.hi, hi)
        self.rows += len(values)

    def merge(self, other: DecimalScan) -> DecimalScan:
        """The scan of both parts' values."""
        d = -1 if min(self.decimals, other.decimals) < 0 else max(self.decimals, other.decimals)
        return DecimalScan(d, min(self.lo, other.lo), max(self.hi, other.hi),
                           self.rows + other.rows)

    def encoding(self) -> tuple[int, np.dtype] | None:
        """``(scale, integer dtype)`` to store the column with, or None to keep float64.

        The scale is at least 1, also for whole numbers: ``scale`` 0 means a column stored as
        is, and a float column stored as integers must be decoded (its NULL is the integer
        sentinel, not NaN)."""
        if self.decimals < 0:
            return None
        scale = max(self.decimals, 1)
        p = 10.0**scale
        lo = round(self.lo * p) if np.isfinite(self.lo) else 0
        hi = round(self.hi * p) if np.isfinite(self.hi) else 0
        for dt in _WIDTHS:
            info = np.iinfo(dt)
            if info.min < lo and hi <= info.max:  # the minimum is the null sentinel
                return scale, dt
        return None


def real_nans(a: pa.Array, values: np.ndarray) -> bool:
    """Whether ``values`` (``to_float64(a)``) hold NaNs that are values of ``a``, not nulls."""
    return int(np.count_nonzero(np.isnan(values))) > a.null_count


def to_float64(a: pa.Array) -> np.ndarray:
    """A float column's values as float64, NaN for null. Decimals of up to 18 digits become
    ``unscaled / 10**scale``, correctly rounded (Arrow's own cast is off by an ulp for about
    one value in seven, which would keep a decimal(10,2) column from its exact encoding);
    integers become the nearest double."""
    if pa.types.is_decimal(a.type) and a.type.precision <= 18 and a.type.bit_width == 128:
        # 128-bit little-endian two's complement; up to 18 digits the low word holds it all
        words = np.frombuffer(a.buffers()[1], dtype=np.int64)[2 * a.offset : 2 * (a.offset + len(a))]
        out = words[0::2].astype(np.float64) / 10.0**a.type.scale
        if a.null_count:
            out[np.asarray(a.is_null())] = np.nan
        return out
    # an integer beyond 2**53 (a file whose column is BIGINT where another's is DOUBLE) is
    # rounded to the nearest double, as SQL's CAST(BIGINT AS DOUBLE) does
    safe = not pa.types.is_integer(a.type)
    return a.cast(pa.float64(), safe=safe).to_numpy(zero_copy_only=False).astype(np.float64, copy=False)


def scan_all(parts: Iterable[np.ndarray]) -> DecimalScan:
    """A :class:`DecimalScan` over every array of ``parts``."""
    s = DecimalScan()
    for a in parts:
        s.update(a)
    return s


def encode(values: np.ndarray, scale: int, dtype: np.dtype) -> np.ndarray:
    """``values`` (float64, NaN for null) as scaled integers of ``dtype``.

    Raises ``ValueError`` naming the first value that does not round-trip or fit: the scan
    that chose the encoding saw other data.
    """
    dtype = np.dtype(dtype)
    out = np.empty(len(values), dtype=dtype)
    sentinel = int(np.iinfo(dtype).min)
    bad = _encode(np.ascontiguousarray(values, dtype=np.float64), 10.0**scale, sentinel, out)
    if bad >= 0:
        raise ValueError(f"value {values[bad]!r} is not a {scale}-decimal number within {dtype}")
    return out
