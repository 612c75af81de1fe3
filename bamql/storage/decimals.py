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

from bamql.lazyjit import guard_compiles
from bamql.storage.format import MAX_DECIMALS, SCALED_TYPES
from bamql.storage.sqltypes import MAX_PRECISION, WIDE_DTYPE

guard_compiles()  # numba compiles with the cyclic GC paused (bamql.lazyjit)

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


class WideValue(ValueError):
    """A decimal value that no int64 holds at its scale (more than 18 digits): its column is
    stored wide (``sqltypes.WIDE_DTYPE``)."""


def unscaled(a: pa.Array, scale: int) -> tuple[np.ndarray, np.ndarray | None]:
    """The values of decimal array ``a`` as int64 integers at ``scale`` (``value * 10**scale``,
    exactly) and the mask of its NULLs (None where it has none; their integers are 0).

    Raises ``ValueError`` naming the first value that has more decimals than ``scale`` or
    more than 38 digits, ``WideValue`` naming the first that does not fit an int64 at that
    scale (more than 18 digits) or is -2**63 (the int64 NULL)."""
    t = a.type
    if not pa.types.is_decimal(t) or t.scale > scale:
        raise ValueError(f"a {t} column is not a decimal of at most {scale} decimals")
    if not pa.types.is_decimal128(t):
        try:
            a = a.cast(pa.decimal128(min(MAX_PRECISION, t.precision), t.scale))
        except pa.ArrowInvalid:
            raise ValueError(f"a value of the {t} column has more than {MAX_PRECISION} "
                             "digits") from None
    n = len(a)
    words = np.frombuffer(a.buffers()[1], dtype=np.int64)[2 * a.offset: 2 * (a.offset + n)]
    lo, hi = words[0::2], words[1::2]
    nulls = np.asarray(a.is_null()) if a.null_count else None
    fits = hi == (lo >> 63)  # the high word only extends the sign: an int64 holds it
    if nulls is not None:
        fits |= nulls
    out = np.where(nulls, 0, lo) if nulls is not None else lo.copy()
    fits &= lo != np.iinfo(np.int64).min  # the int64 NULL sentinel
    if not fits.all():
        bad = int(np.argmin(fits))
        raise WideValue(f"value {a[bad].as_py()} has more than 18 digits at scale {t.scale}")
    k = scale - a.type.scale
    if k:
        m = 10**k
        limit = (2**63 - 1) // m
        big = np.abs(out) > limit
        if big.any():
            bad = int(np.argmax(big))
            raise WideValue(f"value {a[bad].as_py()} has more than 18 digits at scale "
                            f"{scale}")
        out = out * np.int64(m)
    return out, nulls


def wide_unscaled(a: pa.Array, scale: int) -> np.ndarray:
    """The values of decimal (or integer) array ``a`` as a wide DECIMAL stores them: 16 bytes
    each (``sqltypes.WIDE_DTYPE``, Arrow's ``decimal128`` layout) at ``scale``, exactly, its
    NULLs ``sqltypes.WIDE_NULL``.

    Raises ``ValueError`` where a value has more decimals than ``scale`` or more than 38
    digits at it."""
    from bamql.storage.encoding import sentinel_for

    if pa.types.is_null(a.type):
        return np.full(len(a), sentinel_for(np.dtype(WIDE_DTYPE)))
    if not (pa.types.is_decimal(a.type) or pa.types.is_integer(a.type)):
        raise ValueError(f"a {a.type} column is not a decimal")
    try:
        d = a.cast(pa.decimal128(MAX_PRECISION, scale))
    except pa.ArrowInvalid:
        raise ValueError(f"a value of the {a.type} column has more than {MAX_PRECISION} "
                         f"digits at scale {scale}, or more than {scale} decimals") from None
    n = len(d)
    words = np.frombuffer(d.buffers()[1], dtype=np.int64)[2 * d.offset: 2 * (d.offset + n)]
    out = words.copy().view(np.dtype(WIDE_DTYPE))
    if d.null_count:
        out[np.asarray(d.is_null())] = sentinel_for(out.dtype)
    return out


def wide_array(stored: np.ndarray, precision: int, scale: int) -> pa.Array:
    """A wide DECIMAL's stored values (``wide_unscaled``) as Arrow's ``decimal128(precision,
    scale)``, exactly, NULLs restored."""
    from bamql.storage.encoding import null_mask

    v = np.ascontiguousarray(stored, dtype=np.dtype(WIDE_DTYPE))
    nulls = null_mask(v)
    words = v.view(np.int64).copy()
    validity, n_null = None, 0
    if nulls.any():
        words.reshape(-1, 2)[nulls] = 0
        validity = pa.array(~nulls).buffers()[1]
        n_null = int(np.count_nonzero(nulls))
    return pa.Array.from_buffers(pa.decimal128(precision, scale), len(v),
                                 [validity, pa.py_buffer(words.tobytes())], null_count=n_null)


def decimal_array(values: np.ndarray, nulls: np.ndarray | None, precision: int,
                  scale: int) -> pa.Array:
    """Integers ``values`` (the unscaled values of a DECIMAL, int64 or narrower) as an Arrow
    ``decimal128(precision, scale)`` array, exactly (no cast through a double); ``nulls``:
    the mask of NULL rows, or None."""
    v = np.ascontiguousarray(values, dtype=np.int64)
    words = np.empty(2 * len(v), np.int64)
    words[0::2], words[1::2] = v, v >> 63  # 128-bit two's complement, little-endian
    validity, n_null = None, 0
    if nulls is not None and nulls.any():
        validity = pa.array(~np.asarray(nulls, bool)).buffers()[1]
        n_null = int(np.count_nonzero(nulls))
    return pa.Array.from_buffers(pa.decimal128(precision, scale), len(v),
                                 [validity, pa.py_buffer(words.tobytes())], null_count=n_null)


def sql_typed(sql_type: str | None, values: np.ndarray, nulls: np.ndarray | None) -> pa.Array | None:
    """The Arrow array of an integer column of ``sql_type`` (``storage.sqltypes``): a
    DECIMAL(p,s) as ``decimal128(p,s)``, a BOOLEAN as ``bool``; None for any other type."""
    from bamql.storage.sqltypes import BOOLEAN, parse_decimal

    if sql_type == BOOLEAN:
        return pa.array(np.asarray(values) != 0, mask=nulls)
    d = parse_decimal(sql_type)
    if d is None:
        return None
    if values.dtype == np.dtype(WIDE_DTYPE):  # NULLs are its stored -2**127
        return wide_array(values, *d)
    return decimal_array(values, nulls, *d)


def sql_arrow_type(sql_type: str | None) -> pa.DataType | None:
    """The Arrow type of a column of ``sql_type`` (``storage.sqltypes``), or None."""
    from bamql.storage.sqltypes import BOOLEAN, DATE, TIME_ZONE, TIMESTAMPTZ, parse_decimal

    if sql_type == BOOLEAN:
        return pa.bool_()
    if sql_type == DATE:
        return pa.date32()
    if sql_type == TIMESTAMPTZ:
        return pa.timestamp("us", tz=TIME_ZONE)
    d = parse_decimal(sql_type)
    return None if d is None else pa.decimal128(*d)
