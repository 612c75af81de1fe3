"""The evaluator of SQL expressions over Arrow columns, with DuckDB's semantics: relations
(:class:`Rel`), values and their coercions, the registry of one handler per sqlglot node kind,
and the leaves (columns, literals, intervals). The handlers of the other node kinds are in
``plan.fn_*``; ``plan.expr`` registers them all.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from bamql.errors import PlanError

Value = pa.Array | pa.Scalar
ColName = tuple[str | None, str]  # (qualifier, name)


@dataclass(frozen=True, eq=False)
class Rel:
    """A relation: an Arrow table and the qualifier and name of each of its columns (the
    table's own column names are positional and never read)."""

    table: pa.Table
    cols: tuple[ColName, ...]
    _combined: dict[int, pa.Array] = field(default_factory=dict, init=False, repr=False)

    @property
    def rows(self) -> int:
        return self.table.num_rows

    def column(self, i: int) -> pa.Array:
        """Column ``i`` as one array (a table's chunks combined once, and kept)."""
        c = self.table.column(i)
        if not isinstance(c, pa.ChunkedArray):
            return c
        if c.num_chunks == 1:
            return c.chunk(0)
        got = self._combined.get(i)
        if got is None:
            got = self._combined[i] = c.combine_chunks()
        return got

    @staticmethod
    def of(arrays: list[pa.Array], cols: tuple[ColName, ...]) -> Rel:
        return Rel(pa.Table.from_arrays(arrays, names=[f"c{i}" for i in range(len(arrays))]), cols)

    def take(self, idx) -> Rel:
        return Rel(self.table.take(idx), self.cols)


def find(cols: tuple[ColName, ...], name: str, qual: str | None) -> list[int]:
    """The columns of ``cols`` a reference ``qual.name`` can mean (names without regard to
    case, as DuckDB matches them)."""
    low = name.lower()
    return [i for i, (q, n) in enumerate(cols)
            if n.lower() == low and (qual is None or (q is not None and q.lower() == qual.lower()))]


def resolve(cols: tuple[ColName, ...], c: exp.Column) -> int | None:
    """The index of the column ``c`` names in ``cols``; None where it names none; an
    ambiguous name is an error."""
    hits = find(cols, c.name, c.table or None)
    if len(hits) > 1:
        raise PlanError(f"column reference {c.sql(dialect='duckdb')!r} is ambiguous")
    return hits[0] if hits else None


def broadcast(v: Value, n: int) -> pa.Array:
    """``v`` as an array of ``n`` values."""
    if isinstance(v, pa.Array):
        return v
    if isinstance(v, pa.ChunkedArray):
        return v.combine_chunks()
    if not v.is_valid:
        return pa.nulls(n, v.type)
    return pa.repeat(v, n)


def _num(s: str) -> pa.Scalar:
    if any(ch in s for ch in ".eE"):
        return pa.scalar(float(s), pa.float64())
    v = int(s)
    if not -2**63 <= v < 2**63 and len(str(abs(v))) <= 38:  # DuckDB's HUGEINT: exactly
        from decimal import Decimal

        return pa.scalar(Decimal(v), pa.decimal128(len(str(abs(v))), 0))
    return pa.scalar(v, pa.int32() if -2**31 <= v < 2**31 else pa.int64())


def _is_null_type(v: Value) -> bool:
    return pa.types.is_null(v.type)


def _temporal(t: pa.DataType) -> bool:
    return pa.types.is_timestamp(t) or pa.types.is_date(t)


def _coerce(a: Value, b: Value) -> tuple[Value, Value]:
    """Both sides of a comparison or an arithmetic in one type, as DuckDB casts them: a
    string constant beside a timestamp or date is read as one; dates beside timestamps are
    timestamps; integers beside floats are floats."""
    ta, tb = a.type, b.type
    if ta == tb:
        return a, b
    if _is_null_type(a):
        return pa.scalar(None, tb) if isinstance(a, pa.Scalar) else a.cast(tb), b
    if _is_null_type(b):
        return a, pa.scalar(None, ta) if isinstance(b, pa.Scalar) else b.cast(ta)
    for x, y, swap in ((a, b, False), (b, a, True)):
        if _temporal(x.type) and pa.types.is_string(y.type) and isinstance(y, pa.Scalar):
            y = _parse_time(y, x.type)
            return (y, x) if swap else (x, y)
    if pa.types.is_timestamp(ta) and pa.types.is_date(tb):
        return a, b.cast(ta)
    if pa.types.is_date(ta) and pa.types.is_timestamp(tb):
        return a.cast(tb), b
    if pa.types.is_timestamp(ta) and pa.types.is_timestamp(tb):
        if ta.tz is None and tb.tz is not None:  # TIMESTAMP WITH TIME ZONE, as DuckDB
            return a.cast(tb), b
        return a, b.cast(ta)
    if (pa.types.is_integer(ta) or pa.types.is_floating(ta) or pa.types.is_decimal(ta)) and \
            (pa.types.is_integer(tb) or pa.types.is_floating(tb) or pa.types.is_decimal(tb)):
        if pa.types.is_decimal(ta) and pa.types.is_integer(tb):  # exactly, as DuckDB
            return a, b.cast(pa.decimal128(19, 0))
        if pa.types.is_integer(ta) and pa.types.is_decimal(tb):
            return a.cast(pa.decimal128(19, 0)), b
        if pa.types.is_floating(ta) or pa.types.is_floating(tb) or \
                pa.types.is_decimal(ta) != pa.types.is_decimal(tb):  # a BIGINT past 2**53 rounds
            return as_double(a), as_double(b)
        if pa.types.is_integer(ta) and pa.types.is_integer(tb):
            return a.cast(pa.int64()), b.cast(pa.int64())
        return a, b
    if pa.types.is_string(ta) and pa.types.is_large_string(tb):
        return a.cast(tb), b
    if pa.types.is_large_string(ta) and pa.types.is_string(tb):
        return a, b.cast(ta)
    if pa.types.is_boolean(ta) and pa.types.is_boolean(tb):
        return a, b
    raise PlanError(f"cannot compare or combine a {_tname(ta)} value with a {_tname(tb)} value")


def as_double(v: Value) -> Value:
    """``v`` as DOUBLE: a DECIMAL as DuckDB casts it, ``float(unscaled) / 10**scale``
    (Arrow's own cast may be an ulp off), anything else cast (a BIGINT past 2**53 rounds)."""
    if pa.types.is_decimal(v.type) and not isinstance(v, pa.Scalar):
        from bamql.exactfloat import to_float64

        arr = v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v
        return pa.array(to_float64(arr), pa.float64(), mask=pc.is_null(arr).to_numpy(
            zero_copy_only=False) if arr.null_count else None)
    if pa.types.is_decimal(v.type):
        return pa.scalar(None if not v.is_valid else float(v.as_py()), pa.float64())
    return v.cast(pa.float64(), safe=False)


def exact_literal(e: exp.Expression, other: Value) -> Value | None:
    """SQL's decimal constant ``e`` (``2.5``: a DECIMAL, exact) as an Arrow decimal scalar
    where it meets a DECIMAL ``other``; None otherwise (it is a DOUBLE beside a DOUBLE)."""
    return decimal_constant(e) if pa.types.is_decimal(other.type) else None


def decimal_constant(e: exp.Expression) -> pa.Scalar | None:
    """SQL's decimal constant ``e`` (``2.5``, ``-0.05``) as the Arrow decimal scalar DuckDB
    types it, DECIMAL(digits, decimals); None where ``e`` is none (or has more than 38
    digits, or an exponent: a DOUBLE)."""
    neg = isinstance(e, exp.Neg)
    lit = e.this if neg else e
    if not (isinstance(lit, exp.Literal)
            and not lit.is_string and "." in lit.this and "e" not in lit.this.lower()):
        return None
    digits = sum(c.isdigit() for c in lit.this)
    if digits > 38:
        return None
    from decimal import Decimal

    v = Decimal(lit.this)
    scale = max(0, -v.as_tuple().exponent)
    # copy_negate is exact; unary minus rounds to the context's 28 digits
    return pa.scalar(v.copy_negate() if neg else v, pa.decimal128(max(digits, scale, 1), scale))


def _tname(t: pa.DataType) -> str:
    from bamql.plan.types import SqlType

    try:
        return SqlType.of_arrow(t).value
    except PlanError:
        return str(t)


def _parse_time(s: pa.Scalar, to: pa.DataType) -> pa.Scalar:
    text = s.as_py()
    try:
        if pa.types.is_date(to):
            return pa.scalar(dt.date.fromisoformat(text.strip()[:10]), to)
        x = dt.datetime.fromisoformat(text.strip())
        if x.tzinfo is not None and (not pa.types.is_timestamp(to) or to.tz is None):
            x = x.replace(tzinfo=None)  # a TIMESTAMP drops the offset, as DuckDB casts it
        elif x.tzinfo is not None:
            x = x.astimezone(dt.UTC).replace(tzinfo=None)  # the instant, in UTC
        return pa.scalar(x, pa.timestamp("us")).cast(to)
    except ValueError:
        raise PlanError(f"{text!r} is not a valid {_tname(to)}") from None


_UNIT_US = {"microsecond": 1, "millisecond": 1000, "second": 10**6, "minute": 60 * 10**6,
            "hour": 3600 * 10**6, "day": 86400 * 10**6, "week": 7 * 86400 * 10**6}
_UNIT_ALIASES = {"us": "microsecond", "microseconds": "microsecond", "ms": "millisecond",
                 "milliseconds": "millisecond", "s": "second", "seconds": "second",
                 "sec": "second", "m": "minute", "minutes": "minute", "min": "minute",
                 "h": "hour", "hours": "hour", "hr": "hour", "d": "day", "days": "day",
                 "w": "week", "weeks": "week", "mon": "month", "months": "month",
                 "y": "year", "years": "year", "yr": "year", "quarters": "quarter",
                 "dayofweek": "dow", "weekday": "dow", "dayofyear": "doy",
                 "dayofmonth": "day"}


def unit_name(u) -> str:
    """A date part's canonical name (``HOUR``, ``'hours'`` -> ``hour``)."""
    name = (u.name if isinstance(u, exp.Expression) else str(u)).strip("'\"").lower()
    return _UNIT_ALIASES.get(name, name)


def is_number_type(t: pa.DataType) -> bool:
    """Whether ``t`` is a SQL number: an integer, a float or a DECIMAL."""
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def truth(v: Value) -> Value:
    """A number as the condition DuckDB casts it to: true where it is not zero (NaN is
    true, -0.0 false), NULL where it is NULL."""
    return pc.not_equal(v, pa.scalar(0).cast(v.type))


class Evaluator:
    """Evaluates expressions over one relation. ``subquery`` evaluates a subquery marker
    (``plan.build.SubRef``) to its value for each row."""

    def __init__(self, rel: Rel, subquery: Callable[[exp.Expression, Evaluator], Value] | None = None):
        self.rel = rel
        self.subquery = subquery

    def array(self, e: exp.Expression) -> pa.Array:
        """``e``'s value at every row of the relation, as an array."""
        return broadcast(self.eval(e), self.rel.rows)

    def condition(self, e: exp.Expression) -> pa.Array:
        """A WHERE condition: true rows only (NULL is not true)."""
        v = self.array(e)
        if not pa.types.is_boolean(v.type):
            if pa.types.is_null(v.type):
                return pa.array(np.zeros(len(v), bool))
            if not is_number_type(v.type):
                raise PlanError(f"a condition must be true or false, not a {_tname(v.type)}: "
                                f"{e.sql(dialect='duckdb')}")
            v = truth(v)
        return v.fill_null(False) if v.null_count else v

    def eval(self, e: exp.Expression) -> Value:
        fn = _HANDLERS.get(type(e))
        if fn is None:
            if isinstance(e, exp.Func) and type(e).__name__ in _BY_NAME:
                return _BY_NAME[type(e).__name__](self, e)
            raise PlanError(f"{_what(e)} is not supported")
        try:
            return fn(self, e)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError, pa.ArrowTypeError) as err:
            first = str(err).splitlines()[0] if str(err) else type(err).__name__
            if first.startswith("Decimal precision out of range"):  # Arrow's p1 + p2 + 1
                first = "a DECIMAL result of more than 38 digits is not supported"
            raise PlanError(f"cannot evaluate {e.sql(dialect='duckdb')[:80]}: {first}") from None


def _what(e: exp.Expression) -> str:
    if isinstance(e, exp.Anonymous):
        return f"function {e.name}()"
    if isinstance(e, exp.Func):
        return f"function {e.sql_name().lower()}()"
    return f"'{e.sql(dialect='duckdb')[:60]}'"


_HANDLERS: dict[type, Callable[[Evaluator, exp.Expression], Value]] = {}
_BY_NAME: dict[str, Callable[[Evaluator, exp.Expression], Value]] = {}


def handles(*kinds: type):
    def deco(fn):
        for k in kinds:
            _HANDLERS[k] = fn
        return fn
    return deco


# -- leaves ------------------------------------------------------------------------------
@handles(exp.Column)
def _column(ev: Evaluator, e: exp.Column) -> Value:
    if isinstance(e.this, exp.Star):
        raise PlanError("* is only allowed in the select list or COUNT(*)")
    i = resolve(ev.rel.cols, e)
    if i is None:
        names = ", ".join(dict.fromkeys(n for _, n in ev.rel.cols if not n.startswith("__")))
        shown = ".".join(p.name for p in e.parts)  # as named, without the quotes
        raise PlanError(f"unknown column {shown!r} (columns: {names})")
    return ev.rel.column(i)


@handles(exp.Literal)
def _literal(ev: Evaluator, e: exp.Literal) -> Value:
    if e.is_string:
        return pa.scalar(e.this, pa.string())
    return _num(e.this)


@handles(exp.Null)
def _null(ev: Evaluator, e) -> Value:
    return pa.scalar(None)


@handles(exp.Boolean)
def _bool(ev: Evaluator, e: exp.Boolean) -> Value:
    return pa.scalar(bool(e.this), pa.bool_())


@handles(exp.Paren)
def _paren(ev: Evaluator, e) -> Value:
    return ev.eval(e.this)


@handles(exp.Alias)
def _alias(ev: Evaluator, e) -> Value:
    return ev.eval(e.this)


@handles(exp.Interval)
def _interval(ev: Evaluator, e: exp.Interval) -> Value:
    n = e.this
    text = n.this if isinstance(n, exp.Literal) else n.sql()
    unit = unit_name(e.args.get("unit") or "second")
    parts = str(text).split()
    if len(parts) == 2 and not e.args.get("unit"):
        text, unit = parts[0], unit_name(parts[1])
    if unit not in _UNIT_US:
        raise PlanError(f"INTERVAL of {unit}s is not supported (use days, hours, minutes or "
                        "seconds)")
    try:
        us = round(float(text) * _UNIT_US[unit])
    except ValueError:
        raise PlanError(f"INTERVAL {text!r} is not a number of {unit}s") from None
    return pa.scalar(dt.timedelta(microseconds=us), pa.duration("us"))
