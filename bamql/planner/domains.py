"""Group-key domains: the dense slot range of every GROUP BY key the fused kernel takes.

The kernel keeps dense accumulators indexed by the keys' slots: a key whose values are
integers in ``[base, base + size)`` puts value ``v`` in slot ``v - base`` and NULL in slot
``size`` (``codegen.ExprCompiler.group_slot``). A key qualifies when its range follows from
the table's metadata: an integer or dictionary-string column, a calendar field (the year's
range from the timestamp column's), and integer-valued expressions of those and of decimal
floats — ``ROUND``/``FLOOR``/``CEIL``/``CAST AS INTEGER`` of a scaled-integer column (which
holds no NaN or infinity), ``+``/``-`` of two such keys, ``*`` by a constant, ``ABS``.
Every other key (a plain float, a timestamp, a condition) has no dense range: the
hash-aggregation step takes it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from bamql.planner import ir
from bamql.storage.format import ColumnMeta

#: The range of an expression that is NULL on every row (an all-NULL column's).
_NO_VALUES = (0, 0)


def _year(us: int) -> int:
    """The UTC year of a timestamp in microseconds."""
    return int(np.datetime64(int(us), "us").astype("datetime64[Y]").astype(np.int64)) + 1970


def value_range(e: ir.Expr, cols: Mapping[str, ColumnMeta]) -> tuple[int, int] | None:
    """``(lo, hi)``: integers that bound every non-NULL value of ``e``, each value an
    integer; None where no such bound follows from the metadata (or a value may be NaN)."""
    if isinstance(e, ir.Col):
        c = cols.get(e.name)
        if c is None:
            return None
        if c.kind == "string":
            return 0, max(len(c.dictionary or ()), 1) - 1
        if c.kind != "int":
            return None
        return _NO_VALUES if c.min is None else (int(c.min), int(c.max))
    if isinstance(e, ir.Lit):
        return (e.value, e.value) if e.kind == "int" and isinstance(e.value, int) else None
    if isinstance(e, ir.Extract):
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
    if isinstance(e, ir.Math):
        if e.func == ir.MathFunc.ABS:
            r = value_range(e.arg, cols) if e.arg.kind == "int" else None
            if r is None:
                return None
            lo, hi = r
            return (0 if lo <= 0 <= hi else min(abs(lo), abs(hi))), max(abs(lo), abs(hi))
        if e.digits:
            return None
        return _integral_bounds(e.arg, cols)
    if isinstance(e, ir.Cast) and e.to != ir.CastTo.DOUBLE:
        return _integral_bounds(e.arg, cols)
    if isinstance(e, ir.Arith) and e.kind == "int" and e.op in ("+", "-", "*"):
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
    return None


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


def key_domain(k: ir.Expr, cols: Mapping[str, ColumnMeta]) -> tuple[int, int] | None:
    """``(base, size)`` of a group key: value ``v`` maps to slot ``v - base``, NULL to slot
    ``size``; None where the key has no dense range (module text)."""
    r = value_range(k, cols)
    if r is None:
        return None
    if isinstance(k, ir.Col) and cols[k.name].kind == "string":
        return 0, r[1] + 1
    if isinstance(k, ir.Extract) and ir.EXTRACT_PARTS[k.part] is not None:
        return 0, ir.EXTRACT_PARTS[k.part]
    if r is _NO_VALUES:
        return 0, 1
    return r[0], r[1] - r[0] + 1


def slots(keys, cols: Mapping[str, ColumnMeta]) -> int | None:
    """The kernel's accumulator slots for ``keys`` (None where a key has no dense range)."""
    total = 1
    for k in keys:
        d = key_domain(k, cols)
        if d is None:
            return None
        total *= d[1] + 1
    return total
