"""Group-key domains: the dense slot range of every GROUP BY key the fused kernel takes.

The kernel keeps dense accumulators indexed by the keys' slots: a key whose values are
integers in ``[base, base + size)`` puts value ``v`` in slot ``v - base`` and NULL in slot
``size`` (``codegen.ExprCompiler.group_slot``). A key qualifies when its range follows from
the table's metadata: an integer or dictionary-string column, a calendar field (the year's
range from the timestamp column's), and integer-valued expressions of those and of decimal
floats — ``ROUND``/``FLOOR``/``CEIL``/``CAST AS INTEGER`` of a scaled-integer column (which
holds no NaN or infinity), ``+``/``-`` of two such keys, ``*`` by a constant, ``ABS``.
A condition's slots are FALSE and TRUE; ``date_trunc`` of a timestamp column is a dense key
of its buckets (``Domain.unit``: seconds to weeks by their fixed width, months, quarters and
years by the calendar). Every other key (a plain float, a timestamp, a large range) has no
dense range: the hash-aggregation step takes it — on a GPU inside the kernel, in a hash
table of :class:`HashSlots`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from functools import singledispatch

import numpy as np

from bamql.fused import ir
from bamql.storage.format import ColumnMeta

#: The range of an expression that is NULL on every row (an all-NULL column's).
_NO_VALUES = (0, 0)
_DAY = 86_400_000_000
#: microseconds of the ``date_trunc`` units of one fixed width (a week is counted apart)
FIXED_UNITS = {ir.TruncUnit.SECOND: 1_000_000, ir.TruncUnit.MINUTE: 60_000_000,
               ir.TruncUnit.HOUR: 3_600_000_000, ir.TruncUnit.DAY: _DAY}
#: months in a bucket of the calendar ``date_trunc`` units
MONTHS = {ir.TruncUnit.MONTH: 1, ir.TruncUnit.QUARTER: 3, ir.TruncUnit.YEAR: 12}


@dataclass(frozen=True)
class Domain:
    """The dense slots of one group key: its values have indices ``base .. base + size - 1``
    (index ``i`` in slot ``i - base``), NULL takes slot ``size``.

    A key's index is its value, or with ``unit`` (a ``date_trunc`` key) the number of its
    bucket: whole units since the epoch, weeks since the Monday before it, months since
    year 0 (``bucket``; the kernels compute the same in ``codegen``)."""

    base: int
    size: int
    unit: ir.TruncUnit | None = None

    def bucket(self, us: np.ndarray) -> np.ndarray:
        """Indices of timestamps ``us`` (microseconds; truncated or not)."""
        us = np.asarray(us, np.int64)
        if self.unit in FIXED_UNITS:
            return us // FIXED_UNITS[self.unit]
        if self.unit == ir.TruncUnit.WEEK:
            return (us // _DAY + 3) // 7
        months = us.astype("datetime64[us]").astype("datetime64[M]").astype(np.int64) + 1970 * 12
        return months // MONTHS[self.unit]

    def index(self, values: np.ndarray) -> np.ndarray:
        """The indices of key values."""
        v = np.asarray(values)
        return self.bucket(v) if self.unit is not None else v.astype(np.int64)

    def value(self, index: np.ndarray) -> np.ndarray:
        """The key values of indices (a bucket's first microsecond)."""
        i = np.asarray(index, np.int64)
        if self.unit is None:
            return i
        if self.unit in FIXED_UNITS:
            return i * FIXED_UNITS[self.unit]
        if self.unit == ir.TruncUnit.WEEK:
            return (i * 7 - 3) * _DAY
        months = i * MONTHS[self.unit] - 1970 * 12
        return months.astype("datetime64[M]").astype("datetime64[us]").astype(np.int64)


def _year(us: int) -> int:
    """The UTC year of a timestamp in microseconds."""
    return int(np.datetime64(int(us), "us").astype("datetime64[Y]").astype(np.int64)) + 1970


Range = tuple[int, int] | None


@singledispatch
def value_range(e: ir.Expr, cols: Mapping[str, ColumnMeta]) -> Range:
    """``(lo, hi)``: integers that bound every non-NULL value of ``e``, each value an
    integer; None where no such bound follows from the metadata (or a value may be NaN).
    One rule per node class."""
    return None


@value_range.register
def _(e: ir.Col, cols: Mapping[str, ColumnMeta]) -> Range:
    c = cols.get(e.name)
    if c is None:
        return None
    if c.kind == "string":
        return 0, max(len(c.dictionary or ()), 1) - 1
    if c.kind != "int":
        return None
    return _NO_VALUES if c.min is None else (int(c.min), int(c.max))


@value_range.register
def _(e: ir.Lit, cols: Mapping[str, ColumnMeta]) -> Range:
    return (e.value, e.value) if e.kind == "int" and isinstance(e.value, int) else None


def _condition(e: ir.Expr, cols: Mapping[str, ColumnMeta]) -> Range:
    return (0, 1) if e.kind == "bool" else None  # FALSE, TRUE


for _kind in (ir.Cmp, ir.And, ir.Or, ir.Not, ir.IsNull, ir.InList):
    value_range.register(_kind, _condition)


@value_range.register
def _(e: ir.Extract, cols: Mapping[str, ColumnMeta]) -> Range:
    size = ir.EXTRACT_PARTS[e.part]
    if size is not None:
        return 0, size - 1
    span = _stamp_range(e.arg, cols)
    if span is None:
        return None
    if span is _NO_VALUES:
        return _NO_VALUES
    lo, hi = _year(span[0]), _year(span[1])
    return (lo - 1, hi + 1) if e.part == "isoyear" else (lo, hi)


@value_range.register
def _(e: ir.Math, cols: Mapping[str, ColumnMeta]) -> Range:
    if e.func == ir.MathFunc.ABS:
        r = value_range(e.arg, cols) if e.arg.kind == "int" else None
        if r is None:
            return None
        lo, hi = r
        return (0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), max(abs(lo), abs(hi))
    if e.digits:
        return None
    return _integral_bounds(e.arg, cols)


@value_range.register
def _(e: ir.Cast, cols: Mapping[str, ColumnMeta]) -> Range:
    return _integral_bounds(e.arg, cols) if e.to != ir.CastTo.DOUBLE else None


@value_range.register
def _(e: ir.Arith, cols: Mapping[str, ColumnMeta]) -> Range:
    if not (e.kind == "int" and e.op in ("+", "-", "*")):
        return None
    a, b = value_range(e.left, cols), value_range(e.right, cols)
    if a is None or b is None:
        return None
    if e.op == "+":
        return a[0] + b[0], a[1] + b[1]
    if e.op == "-":
        return a[0] - b[1], a[1] - b[0]
    if not (isinstance(e.left, ir.Lit) or isinstance(e.right, ir.Lit)):
        return None  # a product of two keys: its range is rarely dense
    ends = [x * y for x in a for y in b]
    return min(ends), max(ends)


def _stamp_range(e: ir.Expr, cols: Mapping[str, ColumnMeta]) -> tuple[int, int] | None:
    """The microseconds a timestamp column spans (``_NO_VALUES`` if it holds none)."""
    if not isinstance(e, ir.Col):
        return None
    c = cols.get(e.name)
    if c is None or c.kind != "timestamp":
        return None
    return _NO_VALUES if c.min is None else (int(c.min), int(c.max))


def _integral_bounds(e: ir.Expr, cols: Mapping[str, ColumnMeta]) -> tuple[int, int] | None:
    """Integer bounds of an integer made of ``e`` by rounding (ROUND, FLOOR, CEIL, a CAST):
    ``e``'s own range for an integer, one beyond a decimal column's range otherwise (a
    scaled-integer column holds no NaN or infinity; a plain float may)."""
    if e.kind == "int":
        return value_range(e, cols)
    if not isinstance(e, ir.Col):
        return None
    c = cols.get(e.name)
    if c is None or c.kind != "float" or not c.scale:
        return None
    if c.min is None:
        return _NO_VALUES
    return math.floor(float(c.min)) - 1, math.ceil(float(c.max)) + 1


def key_domain(k: ir.Expr, cols: Mapping[str, ColumnMeta]) -> Domain | None:
    """The dense slots of a group key; None where it has none (module text)."""
    if isinstance(k, ir.Trunc):
        span = _stamp_range(k.arg, cols)
        if span is None:
            return None
        d = Domain(0, 1, k.unit)
        if span is _NO_VALUES:
            return d
        lo, hi = (int(x) for x in d.bucket(np.array(span, np.int64)))
        return Domain(lo, hi - lo + 1, k.unit)
    r = value_range(k, cols)
    if r is None:
        return None
    if isinstance(k, ir.Col) and cols[k.name].kind == "string":
        return Domain(0, r[1] + 1)
    if isinstance(k, ir.Extract) and ir.EXTRACT_PARTS[k.part] is not None:
        return Domain(0, ir.EXTRACT_PARTS[k.part])
    if r is _NO_VALUES:
        return Domain(0, 1)
    return Domain(r[0], r[1] - r[0] + 1)


#: A hash table of groups' first size at most, the largest a run retries with (a GROUP BY
#: with more groups than half of it goes to the NumPy step), and how much larger a retry's is
FIRST_TABLE, LARGEST_TABLE, TABLE_GROWTH = 1 << 15, 1 << 22, 16


class TableFull(Exception):
    """A hashed GROUP BY with more groups than the largest hash table of groups takes (the
    kernels give way to the NumPy step)."""


def first_capacity(rows: int) -> int:
    """A hash table's first slots for ``rows`` candidate rows: twice as many as there can be
    groups, at most ``FIRST_TABLE``."""
    return int(min(FIRST_TABLE, 1 << max(4, (2 * max(rows, 1) - 1).bit_length())))


@dataclass(frozen=True)
class HashSlots:
    """The slots of a GROUP BY that the GPU kernel hashes (``gpu.hashgroup``): a table of
    ``capacity`` slots (a power of two) keyed by the canonical bits of the keys at
    ``hashed`` (positions among the GROUP BY's keys), two more slots for one key's NULL and
    its ``EMPTY`` bits, times the dense slots of the other keys (``dense``, their domains in
    key order): group ``dense index * (capacity + 2) + table slot``."""

    capacity: int
    hashed: tuple[int, ...]
    dense: tuple[Domain, ...] = ()

    @property
    def keys(self) -> int:
        """The hashed keys."""
        return len(self.hashed)

    @property
    def dense_slots(self) -> int:
        """The dense keys' slots together (1 without)."""
        return n_slots(self.dense)

    def dense_keys(self, gd: np.ndarray, kinds: tuple[str, ...], out: np.ndarray) -> None:
        """Fill the dense keys' columns of ``out`` (groups, 2 * keys: valid, canonical bits
        as ``exec.partials`` has them) from the groups' dense slots ``gd``; ``kinds``: every
        key's kind."""
        dense = [i for i in range(len(kinds)) if i not in self.hashed]
        for i, d, st in zip(dense, self.dense, strides(self.dense), strict=True):
            idx = (gd // st) % (d.size + 1)
            ok = idx != d.size
            v = np.where(ok, d.value(d.base + idx), 0)
            out[:, 2 * i] = ok
            out[:, 2 * i + 1] = v.astype(np.float64).view(np.int64) if kinds[i] == "float" else v


def slots(keys, cols: Mapping[str, ColumnMeta]) -> int | None:
    """The kernel's accumulator slots for ``keys`` (None where a key has no dense range)."""
    total = 1
    for k in keys:
        d = key_domain(k, cols)
        if d is None:
            return None
        total *= d.size + 1
    return total


def n_slots(domains) -> int:
    """Accumulator slots of keys with ``domains``: one per index, one for NULL, per key (a
    hash table's: its capacity)."""
    if isinstance(domains, HashSlots):
        return domains.dense_slots * (domains.capacity + 2)
    return int(np.prod([d.size + 1 for d in domains])) if domains else 1


def strides(domains) -> list[int]:
    """Each key's stride in a slot number (the first key varies slowest)."""
    out, stride = [], 1
    for d in reversed(domains):
        out.append(stride)
        stride *= d.size + 1
    return out[::-1]
