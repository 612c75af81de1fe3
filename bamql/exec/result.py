"""Query results: the select list over finished groups, HAVING, ORDER BY, LIMIT -> Arrow.

The ``Result`` a query returns, and its text, are ``exec.resultset``'s (a client of a
server imports them without the engine); they are named here too.
"""

from __future__ import annotations

from decimal import Decimal
from functools import singledispatch

import numpy as np
import pyarrow as pa

from bamql.errors import OutOfRangeError
from bamql.exec.resultset import Result, _cell, format_table  # noqa: F401 (named here too)
from bamql.fused import ir
from bamql.fused.evaluate import evaluate
from bamql.intmath import fits_int64
from bamql.kernels.accumulate import Grouped
from bamql.sql.valuetypes import case_results, date_valued
from bamql.storage.arrownp import from_numpy
from bamql.storage.format import ColumnMeta


def _dictionary_of(e: ir.Expr, q: ir.Query, cols: dict[str, ColumnMeta]) -> tuple[str, ...]:
    src = q.keys[e.index] if isinstance(e, ir.KeyRef) else q.aggs[e.index].arg
    return cols[src.name].dictionary or ()


def is_boolean(e: ir.Expr, q: ir.Query | None, cols) -> bool:
    """Whether output ``e`` is a BOOLEAN column held as 0/1 (``ColumnMeta.sql_type``): the
    column itself, a group key that is one, or its MIN or MAX."""
    from bamql.storage.sqltypes import BOOLEAN

    if isinstance(e, ir.KeyRef) and q is not None:
        e = q.keys[e.index]
    elif isinstance(e, ir.AggRef) and q is not None:
        a = q.aggs[e.index]
        e = a.arg if a.func in ("min", "max") else None
    return (isinstance(e, ir.Col) and e.kind == "int" and cols is not None
            and e.name in cols and cols[e.name].sql_type == BOOLEAN)


def time_zone(e: ir.Expr, q: ir.Query | None, cols) -> str | None:
    """The time zone of timestamp output ``e`` (``storage.sqltypes.TIME_ZONE``) where it is
    a TIMESTAMP WITH TIME ZONE, as DuckDB types it: a column of that type, or what is
    computed of one as a timestamp (a group key, MIN/MAX, ``date_trunc``, ``+ INTERVAL``,
    CASE, COALESCE); None for a naive timestamp."""
    from bamql.storage.sqltypes import TIME_ZONE, TIMESTAMPTZ

    todo = [e]
    while todo and cols is not None:
        x = todo.pop()
        if isinstance(x, ir.KeyRef) and q is not None:
            x = q.keys[x.index]
        elif isinstance(x, ir.AggRef) and q is not None:
            x = q.aggs[x.index]
        if isinstance(x, ir.Col) and x.name in cols and cols[x.name].sql_type == TIMESTAMPTZ:
            return TIME_ZONE
        todo.extend(c for c in x.children() if c.kind == "timestamp")
    return None


def is_date(e: ir.Expr, q: ir.Query | None, cols) -> bool:
    """Whether timestamp output ``e`` is a DATE (``storage.sqltypes.DATE``, its midnight's
    microseconds), as DuckDB types it (``sql.valuetypes.date_valued``): a group key or
    an aggregate of the query read as what it refers to."""
    return cols is not None and _is_date(e, q, cols)


@singledispatch
def _is_date(e: ir.Expr, q: ir.Query | None, cols) -> bool:
    return date_valued(e, cols)


@_is_date.register
def _(e: ir.KeyRef, q: ir.Query | None, cols) -> bool:
    return is_date(q.keys[e.index], q, cols) if q is not None else date_valued(e, cols)


@_is_date.register
def _(e: ir.AggRef, q: ir.Query | None, cols) -> bool:
    return date_valued(q.aggs[e.index], cols) if q is not None else date_valued(e, cols)


@_is_date.register
def _(e: ir.Case, q: ir.Query | None, cols) -> bool:  # over group keys and aggregates
    values = [v for v in case_results(e) if v.kind != "null"]
    return bool(values) and all(is_date(v, q, cols) for v in values)


def exact_value(e: ir.Expr) -> ir.Expr:
    """What an output expression is computed as: a DECIMAL (``ir.Dec``) as its integers, which
    ``arrow_column`` turns into the decimals exactly; anything else as itself."""
    return e.left if isinstance(e, ir.Dec) else e


def decimal_column(v: np.ndarray, ok: np.ndarray, e: ir.Dec) -> pa.Array:
    """The integers ``v`` of DECIMAL ``e`` (int64, or Python ints of a 128-bit SUM) as
    Arrow's ``decimal128`` of its precision (or more, where a value needs it) and scale."""
    from bamql.storage.decimals import decimal_array

    if v.dtype != object:
        x = np.where(ok, v, 0).astype(np.int64)
        top = int(np.abs(x).max()) if len(x) else 0
        p = min(38, max(e.precision, e.scale + 1, len(str(top))))
        return decimal_array(x, None if ok.all() else ~ok, p, e.scale)
    vals = [int(x) if o else None for x, o in zip(v, ok, strict=True)]
    top = max((abs(x) for x in vals if x is not None), default=0)
    if top >= 10**38:
        raise OutOfRangeError("Out of Range Error: a DECIMAL result does not fit DECIMAL(38) "
                              f"(column {e.source!r})")
    p = min(38, max(e.precision, e.scale + 1, len(str(top))))
    # from the digits' text: Decimal's scaleb rounds to its context's 28 digits
    return pa.array([None if x is None else Decimal(f"{x}E-{e.scale}") for x in vals],
                    type=pa.decimal128(p, e.scale))


def arrow_column(v: np.ndarray, ok: np.ndarray, e: ir.Expr, q: ir.Query, cols) -> pa.Array:
    """An output column as Arrow: values ``v`` valid where ``ok``, typed by the expression
    ``e`` (floats as DOUBLE, integers, timestamps, dictionary codes as strings; a DECIMAL's
    integers, ``exact_value``, as its decimals)."""
    mask = ~ok
    if isinstance(e, ir.Dec):
        return decimal_column(np.asarray(v), np.asarray(ok, bool), e)
    if e.kind == "float":
        return from_numpy(v.astype(np.float64), ok, pa.float64())
    if e.kind == "int" and is_boolean(e, q, cols):  # a BOOLEAN held as 0/1
        return from_numpy(np.where(ok, v, 0).astype(np.int64) != 0, ok, pa.bool_())
    if e.kind == "int" and v.dtype == object:  # exact integers: a SUM, arithmetic over one
        return _exact_ints(v, ok)
    if e.kind == "int":
        return from_numpy(v.astype(np.int64), ok, pa.int64())
    if e.kind == "bool":
        return from_numpy(v.astype(bool), ok, pa.bool_())
    if e.kind == "timestamp" and is_date(e, q, cols):  # midnights: the days, as date32
        from bamql.storage.sqltypes import DAY_US

        days = np.where(ok, v, 0).astype(np.int64) // DAY_US
        return from_numpy(days.astype(np.int32), ok, pa.date32())
    if e.kind == "timestamp":
        return from_numpy(v.astype(np.int64), ok, pa.timestamp("us", tz=time_zone(e, q, cols)))
    if e.kind == "string" and isinstance(e, ir.KeyRef | ir.AggRef):
        d = _dictionary_of(e, q, cols)
        codes = np.where(ok, v, 0).astype(np.int64)
        return pa.array([d[c] if o else None for c, o in zip(codes, ok, strict=True)], pa.string())
    if e.kind == "string":  # a constant string in the select list
        return pa.array([str(x) if o else None for x, o in zip(v, ok, strict=True)], pa.string())
    return pa.array(v, mask=mask)


def _exact_ints(v: np.ndarray, ok: np.ndarray) -> pa.Array:
    """Python integers as int64 when they all fit, else as decimal128(38, 0), which is what
    DuckDB's 128-bit HUGEINT (its SUM of BIGINTs) is in Arrow; beyond 38 digits, an error."""
    vals = [int(x) if o else None for x, o in zip(v, ok, strict=True)]
    if all(x is None or fits_int64(x) for x in vals):
        return pa.array(vals, type=pa.int64())
    if any(x is not None and abs(x) >= 10**38 for x in vals):
        raise OutOfRangeError("Out of Range Error: an integer result does not fit HUGEINT "
                              "(38 digits)")
    return pa.array([None if x is None else Decimal(x) for x in vals], type=pa.decimal128(38, 0))


def assemble(g: Grouped, q: ir.Query, cols: dict[str, ColumnMeta]) -> pa.Table:
    """Evaluate the select list, HAVING, ORDER BY and LIMIT over the groups."""
    env = {("key", i): k for i, k in enumerate(g.keys)}
    env.update({("agg", j): a for j, a in enumerate(g.aggs)})
    n = g.n
    outs = [evaluate(exact_value(e), env, n) for e in q.exprs]
    keep = np.arange(n)
    if q.having is not None:
        hv, hok = evaluate(q.having, env, n)
        keep = keep[hv.astype(bool) & hok]
    if q.order:
        sort_keys = []  # NULLs last in either direction unless NULLS FIRST, as in DuckDB
        for idx, desc, nulls_first in q.order:
            v, ok = outs[idx][0][keep], outs[idx][1][keep]
            e = q.exprs[idx]
            if e.kind == "string" and isinstance(e, ir.KeyRef | ir.AggRef):
                d = _dictionary_of(e, q, cols)
                v = np.array([d[int(x)] if o else "" for x, o in zip(v, ok, strict=True)], dtype=object)
            inv = np.unique(v, return_inverse=True)[1].reshape(-1) if len(v) else v
            sort_keys += [(ok if nulls_first else ~ok).astype(np.int8), -inv if desc else inv]
        keep = keep[np.lexsort(sort_keys[::-1])] if len(keep) else keep
    keep = keep[q.offset:]
    if q.limit is not None:
        keep = keep[: q.limit]
    shown = len(q.exprs) - q.hidden  # ORDER BY terms beyond the select list are not output
    arrays = [arrow_column(v[keep], ok[keep], e, q, cols)
              for (v, ok), e in zip(outs[:shown], q.exprs[:shown], strict=True)]
    names = unique_names(list(q.names[:shown]))
    return pa.Table.from_arrays(arrays, names=names)


def unique_names(names: list[str]) -> list[str]:
    """Output column names made unique: a repeated ``x`` becomes ``x_1``, ``x_2``, ..."""
    seen: dict[str, int] = {}
    out = []
    for n in names:
        if n in seen:
            seen[n] += 1
            out.append(f"{n}_{seen[n]}")
        else:
            seen[n] = 0
            out.append(n)
    return out

