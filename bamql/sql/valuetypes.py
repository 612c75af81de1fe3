"""The SQL type of an IR expression where the IR's kind does not say it all, as DuckDB types
it: which timestamp values are DATEs, which numbers are exact DECIMALs (and of which scale),
and the IR value of a column by its storage."""

from __future__ import annotations

from collections.abc import Mapping
from functools import singledispatch

from bamql.errors import PlanError
from bamql.fused import ir
from bamql.storage.format import ColumnMeta
from bamql.storage.sqltypes import DATE, DOUBLE_EXACT, parse_decimal

#: The words that start the fused translator's refusal of a wide DECIMAL column (one of more
#: than 18 digits, ``ColumnMeta.wide``), which the plan tree answers instead.
WIDE_WORDS = "a DECIMAL of more than 18 digits"

#: Aggregates whose value is one of their argument's, of its SQL type (a DATE's is a DATE;
#: MEDIAN and ``quantile_cont`` interpolate, a TIMESTAMP in DuckDB)
VALUE_AGGS = ("min", "max", "quantile_disc")


def date_valued(e: ir.Expr, cols: Mapping[str, ColumnMeta]) -> bool:
    """Whether timestamp expression ``e`` is a DATE in SQL (``sqltypes.DATE``: its midnight's
    microseconds), as DuckDB types it: a DATE column or constant, MIN or MAX of one, or a CASE
    (COALESCE, NULLIF) whose results are all DATEs. Whatever else is computed of a DATE as a
    timestamp (``date_trunc``, ``+ INTERVAL``, a CASE that mixes in a TIMESTAMP) is the
    TIMESTAMP DuckDB promotes it to."""
    return e.kind == "timestamp" and _date_valued(e, cols)


@singledispatch
def _date_valued(e: ir.Expr, cols: Mapping[str, ColumnMeta]) -> bool:
    return False


@_date_valued.register
def _(e: ir.Lit, cols: Mapping[str, ColumnMeta]) -> bool:
    return e.date


@_date_valued.register
def _(e: ir.Col, cols: Mapping[str, ColumnMeta]) -> bool:
    return e.name in cols and cols[e.name].sql_type == DATE


@_date_valued.register
def _(e: ir.Agg, cols: Mapping[str, ColumnMeta]) -> bool:
    return e.func in VALUE_AGGS and e.arg is not None and date_valued(e.arg, cols)


@_date_valued.register
def _(e: ir.Case, cols: Mapping[str, ColumnMeta]) -> bool:
    values = [v for v in case_results(e) if v.kind != "null"]
    return bool(values) and all(date_valued(v, cols) for v in values)


def case_results(e: ir.Case) -> list[ir.Expr]:
    """The results a CASE can give: each WHEN's, then the ELSE's where it has one."""
    return [v for _, v in e.whens] + ([e.default] if e.default is not None else [])


def column_value(name: str, meta: ColumnMeta) -> ir.Expr:
    """Column ``name`` (of ``meta``) as an expression: a DECIMAL stored as its unscaled
    integers is the ``ir.Dec`` of them; any other column its ``ir.Col``."""
    col = ir.Col(name, meta.kind)
    d = parse_decimal(meta.sql_type) if meta.kind == "int" else None
    if d is None:
        return col
    if meta.wide:  # the plan tree's Arrow operators read it (``exec.tree``)
        raise PlanError(f"{WIDE_WORDS} ({name!r}, DECIMAL({d[0]},{d[1]})) is not supported "
                        "by the fused kernels")
    bound = max((abs(v) for v in (meta.min, meta.max) if isinstance(v, int)), default=0)
    return ir.dec(col, d[1], bound, name, d[0])


SQL_ARITH = {"+": "addition", "-": "subtraction", "*": "multiplication", "/": "division"}


@singledispatch
def decimal_valued(e: ir.Expr) -> bool:
    """Whether ``e`` is a DECIMAL in SQL (DuckDB keeps it exact) that is computed from one
    as a double here: a DECIMAL itself, or a FLOOR, CEIL, ROUND or CASE of one."""
    return False


@decimal_valued.register
def _(e: ir.Dec) -> bool:
    return True


@decimal_valued.register
def _(e: ir.Math) -> bool:
    return decimal_valued(e.arg)


@decimal_valued.register
def _(e: ir.Case) -> bool:
    return any(decimal_valued(v) for v in case_results(e))


def decimal_source(e: ir.Expr) -> str | None:
    """The DECIMAL column that ``e`` reads (through an ``ir.Dec``), or None."""
    for n in ir.walk(e):
        if isinstance(n, ir.Dec):
            return n.source
    return None


def inexact_decimal(e: ir.Expr | None) -> ir.Dec | None:
    """An ``ir.Dec`` in ``e`` whose double may round (its integers reach 10**15, more
    significant digits than a double holds), or None."""
    if e is None:
        return None
    for n in ir.walk(e):
        if isinstance(n, ir.Dec) and n.bound >= DOUBLE_EXACT:
            return n
    return None
