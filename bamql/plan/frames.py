"""Aggregates over window frames (``SUM``, ``AVG``, ``MIN``, ``MAX``, ``COUNT`` ``OVER``) in
time linear in the rows for the frames analysts write: the whole partition, running frames
from the partition's start (``ORDER BY`` alone, ``UNBOUNDED PRECEDING``) and frames to its
end are one pass each (partition totals, segmented scans); bounded ``ROWS`` frames add up
each row's frame (exact prefix sums for integers and decimals).

Rows come sorted by partition and order keys (``plan.windows``); ``lo``/``hi`` are each
row's frame as positions in that order, empty where ``lo > hi``. Semantics are DuckDB's:
NULLs are left out, a frame without a value is NULL (``COUNT``: 0), NaN is above every
number, integer and decimal sums are exact (``DECIMAL(38, s)``, HUGEINT for integers).
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from enum import Enum
from fractions import Fraction

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bamql.errors import OutOfRangeError, PlanError
from bamql.lazyjit import njit


class Reach(Enum):
    """How far a frame reaches, which decides how its aggregate is computed."""

    WHOLE = "the whole partition"
    FROM_START = "from the partition's start"
    TO_END = "to the partition's end"
    BOUNDED = "bounded on both sides"


@dataclass(frozen=True)
class Frames:
    """Each row's frame (positions in partition order) and what the rows share: the first
    and last position of each row's partition, and where partitions start."""

    lo: np.ndarray
    hi: np.ndarray
    begin: np.ndarray
    end: np.ndarray
    reach: Reach

    @property
    def rows(self) -> int:
        return len(self.lo)

    @property
    def empty(self) -> np.ndarray:
        return self.lo > self.hi

    @property
    def first(self) -> np.ndarray:
        """True at the first row of each partition."""
        return self.begin == np.arange(self.rows)

    @property
    def last(self) -> np.ndarray:
        """True at the last row of each partition."""
        return self.end == np.arange(self.rows)


_SUM, _MIN, _MAX = 0, 1, 2


@njit(cache=True)
def _step(acc, x, op):
    """``acc`` with ``x`` added in: their sum, min or max (``op``)."""
    if op == 0:
        return acc + x
    if op == 1:
        return x if x < acc else acc
    return x if x > acc else acc


@njit(cache=True)
def _running(v, first, op):
    """Segmented scan: at each row, the sum, min or max (``op``) of its partition's values
    up to it (``first`` marks each partition's first row)."""
    out = np.empty_like(v)
    acc = v[0]
    for i in range(len(v)):
        acc = v[i] if first[i] else _step(acc, v[i], op)
        out[i] = acc
    return out


@njit(cache=True)
def _sliding(v, lo, hi, op):
    """Each row's sum, min or max (``op``) over ``v[lo:hi + 1]`` (its first value where the
    frame is empty, left for the caller to mask)."""
    out = np.empty_like(v)
    for i in range(len(v)):
        a, b = lo[i], hi[i]
        if a > b:
            out[i] = v[0]
            continue
        acc = v[a]
        for j in range(a + 1, b + 1):
            acc = _step(acc, v[j], op)
        out[i] = acc
    return out


def _scan(v: np.ndarray, fr: Frames, op: int) -> np.ndarray:
    """``op`` over each row's frame, for any reach (values of empty frames unspecified)."""
    if fr.rows == 0:
        return v
    lo, hi = np.clip(fr.lo, 0, fr.rows - 1), np.clip(fr.hi, 0, fr.rows - 1)
    if fr.reach is Reach.WHOLE:
        starts = np.flatnonzero(fr.first)
        ufunc = (np.add, np.minimum, np.maximum)[op]
        per = ufunc.reduceat(v, starts)
        return per[np.cumsum(fr.first) - 1]
    if fr.reach is Reach.FROM_START:
        return _running(v, fr.first, op)[hi]
    if fr.reach is Reach.TO_END:
        rev = _running(np.ascontiguousarray(v[::-1]), np.ascontiguousarray(fr.last[::-1]), op)
        return rev[::-1][lo]
    return _sliding(v, lo, hi, op)


def _prefix_sums(v: np.ndarray, fr: Frames) -> np.ndarray:
    """Each frame's sum of ``v`` (exact integers: int64 or Python ints) as a difference of
    prefix sums."""
    p = np.concatenate([np.zeros(1, v.dtype), np.cumsum(v)])
    lo, hi = np.clip(fr.lo, 0, fr.rows), np.clip(fr.hi, -1, fr.rows - 1)
    return np.where(fr.empty, 0, p[hi + 1] - p[lo])


def _counts(mask: np.ndarray, fr: Frames) -> np.ndarray:
    """How many rows of each frame ``mask`` holds (0 for an empty frame)."""
    return _prefix_sums(mask.astype(np.int64), fr)


def frame_aggregate(name: str, a: pa.Array | None, fr: Frames) -> pa.Array:
    """Aggregate ``name`` (sqlglot's class name: Count, Sum, Avg, Min, Max) of ``a`` (in
    partition order; None for ``COUNT(*)``) over each row's frame."""
    if a is None:
        return pa.array(np.where(fr.empty, 0, fr.hi - fr.lo + 1), pa.int64())
    valid = pc.is_valid(a).to_numpy(zero_copy_only=False)
    cnt = _counts(valid, fr)
    if name == "Count":
        return pa.array(cnt, pa.int64())
    t = a.type
    if name in ("Sum", "Avg"):
        if not (pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)):
            raise PlanError(f"{name.upper()}() OVER needs numbers, got a {t} value")
        if pa.types.is_floating(t):
            vv = a.cast(pa.float64()).fill_null(0.0).to_numpy(zero_copy_only=False)
            tot = _scan(vv, fr, _SUM)
            if name == "Sum":
                return pa.array(tot, pa.float64(), mask=cnt == 0)
            with np.errstate(all="ignore"):
                return pa.array(tot / np.maximum(cnt, 1), pa.float64(), mask=cnt == 0)
        scale = t.scale if pa.types.is_decimal(t) else 0
        tot = _prefix_sums(_unscaled(a, scale), fr)
        if name == "Sum":
            return _exact_sums(tot, cnt, scale)
        return _exact_avgs(tot, cnt, scale)
    if name in ("Min", "Max"):
        return _extreme(a, valid, cnt, fr, _MIN if name == "Min" else _MAX)
    raise PlanError(f"window function {name.upper()}() is not supported")


def _unscaled(a: pa.Array, scale: int) -> np.ndarray:
    """An integer or DECIMAL array's unscaled integers (NULLs as 0): int64 where every
    prefix sum fits, else Python ints. (``storage.decimals.unscaled`` reads a decimal's
    words the same way; the plan layer does not import storage.)"""
    vv = None
    if pa.types.is_decimal128(a.type):
        words = np.frombuffer(a.buffers()[1], np.int64).reshape(-1, 2)[a.offset:a.offset + len(a)]
        valid = pc.is_valid(a).to_numpy(zero_copy_only=False)
        low, high = np.where(valid, words[:, 0], 0), np.where(valid, words[:, 1], 0)
        if np.array_equal(high, low >> 63):  # every value fits in 64 bits
            vv = low
    elif not pa.types.is_decimal(a.type):
        try:
            vv = a.cast(pa.int64()).fill_null(0).to_numpy(zero_copy_only=False)
        except pa.ArrowInvalid:  # a UBIGINT past int64
            vv = None
    if vv is not None and float(np.abs(vv.astype(np.float64)).sum()) < 2.0 ** 62:
        return vv.astype(np.int64)
    from bamql.plan.expr import unscaled_int

    return np.array([0 if x is None else unscaled_int(x, scale) if scale else int(x)
                     for x in a.to_pylist()], dtype=object)


def _exact_sums(tot: np.ndarray, cnt: np.ndarray, scale: int) -> pa.Array:
    """Each frame's exact sum of unscaled integers as DuckDB's SUM of an integer or a
    DECIMAL(p, ``scale``) gives it: a DECIMAL(38, scale) (HUGEINT), NULL where the frame has
    no value; a sum past 38 digits is DuckDB's overflow error."""
    t = pa.decimal128(38, scale)
    if tot.dtype == np.int64:  # two's complement in 16 bytes: the low word and its sign
        words = np.empty((len(tot), 2), np.int64)
        words[:, 0], words[:, 1] = tot, tot >> 63
        mask = pa.array(cnt == 0)
        data = pa.Array.from_buffers(t, len(tot), [None, pa.py_buffer(words.tobytes())])
        return pc.if_else(mask, pa.scalar(None, t), data)
    if any(c and abs(int(x)) >= 10**38 for x, c in zip(tot, cnt, strict=True)):
        raise OutOfRangeError("Overflow in SUM of DECIMAL: the result does not fit in "
                              "DECIMAL(38)")
    return pa.array([None if c == 0 else Decimal(f"{int(x)}E-{scale}")
                     for x, c in zip(tot, cnt, strict=True)], t)


def _exact_avgs(tot: np.ndarray, cnt: np.ndarray, scale: int) -> pa.Array:
    """Each frame's average: the nearest double to its exact sum (of unscaled integers),
    divided by its count; NULL where the frame has no value."""
    if tot.dtype == np.int64 and float(np.abs(tot).max(initial=0)) < 2.0 ** 53:
        with np.errstate(all="ignore"):  # exact doubles: one rounding each, as below
            avg = tot.astype(np.float64) / 10.0 ** scale / np.maximum(cnt, 1)
        return pa.array(avg, pa.float64(), mask=cnt == 0)
    with np.errstate(all="ignore"):
        avg = [None if c == 0 else float(Fraction(int(x), 10**scale)) / int(c)
               for x, c in zip(tot, cnt, strict=True)]
    return pa.array(avg, pa.float64())


def _extreme(a: pa.Array, valid: np.ndarray, cnt: np.ndarray, fr: Frames, op: int) -> pa.Array:
    """MIN or MAX (``op``) of each frame: doubles and integers as numbers (NaN above every
    number), any other type through its values' dense ranks."""
    t = a.type
    big = op == _MIN
    if pa.types.is_floating(t):
        v = a.cast(pa.float64()).to_numpy(zero_copy_only=False)
        nan = np.isnan(v) & valid
        filled = np.where(valid & ~nan, v, np.inf if big else -np.inf)
        got = _scan(filled, fr, op)
        if big:  # only NaNs in the frame: NaN is its minimum
            got = np.where(_counts(valid & ~nan, fr) == 0, np.nan, got)
        else:  # a NaN in the frame is its maximum
            got = np.where(_counts(nan, fr) > 0, np.nan, got)
        return pa.array(got, pa.float64(), mask=cnt == 0).cast(t)
    if pa.types.is_integer(t) and not pa.types.is_uint64(t):
        info = np.iinfo(np.int64)
        v = a.cast(pa.int64()).fill_null(info.max if big else info.min).to_numpy(zero_copy_only=False)
        return pa.array(_scan(v, fr, op), pa.int64(), mask=cnt == 0).cast(t)
    rank = pc.rank(a, sort_keys="ascending", tiebreaker="dense")
    codes = rank.to_numpy(zero_copy_only=False).astype(np.int64)
    codes = np.where(valid, codes, np.iinfo(np.int64).max if big else 0)
    got = _scan(codes, fr, op)
    rep = np.zeros(int(codes[valid].max(initial=0)) + 1, np.int64)
    rep[codes[valid]] = np.flatnonzero(valid)  # a row holding each rank
    at = rep[np.where(cnt == 0, 0, got)]
    return pc.if_else(pa.array(cnt == 0), pa.scalar(None, t), a.take(pa.array(at)))
