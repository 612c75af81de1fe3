"""SQL expressions over Arrow columns, with DuckDB's semantics: the evaluator of the
operators that run above a fused kernel (``plan.operators``).

An expression is a sqlglot node; a relation is a :class:`Rel` (an Arrow table and the
qualified name of each column). Values are Arrow arrays, or scalars that broadcast.
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
from bamql.likes import like_matcher
from bamql.plan.types import CAST_TYPES

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


# -- arithmetic --------------------------------------------------------------------------
def _days(v: Value) -> Value:
    """A date's days since 1970 as int64."""
    return v.cast(pa.int32()).cast(pa.int64())


def _date_days(op: str, a: Value, b: Value, e: exp.Binary) -> Value | None:
    """DuckDB's day arithmetic of DATEs: ``date - date`` is the BIGINT days between them,
    ``date ± integer`` and ``integer + date`` the DATE that many days on; None for anything
    else (a DATE beside an INTERVAL or a TIMESTAMP is the TIMESTAMP of its midnight)."""
    da, db = pa.types.is_date(a.type), pa.types.is_date(b.type)
    if op == "subtract" and da and db:
        return pc.subtract_checked(_days(a), _days(b))
    if op in ("add", "subtract") and da and pa.types.is_integer(b.type):
        _day_count(op, b, e.expression, "DATE", _sql_int(b.type))
        out = getattr(pc, f"{op}_checked")(_days(a), b.cast(pa.int64()))
    elif op == "add" and db and pa.types.is_integer(a.type):
        _day_count(op, a, e.this, _sql_int(a.type), "DATE")
        out = pc.add_checked(a.cast(pa.int64()), _days(b))
    else:
        return None
    return out.cast(pa.int32()).cast(pa.date32())


def _null_arith(op: str, a: Value, b: Value, e: exp.Binary) -> Value:
    """NULL beside ``a`` or ``b`` in arithmetic: NULL of DuckDB's type. Beside a DATE or a
    TIMESTAMP it is that (``d + NULL``, ``NULL + d`` and ``d - NULL`` a DATE, ``NULL - d``
    the BIGINT days, ``NULL - ts`` an INTERVAL), or no function at all (``NULL * d``);
    beside anything else a DOUBLE, as before."""
    other = b if _is_null_type(a) else a
    if _is_null_type(other) or not _temporal(other.type):
        return pa.scalar(None, pa.float64())
    if op not in ("add", "subtract"):
        _check_numbers(other, other, e)  # refused as DuckDB refuses it, in one line
    if op == "subtract" and other is b:  # NULL - date: days; NULL - timestamp: an interval
        return pa.scalar(None, pa.int64() if pa.types.is_date(b.type) else pa.duration("us"))
    return pa.scalar(None, other.type)


#: The integers DuckDB adds to or takes from a DATE: those it casts to INTEGER implicitly
#: (a BIGINT, UINTEGER or UBIGINT is a binder error: ``+(DATE, BIGINT)``)
_DAY_INTS = (pa.int8(), pa.int16(), pa.int32(), pa.uint8(), pa.uint16())
_INT_NAMES = {pa.int64(): "BIGINT", pa.uint32(): "UINTEGER", pa.uint64(): "UBIGINT"}


def _sql_int(t: pa.DataType) -> str:
    return _INT_NAMES.get(t, str(t).upper())


def _int_literal(e: exp.Expression) -> bool:
    """Whether ``e`` is an integer constant DuckDB types INTEGER (``1``, ``-5``, ``(7)``)."""
    while isinstance(e, exp.Paren):
        e = e.this
    neg = isinstance(e, exp.Neg)
    lit = e.this if neg else e
    if not (isinstance(lit, exp.Literal) and not lit.is_string and lit.this.isdigit()):
        return False
    v = -int(lit.this) if neg else int(lit.this)
    return -(1 << 31) <= v < (1 << 31)


def _day_count(op: str, n: Value, node: exp.Expression, left: str, right: str) -> None:
    """Refuse, as DuckDB's binder does, a day count beside a DATE that is no INTEGER."""
    if n.type in _DAY_INTS or _int_literal(node):
        return
    sign = "+" if op == "add" else "-"
    raise PlanError(f"No function matches {sign}({left}, {right}): DuckDB adds to a DATE only "
                    "an INTEGER number of days; CAST it AS INTEGER")


def _arith(op: str):
    def fn(ev: Evaluator, e: exp.Binary) -> Value:
        a, b = ev.eval(e.left), ev.eval(e.right)
        if _is_null_type(a) or _is_null_type(b):
            return _null_arith(op, a, b, e)
        days = _date_days(op, a, b, e)
        if days is not None:
            return days
        if op in ("add", "subtract") and (pa.types.is_duration(b.type) or pa.types.is_duration(a.type)
                                          or (_temporal(a.type) and _temporal(b.type))):
            if pa.types.is_date(a.type):
                a = a.cast(pa.timestamp("us"))
            if pa.types.is_date(b.type):
                b = b.cast(pa.timestamp("us"))
            if pa.types.is_timestamp(a.type) and pa.types.is_timestamp(b.type):
                a, b = _coerce(a, b)
            return getattr(pc, op)(a, b)
        _check_numbers(a, b, e)
        a = exact_literal(e.left, b) or a
        b = exact_literal(e.right, a) or b
        if op == "multiply" and _exact_number(a.type) and _exact_number(b.type) and \
                (pa.types.is_decimal(a.type) or pa.types.is_decimal(b.type)):
            return _decimal_product(a, b, e)
        a, b = _coerce(a, b)
        if op == "divide":  # a DOUBLE, as DuckDB divides DECIMALs too
            return pc.divide(as_double(a), as_double(b))
        if pa.types.is_integer(a.type):
            try:
                return getattr(pc, op + "_checked")(a, b)
            except pa.ArrowInvalid:
                from bamql.errors import OutOfRangeError

                raise OutOfRangeError(f"integer overflow in {e.sql(dialect='duckdb')[:80]}") from None
        if op in ("add", "subtract") and pa.types.is_decimal(a.type) \
                and pa.types.is_decimal(b.type):
            return _decimal_sum(op, a, b, e)
        return getattr(pc, op)(a, b)
    return fn


#: DuckDB's DECIMAL width of each integer type (a BIGINT is DECIMAL(19, 0))
_INT_WIDTH = {8: 3, 16: 5, 32: 10, 64: 19}


def _exact_number(t: pa.DataType) -> bool:
    return pa.types.is_integer(t) or pa.types.is_decimal(t)


def _as_decimal(v: Value) -> Value:
    """An integer value as the DECIMAL DuckDB multiplies it as (INTEGER: DECIMAL(10, 0))."""
    t = v.type
    if pa.types.is_decimal(t):
        return v
    return v.cast(pa.decimal128(_INT_WIDTH[t.bit_width] + pa.types.is_unsigned_integer(t), 0))


def _decimal_product(a: Value, b: Value, e) -> Value:
    """``a * b`` of a DECIMAL and a DECIMAL or an integer, exactly, typed as DuckDB types it:
    DECIMAL(p1 + p2, s1 + s2), its width cut to 18 where both fit 18 digits (and the scale
    is below 18) and to 38 beyond; a product past that width is DuckDB's overflow error."""
    a, b = _as_decimal(a), _as_decimal(b)
    ta, tb = a.type, b.type
    scale, width = ta.scale + tb.scale, ta.precision + tb.precision
    if scale > 38:
        raise PlanError(f"{e.sql(dialect='duckdb')[:80]}: a product of {scale} decimals is "
                        "beyond DECIMAL(38); CAST a factor to DOUBLE or to fewer decimals")
    if width > 18 and max(ta.precision, tb.precision) <= 18 and scale < 18:
        width = 18
    out = pa.decimal128(min(width, 38), scale)
    if ta.precision + tb.precision + 1 <= 76:  # Arrow's own exact product in 256 bits
        r = pc.multiply(a.cast(pa.decimal256(ta.precision, ta.scale)),
                        b.cast(pa.decimal256(tb.precision, tb.scale)))
    else:  # two factors of 38 digits: Python's integers, exactly
        r = _python_product(a, b, scale)
    try:
        return r.cast(out)
    except pa.ArrowInvalid:
        from bamql.errors import OutOfRangeError

        raise OutOfRangeError(f"Overflow in multiplication of DECIMAL({out.precision}) in "
                              f"{e.sql(dialect='duckdb')[:80]}") from None


def _python_product(a: Value, b: Value, scale: int) -> Value:
    """``a * b`` of two DECIMALs through Python's exact integers, as a decimal256(76, scale)
    (a product past 76 digits is an overflow at any width DuckDB has)."""
    from decimal import Decimal

    def ints(v: Value) -> tuple[list, bool]:
        s = v.type.scale
        if isinstance(v, pa.Scalar):
            x = v.as_py()
            return [None if x is None else unscaled_int(x, s)], True
        return [None if x is None else unscaled_int(x, s) for x in v.to_pylist()], False

    (xa, sa), (xb, sb) = ints(a), ints(b)
    n = max(len(xa), len(xb))
    xa, xb = xa * n if sa else xa, xb * n if sb else xb
    limit = 10**76
    prods = [None if x is None or y is None else x * y for x, y in zip(xa, xb, strict=True)]
    if any(p is not None and abs(p) >= limit for p in prods):
        from bamql.errors import OutOfRangeError

        raise OutOfRangeError("Overflow in multiplication of DECIMAL(38)")
    vals = [None if p is None else Decimal(f"{p}E-{scale}") for p in prods]  # exactly
    if sa and sb:
        return pa.scalar(vals[0], pa.decimal256(76, scale))
    return pa.array(vals, pa.decimal256(76, scale))


def unscaled_int(x, scale: int) -> int:
    """Decimal ``x`` (of at most ``scale`` decimals) times ``10**scale``, exactly (Decimal's
    own arithmetic rounds to its context's 28 digits)."""
    sign, digits, exp = x.as_tuple()
    n = int("".join(map(str, digits)) or "0") * 10 ** (exp + scale)
    return -n if sign else n


def _decimal_sum(op: str, a: Value, b: Value, e) -> Value:
    """``a + b`` or ``a - b`` of DECIMALs: Arrow's DECIMAL(max(p - s) + max(s) + 1, max(s)),
    DuckDB's too, where that has at most 38 digits; else DuckDB's DECIMAL(38, max(s)),
    computed in 256 bits, whose overflow is an error as in DuckDB."""
    ta, tb = a.type, b.type
    s = max(ta.scale, tb.scale)
    if max(ta.precision - ta.scale, tb.precision - tb.scale) + s + 1 <= 38:
        return getattr(pc, op)(a, b)
    r = getattr(pc, op)(a.cast(pa.decimal256(ta.precision, ta.scale)),
                        b.cast(pa.decimal256(tb.precision, tb.scale)))
    try:
        return r.cast(pa.decimal128(38, s))
    except pa.ArrowInvalid:
        from bamql.errors import OutOfRangeError

        raise OutOfRangeError(f"DECIMAL overflow in {e.sql(dialect='duckdb')[:80]}: a value "
                              "of more than 38 digits") from None


def is_number_type(t: pa.DataType) -> bool:
    """Whether ``t`` is a SQL number: an integer, a float or a DECIMAL."""
    return pa.types.is_integer(t) or pa.types.is_floating(t) or pa.types.is_decimal(t)


def _check_numbers(a: Value, b: Value, e) -> None:
    for v in (a, b):
        t = v.type
        if not is_number_type(t):
            raise PlanError(f"arithmetic needs numbers, got a {_tname(t)} value in "
                            f"{e.sql(dialect='duckdb')[:80]}")


_HANDLERS[exp.Add] = _arith("add")
_HANDLERS[exp.Sub] = _arith("subtract")
_HANDLERS[exp.Mul] = _arith("multiply")
_HANDLERS[exp.Div] = _arith("divide")


def _hugeint_like(t: pa.DataType) -> bool:
    """Whether values of type ``t`` may be DuckDB's HUGEINT: bamql returns a HUGEINT (a CSV's
    integers beyond BIGINT, a SUM past BIGINT) as ``decimal128(38, 0)``, as DuckDB's Arrow
    does, which is also a DECIMAL(38,0)'s type."""
    return pa.types.is_decimal(t) and t.precision == 38 and t.scale == 0


@handles(exp.IntDiv)
def _intdiv(ev: Evaluator, e) -> Value:
    a, b = ev.eval(e.left), ev.eval(e.right)
    if _hugeint_like(a.type) or _hugeint_like(b.type):
        # DuckDB divides a HUGEINT as an integer (truncated) and a DECIMAL(38,0) as a DOUBLE;
        # their values come here alike, so neither answer can be told right
        raise PlanError(f"{e.sql(dialect='duckdb')[:80]}: // of a 38-digit integer (a HUGEINT, "
                        "such as a CSV's integers beyond BIGINT, or a DECIMAL(38,0)) is not "
                        "supported; CAST it to DOUBLE to divide it, or to BIGINT")
    a, b = _coerce(a, b)
    _check_numbers(a, b, e)
    if pa.types.is_integer(a.type):
        n = ev.rel.rows
        x, y = broadcast(a, n), broadcast(b, n)
        ok = pc.and_(pc.is_valid(x), pc.and_(pc.is_valid(y), pc.not_equal(y, 0).fill_null(False)))
        xv = x.fill_null(0).to_numpy(zero_copy_only=False)
        yv = y.fill_null(1).to_numpy(zero_copy_only=False).copy()
        yv[yv == 0] = 1
        okv = ok.to_numpy(zero_copy_only=False)
        if np.any(okv & (xv == np.iinfo(np.int64).min) & (yv == -1)):
            from bamql.errors import OutOfRangeError

            raise OutOfRangeError(f"Overflow in division: {e.sql(dialect='duckdb')[:80]}")
        with np.errstate(over="ignore"):
            q = xv // yv  # floored; truncated toward zero, as DuckDB, where the signs differ
            q = q + ((xv % yv != 0) & ((xv < 0) != (yv < 0)))
        return pa.array(q, pa.int64(), mask=~okv)
    # DuckDB: // of doubles divides
    return pc.divide(a.cast(pa.float64(), safe=False), b.cast(pa.float64(), safe=False))


@handles(exp.Mod)
def _mod(ev: Evaluator, e) -> Value:
    a, b = ev.eval(e.left), ev.eval(e.right)
    a = exact_literal(e.left, b) or a  # a DECIMAL beside a decimal constant: exactly
    b = exact_literal(e.right, a) or b
    n = ev.rel.rows
    if _exact_number(a.type) and _exact_number(b.type) and \
            (pa.types.is_decimal(a.type) or pa.types.is_decimal(b.type)):
        r = _decimal_mod(a, b, n)
        if r is not None:
            return r
        a, b = as_double(a), as_double(b)  # past DECIMAL(38): DuckDB's DOUBLE
    a, b = _coerce(a, b)
    _check_numbers(a, b, e)
    if pa.types.is_decimal(a.type):  # beside a NULL
        return _decimal_mod(a, b, n)
    x, y = broadcast(a, n), broadcast(b, n)
    fl = pa.types.is_floating(x.type)
    ok = pc.and_(pc.is_valid(x), pc.is_valid(y)).to_numpy(zero_copy_only=False)
    xv = x.fill_null(0).to_numpy(zero_copy_only=False)
    yv = y.fill_null(1).to_numpy(zero_copy_only=False)
    if not fl:
        ok = ok & (yv != 0)
        yv = np.where(yv == 0, 1, yv)
    with np.errstate(all="ignore"):
        r = np.fmod(xv, yv)
    return pa.array(r, x.type if not fl else pa.float64(), mask=~ok)


def _decimal_mod(a: Value, b: Value, n: int) -> pa.Array | None:
    """``a % b`` of a DECIMAL and a DECIMAL or an integer as DuckDB computes it: both in
    their common type DECIMAL(max integer digits + max scale, max scale), the remainder
    truncated (the sign of ``a``), exactly on unscaled Python integers; NULL where ``b`` is
    0. None where the common type is past 38 digits (DuckDB's DOUBLE then)."""
    from decimal import Decimal

    a, b = _as_decimal(a), _as_decimal(b)
    ta, tb = a.type, b.type
    s = max(ta.scale, tb.scale)
    width = max(ta.precision - ta.scale, tb.precision - tb.scale) + s
    if width > 38:
        return None

    def ints(v: Value) -> list:
        up = 10 ** (s - v.type.scale)
        return [None if x is None else unscaled_int(x, v.type.scale) * up
                for x in broadcast(v, n).to_pylist()]

    out = []
    for x, y in zip(ints(a), ints(b), strict=True):
        if x is None or y is None or y == 0:
            out.append(None)
        else:
            r = abs(x) % abs(y)
            out.append(Decimal(f"{-r if x < 0 else r}E-{s}"))
    return pa.array(out, pa.decimal128(max(width, 1), s))


@handles(exp.Neg)
def _neg(ev: Evaluator, e) -> Value:
    v = ev.eval(e.this)
    return pc.negate_checked(v) if pa.types.is_integer(v.type) else pc.negate(v)


# -- comparison and logic ----------------------------------------------------------------
def _cmp(op: str):
    def fn(ev: Evaluator, e: exp.Binary) -> Value:
        a, b = ev.eval(e.left), ev.eval(e.right)
        if _is_null_type(a) or _is_null_type(b):
            return pa.scalar(None, pa.bool_())
        a = exact_literal(e.left, b) or a  # a DECIMAL beside a decimal constant: exactly
        b = exact_literal(e.right, a) or b
        a, b = _coerce(a, b)
        if pa.types.is_floating(a.type):  # NaN equals NaN and is above every number (DuckDB)
            return _float_cmp(op, a, b, ev.rel.rows)
        if pa.types.is_decimal(a.type) and pa.types.is_decimal(b.type):
            a, b = _comparable_decimals(a, b)
        return getattr(pc, op)(a, b)
    return fn


def _comparable_decimals(a: Value, b: Value) -> tuple[Value, Value]:
    """DECIMALs ``a`` and ``b`` as Arrow compares them exactly: as they are where a type of
    at most 38 digits holds both, else in 256 bits (DECIMAL(38,10) beside a BIGINT)."""
    ta, tb = a.type, b.type
    s = max(ta.scale, tb.scale)
    if max(ta.precision - ta.scale, tb.precision - tb.scale) + s <= 38:
        return a, b
    return (a.cast(pa.decimal256(ta.precision, ta.scale)),
            b.cast(pa.decimal256(tb.precision, tb.scale)))


def _float_cmp(op: str, a: Value, b: Value, n: int) -> Value:
    an, bn = pc.is_nan(a), pc.is_nan(b)
    r = getattr(pc, op)(a, b)
    both, one_a, one_b = pc.and_(an, bn), pc.and_(an, pc.invert(bn)), pc.and_(bn, pc.invert(an))
    nan_result = {"equal": (True, False, False), "not_equal": (False, True, True),
                  "less": (False, False, True), "less_equal": (True, False, True),
                  "greater": (False, True, False), "greater_equal": (True, True, False)}[op]
    for mask, val in zip((both, one_a, one_b), nan_result, strict=True):
        r = pc.if_else(mask, pa.scalar(val), r)
    return r


_HANDLERS[exp.EQ] = _cmp("equal")
_HANDLERS[exp.NEQ] = _cmp("not_equal")
_HANDLERS[exp.GT] = _cmp("greater")
_HANDLERS[exp.GTE] = _cmp("greater_equal")
_HANDLERS[exp.LT] = _cmp("less")
_HANDLERS[exp.LTE] = _cmp("less_equal")


def truth(v: Value) -> Value:
    """A number as the condition DuckDB casts it to: true where it is not zero (NaN is
    true, -0.0 false), NULL where it is NULL."""
    return pc.not_equal(v, pa.scalar(0).cast(v.type))


def _bool_arg(v: Value, e) -> Value:
    if pa.types.is_null(v.type):
        return pa.scalar(None, pa.bool_()) if isinstance(v, pa.Scalar) else v.cast(pa.bool_())
    if is_number_type(v.type):
        return truth(v)
    if not pa.types.is_boolean(v.type):
        raise PlanError(f"AND, OR and NOT take conditions, not a {_tname(v.type)}: "
                        f"{e.sql(dialect='duckdb')[:80]}")
    return v


@handles(exp.And)
def _and(ev: Evaluator, e) -> Value:
    return pc.and_kleene(_bool_arg(ev.eval(e.left), e), _bool_arg(ev.eval(e.right), e))


@handles(exp.Or)
def _or(ev: Evaluator, e) -> Value:
    return pc.or_kleene(_bool_arg(ev.eval(e.left), e), _bool_arg(ev.eval(e.right), e))


@handles(exp.Not)
def _not(ev: Evaluator, e) -> Value:
    return pc.invert(_bool_arg(ev.eval(e.this), e))


@handles(exp.Is)
def _is(ev: Evaluator, e: exp.Is) -> Value:
    if isinstance(e.expression, exp.Boolean):  # IS TRUE / IS FALSE: NULL is neither
        v = _bool_arg(ev.eval(e.this), e)
        if not e.expression.this:
            v = pc.invert(v)
        if isinstance(v, pa.Scalar):
            return pa.scalar(bool(v.is_valid and v.as_py()))
        return pc.fill_null(v, False)
    if not isinstance(e.expression, exp.Null):
        raise PlanError("IS takes NULL (IS NULL, IS NOT NULL), TRUE or FALSE: "
                        f"{e.sql(dialect='duckdb')[:80]}")
    v = ev.eval(e.this)
    if isinstance(v, pa.Scalar):
        return pa.scalar(not v.is_valid)
    return pc.is_null(v)


@handles(exp.Between)
def _between(ev: Evaluator, e: exp.Between) -> Value:
    lo = exp.GTE(this=e.this, expression=e.args["low"])
    hi = exp.LTE(this=e.this, expression=e.args["high"])
    return _and(ev, exp.And(this=lo, expression=hi))


@handles(exp.In)
def _in(ev: Evaluator, e: exp.In) -> Value:
    if e.args.get("query") is not None or e.args.get("unnest") is not None:
        return ev.subquery(e, ev)
    if not e.expressions:
        raise PlanError("IN needs a list of values or a subquery")
    v = ev.eval(e.this)
    items = [ev.eval(x) for x in e.expressions]
    # x IN (a, b) as an OR of equalities: where an item is a column; for a DECIMAL x, whose
    # decimal constants compare exactly (``exact_literal``; as one list they were DOUBLEs);
    # for an integer x among constants not all integers (as one list of DOUBLEs, x =
    # -9223372036854775807 was IN (-9223372036854775808, 2.5): both round to -2**63)
    mixed = pa.types.is_integer(v.type) and not all(
        pa.types.is_integer(x.type) or pa.types.is_null(x.type) for x in items)
    if any(isinstance(x, pa.Array) for x in items) or pa.types.is_decimal(v.type) or mixed:
        out = None
        for x in e.expressions:
            t = _cmp("equal")(ev, exp.EQ(this=e.this, expression=x))
            out = t if out is None else pc.or_kleene(out, t)
        return out
    return in_values(v, [x for x in items], ev.rel.rows)


def in_values(v: Value, items: list[pa.Scalar], n: int) -> Value:
    """``v IN (items)``: the items as one array of their common type, then ``in_array``."""
    typed = _common(items)
    t = next((x.type for x in typed if not pa.types.is_null(x.type)), pa.null())
    return in_array(v, pa.array([x.as_py() for x in typed], t), n)


def in_array(v: Value, values: pa.Array, n_rows: int) -> Value:
    """``v IN (values)``, three-valued: NULL where ``v`` is NULL, or no value matches and
    one is NULL; false for no values at all."""
    if len(values) == 0:  # IN of no rows is false, for a NULL too; its types must still agree
        _coerce(v, values)  # (DuckDB refuses a string IN an empty list of integers)
        return pa.scalar(False) if isinstance(v, pa.Scalar) else pa.array(np.zeros(n_rows, bool))
    has_null = values.null_count > 0
    vals = values.drop_null()
    if pa.types.is_null(v.type):
        return pa.scalar(None, pa.bool_())
    if len(vals):
        vt, st = _coerce(v, vals)
        hit = pc.is_in(canonical(vt), value_set=pc.unique(canonical(st)))
    else:
        hit = pa.scalar(False) if isinstance(v, pa.Scalar) else pa.array(np.zeros(n_rows, bool))
    hit = pc.if_else(pc.is_valid(v), hit, pa.scalar(None, pa.bool_()))
    if has_null:
        hit = pc.if_else(hit, True, pa.scalar(None, pa.bool_()))
    return hit


def _like(ev: Evaluator, e, ignore_case: bool) -> Value:
    if isinstance(e.expression, exp.Any | exp.All):
        raise PlanError("LIKE ANY / LIKE ALL is not supported")
    if e.args.get("escape"):
        raise PlanError("LIKE ... ESCAPE is not supported here")
    s, p = ev.eval(e.this), ev.eval(e.expression)
    if not isinstance(p, pa.Scalar) and pa.types.is_string(p.type):
        return _like_rows(_str(s, "LIKE"), p, ignore_case)
    if not isinstance(p, pa.Scalar) or not (p.is_valid and pa.types.is_string(p.type)):
        if isinstance(p, pa.Scalar) and not p.is_valid:
            return pa.scalar(None, pa.bool_())
        raise PlanError("the pattern of LIKE must be a string")
    if not (pa.types.is_string(s.type) or pa.types.is_large_string(s.type)):
        raise PlanError(f"LIKE needs a string, got a {_tname(s.type)} value")
    pat = p.as_py()
    if "\\" in pat:
        pat = pat.replace("\\", "\\\\")
    return pc.match_like(s, pat, ignore_case=ignore_case)


def _negated(e, v: Value) -> Value:
    """``v``, the value of ``e``, negated where ``e`` is a NOT LIKE (NULL stays NULL)."""
    return pc.invert(v) if e.args.get("negate") else v


def _like_rows(s: Value, p: pa.Array, ignore_case: bool) -> pa.Array:
    """``s LIKE p`` row by row, where each row has its own pattern."""
    texts = broadcast(s, len(p)).to_pylist()
    tests: dict[str, Callable[[str], bool]] = {}
    out = []
    for x, pat in zip(texts, p.to_pylist(), strict=True):
        if x is None or pat is None:
            out.append(None)
            continue
        if pat not in tests:
            tests[pat] = like_matcher(pat, None, ignore_case)
        out.append(tests[pat](x))
    return pa.array(out, pa.bool_())


@handles(exp.Like)
def _like_h(ev, e):
    return _negated(e, _like(ev, e, False))


@handles(exp.ILike)
def _ilike_h(ev, e):
    return _negated(e, _like(ev, e, True))


# -- conditionals ------------------------------------------------------------------------
def _common(vals: list[Value]) -> list[Value]:
    """Values of one type, as CASE, COALESCE and IN lists make them (``_coerce``'s rules)."""
    typed = [v for v in vals if not pa.types.is_null(v.type)]
    if not typed:
        return vals
    target = typed[0].type
    for v in typed[1:]:
        if v.type != target:
            target = _coerce(pa.scalar(None, target), v)[0].type
    out = []
    for v in vals:
        if v.type != target:
            v = pa.scalar(None, target) if pa.types.is_null(v.type) and isinstance(v, pa.Scalar) \
                else v.cast(target, safe=not pa.types.is_floating(target))
        out.append(v)
    return out


@handles(exp.Case)
def _case(ev: Evaluator, e: exp.Case) -> Value:
    n = ev.rel.rows
    subject = e.this
    conds, vals = [], []
    for branch in e.args.get("ifs") or []:
        c = branch.this if subject is None else exp.EQ(this=subject, expression=branch.this)
        cv = ev.eval(c)
        conds.append(broadcast(cv, n).cast(pa.bool_()).fill_null(False))
        vals.append(ev.eval(branch.args["true"]))
    default = e.args.get("default")
    vals.append(ev.eval(default) if default is not None else pa.scalar(None))
    vals = [broadcast(v, n) for v in _common(vals)]
    out = vals[-1]
    for c, v in reversed(list(zip(conds, vals[:-1], strict=True))):
        out = pc.if_else(c, v, out)
    return out


@handles(exp.If)
def _if(ev: Evaluator, e: exp.If) -> Value:
    n = ev.rel.rows
    c = broadcast(ev.eval(e.this), n).cast(pa.bool_()).fill_null(False)
    t = ev.eval(e.args["true"])
    f = ev.eval(e.args["false"]) if e.args.get("false") is not None else pa.scalar(None)
    t, f = _common([t, f])
    return pc.if_else(c, broadcast(t, n), broadcast(f, n))


@handles(exp.Coalesce)
def _coalesce(ev: Evaluator, e) -> Value:
    vals = _common([ev.eval(x) for x in [e.this, *e.expressions]])
    return pc.coalesce(*vals)


@handles(exp.Nullif)
def _nullif(ev: Evaluator, e) -> Value:
    a = ev.eval(e.this)
    eq = broadcast(_cmp("equal")(ev, exp.EQ(this=e.this, expression=e.expression)), ev.rel.rows)
    a = broadcast(a, ev.rel.rows)
    return pc.if_else(eq.fill_null(False), pa.scalar(None, a.type), a)


@handles(exp.Greatest, exp.Least)
def _greatest(ev: Evaluator, e) -> Value:
    vals = _common([ev.eval(x) for x in [e.this, *e.expressions]])
    big = isinstance(e, exp.Greatest)
    if any(isinstance(v, pa.Array) for v in vals):
        vals = [broadcast(v, ev.rel.rows) for v in vals]
    else:
        vals = [pa.array([v.as_py()], v.type) for v in vals]
        one = _greatest_of(vals, big)
        return one[0]
    return _greatest_of(vals, big)


def _greatest_of(vals: list[pa.Array], big: bool) -> pa.Array:
    fn = pc.max_element_wise if big else pc.min_element_wise
    out = fn(*vals, skip_nulls=True)
    if pa.types.is_floating(out.type):  # NaN is above every number (DuckDB)
        nans = [pc.is_nan(v).fill_null(False) for v in vals]
        if big:
            hit = nans[0]
            for x in nans[1:]:
                hit = pc.or_(hit, x)
        else:
            hit = nans[0]
            for v, x in zip(vals[1:], nans[1:], strict=True):
                hit = pc.and_(hit, pc.or_(x, pc.is_null(v)))
        out = pc.if_else(hit, pa.scalar(float("nan"), out.type), out)
    return out


# -- casts -------------------------------------------------------------------------------
@handles(exp.Cast, exp.TryCast)
def _cast(ev: Evaluator, e: exp.Cast) -> Value:
    v = ev.eval(e.this)
    to = e.to
    name = to.this.name
    const = decimal_constant(e.this)  # a decimal constant is a DECIMAL: it casts exactly
    if const is not None:
        v = const
    if name == "DECIMAL":
        ps = [int(x.this.this) if isinstance(x.this, exp.Literal) else int(x.name)
              for x in to.expressions] if to.expressions else [18, 3]
        p, s = (ps + [0])[:2] if len(ps) == 1 else ps
        target = pa.decimal128(p, s)
        if pa.types.is_floating(v.type):
            v = pc.round(v, s, round_mode="half_towards_infinity")
        elif pa.types.is_decimal(v.type):
            return _decimal_cast(v, target, e)
        return _do_cast(v, target, e)
    target = CAST_TYPES.get(name)
    if target is None:
        raise PlanError(f"CAST to {to.sql(dialect='duckdb')} is not supported")
    if pa.types.is_integer(target) and pa.types.is_decimal(v.type):
        return _decimal_cast(v, target, e)
    if pa.types.is_integer(target) and pa.types.is_floating(v.type):
        v = pc.round(v, round_mode="half_to_even")  # a DOUBLE rounds to even, as DuckDB
    if pa.types.is_string(target):
        return _as_text(v)
    if pa.types.is_date(target) and pa.types.is_string(v.type) and isinstance(v, pa.Scalar):
        return _parse_time(v, target) if v.is_valid else pa.scalar(None, target)
    if pa.types.is_timestamp(target) and pa.types.is_string(v.type) and isinstance(v, pa.Scalar):
        return _parse_time(v, target) if v.is_valid else pa.scalar(None, target)
    if pa.types.is_date(target) and pa.types.is_timestamp(v.type):
        return pc.floor_temporal(v, unit="day").cast(pa.date32())
    return _do_cast(v, target, e)


def _decimal_cast(v: Value, target: pa.DataType, e) -> Value:
    """A DECIMAL cast to an integer or to a DECIMAL as DuckDB casts it: rounded half away
    from zero on the decimal itself (in 256 bits, with room for the digit rounding may
    add), then a checked cast; a value out of the target's range is DuckDB's Conversion
    Error (TRY_CAST: NULL)."""
    t = v.type
    scale = target.scale if pa.types.is_decimal(target) else 0
    if scale < t.scale:
        v = pc.round(v.cast(pa.decimal256(min(t.precision + 1, 76), t.scale)), scale,
                     round_mode="half_towards_infinity")
    try:
        return v.cast(target)
    except pa.ArrowInvalid:
        pass
    if isinstance(e, exp.TryCast):  # each value that fits, NULL for the rest
        vals = [v] if isinstance(v, pa.Scalar) else v
        out = []
        for x in vals:
            try:
                out.append(x.cast(target).as_py())
            except pa.ArrowInvalid:
                out.append(None)
        return pa.scalar(out[0], target) if isinstance(v, pa.Scalar) else pa.array(out, target)
    from bamql.errors import OutOfRangeError

    if pa.types.is_decimal(target):
        raise OutOfRangeError(f"Conversion Error: a value can't be cast to DECIMAL("
                              f"{target.precision},{target.scale}): it is out of range, in "
                              f"{e.sql(dialect='duckdb')[:80]}") from None
    raise OutOfRangeError("Conversion Error: a value can't be cast because it is out of "
                          f"range for the destination type {str(target).upper()}, in "
                          f"{e.sql(dialect='duckdb')[:80]}") from None


def _do_cast(v: Value, target: pa.DataType, e) -> Value:
    try:
        return v.cast(target)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        raise PlanError(f"cannot CAST {_tname(v.type)} to {_tname(target)}: "
                        f"{e.sql(dialect='duckdb')[:80]}") from None


# -- numbers -----------------------------------------------------------------------------
@handles(exp.Abs)
def _abs(ev, e):
    v = ev.eval(e.this)
    return pc.abs_checked(v) if pa.types.is_integer(v.type) else pc.abs(v)


@handles(exp.Round)
def _round(ev, e):
    v = ev.eval(e.this)
    d = e.args.get("decimals")
    nd = const_int(ev, d, "number of digits of ROUND") if d is not None else 0
    const = decimal_constant(e.this)  # a decimal constant is a DECIMAL: it rounds exactly
    if const is not None:
        v = const
    if pa.types.is_integer(v.type):
        return v if nd >= 0 else pc.round(v.cast(pa.float64()), nd,
                                          round_mode="half_towards_infinity").cast(v.type)
    if pa.types.is_decimal(v.type):  # DuckDB's type: DECIMAL(p, min(s, max(nd, 0)))
        t = pa.decimal128(v.type.precision, min(v.type.scale, max(nd, 0)))
        return pc.round(_widened(v), nd, round_mode="half_towards_infinity").cast(t)
    return round_double(v, nd)


def round_double(v: Value, nd: int) -> Value:
    """ROUND of a DOUBLE as DuckDB computes it: the value scaled by a power of ten, rounded
    half away from zero, scaled back (so 0.015 is 0.01: its double is below the half)."""
    v = v.cast(pa.float64())
    m = 10.0 ** abs(nd)
    if nd >= 0:
        y = pc.multiply(v, m)
        r = pc.divide(pc.round(y, 0, round_mode="half_towards_infinity"), m)
        r = pc.if_else(pc.is_finite(r), r, v)
        tie = pc.equal(pc.subtract(y, pc.floor(y)), 0.5)
        if isinstance(r, pa.Array) and pc.any(tie).as_py():
            # the scaled double is a tie: the exact value decides (0.015 is below the half)
            r = _exact_ties(v, r, tie, nd)
        elif isinstance(r, pa.Scalar) and tie.as_py():
            r = _exact_ties(pa.array([v.as_py()]), pa.array([r.as_py()]), pa.array([True]), nd)[0]
        return r
    r = pc.multiply(pc.round(pc.divide(v, m), 0, round_mode="half_towards_infinity"), m)
    return pc.if_else(pc.is_finite(r), r, pa.scalar(0.0))


def _exact_ties(v: pa.Array, r: pa.Array, tie: pa.Array, nd: int) -> pa.Array:
    from decimal import ROUND_HALF_UP, Decimal

    out = r.to_numpy(zero_copy_only=False).copy()
    xs = v.to_numpy(zero_copy_only=False)
    q = Decimal(1).scaleb(-nd)
    for i in np.flatnonzero(tie.fill_null(False).to_numpy(zero_copy_only=False)):
        out[i] = float(Decimal(float(xs[i])).quantize(q, rounding=ROUND_HALF_UP))
    return pa.array(out, pa.float64(), mask=pc.is_null(v).to_numpy(zero_copy_only=False))


def canonical(a: Value) -> Value:
    """A key column with -0.0 as 0.0 and every NaN as one NaN (equal in SQL: one group, one
    join key, one set member)."""
    if pa.types.is_floating(a.type):
        a = pc.if_else(pc.equal(a, 0).fill_null(False), pa.scalar(0.0, a.type), a)
        return pc.if_else(pc.is_nan(a).fill_null(False), pa.scalar(float("nan"), a.type), a)
    return a


def _widened(v: Value) -> Value:
    """A DECIMAL with room for one more digit (Arrow's rounding would overflow silently)."""
    if pa.types.is_decimal(v.type):
        return v.cast(pa.decimal128(38, v.type.scale))
    return v


@handles(exp.Floor)
def _floor(ev, e):
    v = ev.eval(e.this)
    return v if pa.types.is_integer(v.type) else _whole(pc.floor(_widened(v)), v.type)


def _whole(r: Value, t: pa.DataType) -> Value:
    """FLOOR's or CEIL's value ``r`` of a DECIMAL(p, s) as DuckDB types it: DECIMAL(p, 0)."""
    return r.cast(pa.decimal128(t.precision, 0)) if pa.types.is_decimal(t) else r


@handles(exp.Ceil)
def _ceil(ev, e):
    v = ev.eval(e.this)
    return v if pa.types.is_integer(v.type) else _whole(pc.ceil(_widened(v)), v.type)


def _float_fn(fn):
    def h(ev, e):
        return fn(ev.eval(e.this).cast(pa.float64(), safe=False))
    return h


_HANDLERS[exp.Sqrt] = _float_fn(pc.sqrt)
_HANDLERS[exp.Ln] = _float_fn(pc.ln)
_HANDLERS[exp.Exp] = _float_fn(pc.exp)


@handles(exp.Pow)
def _pow(ev, e):
    return pc.power(ev.eval(e.this).cast(pa.float64(), safe=False),
                    ev.eval(e.expression).cast(pa.float64(), safe=False))


@handles(exp.Sign)
def _sign(ev, e):
    v = ev.eval(e.this)
    out = pc.sign(v)
    if pa.types.is_floating(v.type):  # sign(NaN) is 0 (DuckDB)
        out = pc.if_else(pc.is_nan(v).fill_null(False), pa.scalar(0.0, out.type), out)
    return out


# -- strings -----------------------------------------------------------------------------
def const_int(ev: Evaluator, e: exp.Expression, what: str) -> int:
    """An integer argument that must be a constant (a position, a length, digits)."""
    v = ev.eval(e)
    if not isinstance(v, pa.Scalar) or not (pa.types.is_integer(v.type) or pa.types.is_floating(v.type)):
        raise PlanError(f"the {what} must be an integer constant")
    if not v.is_valid:
        raise PlanError(f"the {what} must not be NULL")
    return int(v.as_py())


def _str(v: Value, what: str) -> Value:
    if pa.types.is_null(v.type):
        return pa.scalar(None, pa.string()) if isinstance(v, pa.Scalar) else v.cast(pa.string())
    if not (pa.types.is_string(v.type) or pa.types.is_large_string(v.type)):
        raise PlanError(f"{what} needs a string, got a {_tname(v.type)} value")
    return v


@handles(exp.Upper)
def _upper(ev, e):
    return pc.utf8_upper(_str(ev.eval(e.this), "upper()"))


@handles(exp.Lower)
def _lower(ev, e):
    return pc.utf8_lower(_str(ev.eval(e.this), "lower()"))


@handles(exp.Length)
def _length(ev, e):
    return pc.utf8_length(_str(ev.eval(e.this), "length()")).cast(pa.int64())


@handles(exp.Substring)
def _substr(ev, e):
    s = _str(ev.eval(e.this), "substr()")
    start = const_int(ev, e.args["start"], "start of substr")
    ln = e.args.get("length")
    begin = start - 1 if start > 0 else (start if start < 0 else 0)
    if ln is None:
        return pc.utf8_slice_codeunits(s, begin)
    n = const_int(ev, ln, "length of substr")
    if n < 0:
        raise PlanError("substr with a negative length is not supported")
    if start == 0:
        n -= 1
    stop = begin + max(n, 0)
    if begin < 0 and stop >= 0:
        return pc.utf8_slice_codeunits(s, begin)
    return pc.utf8_slice_codeunits(s, begin, stop)


@handles(exp.Left)
def _left(ev, e):
    n = const_int(ev, e.expression, "length of left()")
    s = _str(ev.eval(e.this), "left()")
    return pc.utf8_slice_codeunits(s, 0, n) if n >= 0 else pc.utf8_slice_codeunits(s, 0, n)


@handles(exp.Right)
def _right(ev, e):
    n = const_int(ev, e.expression, "length of right()")
    s = _str(ev.eval(e.this), "right()")
    if n > 0:
        return pc.utf8_slice_codeunits(s, -n)
    return pc.utf8_slice_codeunits(s, -n) if n < 0 else pc.utf8_slice_codeunits(s, 0, 0)


def _as_text(v: Value) -> Value:
    if pa.types.is_string(v.type) or pa.types.is_large_string(v.type):
        return v
    if pa.types.is_null(v.type):
        return pa.scalar(None, pa.string()) if isinstance(v, pa.Scalar) else v.cast(pa.string())
    if pa.types.is_timestamp(v.type):
        return ts_text(v)
    if pa.types.is_floating(v.type):  # 7.0, -0.0, 1e+17, as DuckDB writes a DOUBLE
        if isinstance(v, pa.Scalar):
            return pa.scalar(None if not v.is_valid else repr(float(v.as_py())), pa.string())
        return pa.array([None if x is None else repr(float(x)) for x in v.to_pylist()], pa.string())
    if pa.types.is_boolean(v.type):
        return pc.if_else(v, "true", "false")
    return v.cast(pa.string())


def ts_text(v: Value) -> Value:
    """Timestamps as DuckDB writes them: seconds, then a fraction only where it is not 0;
    a TIMESTAMP WITH TIME ZONE then its offset (``+00``, ``-05:30``)."""
    def one(x) -> str | None:
        if x is None:
            return None
        s = x.strftime("%Y-%m-%d %H:%M:%S")
        s += f".{x.microsecond:06d}".rstrip("0") if x.microsecond else ""
        if x.tzinfo is not None:
            mins = int(x.utcoffset().total_seconds() // 60)
            h, m = divmod(abs(mins), 60)
            s += f"{'-' if mins < 0 else '+'}{h:02d}" + (f":{m:02d}" if m else "")
        return s
    v = v.cast(pa.timestamp("us", v.type.tz))
    if isinstance(v, pa.Scalar):
        return pa.scalar(one(v.as_py()), pa.string())
    return pa.array([one(x) for x in v.to_pylist()], pa.string())


@handles(exp.DPipe)
def _dpipe(ev, e):
    return pc.binary_join_element_wise(_as_text(ev.eval(e.left)), _as_text(ev.eval(e.right)), "")


@handles(exp.Concat)
def _concat(ev, e):
    n = ev.rel.rows
    vals = [broadcast(_as_text(ev.eval(x)), n).fill_null("") for x in e.expressions]
    return pc.binary_join_element_wise(*vals, "")  # concat reads NULL as '' (DuckDB)


@handles(exp.Trim)
def _trim(ev, e):
    s = _str(ev.eval(e.this), "trim()")
    chars = e.args.get("expression")
    pos = (e.args.get("position") or "BOTH").upper()
    if chars is not None:
        c = ev.eval(chars).as_py()
        fn = {"LEADING": pc.utf8_ltrim, "TRAILING": pc.utf8_rtrim}.get(pos, pc.utf8_trim)
        return fn(s, characters=c)
    fn = {"LEADING": pc.utf8_ltrim_whitespace, "TRAILING": pc.utf8_rtrim_whitespace}.get(
        pos, pc.utf8_trim_whitespace)
    return fn(s)


@handles(exp.RegexpLike)
def _regexp_matches(ev, e):
    pat = ev.eval(e.expression).as_py()
    return pc.match_substring_regex(_str(ev.eval(e.this), "regexp_matches()"), pat)


@handles(exp.RegexpReplace)
def _regexp_replace(ev, e):
    s = _str(ev.eval(e.this), "regexp_replace()")
    pat = ev.eval(e.expression).as_py()
    rep = ev.eval(e.args["replacement"]).as_py()
    mods = e.args.get("modifiers")
    flags = ev.eval(mods).as_py() if mods is not None else ""
    rep = rep.replace("\\", "\\\\") if "\\" in rep and not any(
        f"\\{d}" in rep for d in "0123456789") else rep
    return pc.replace_substring_regex(s, pat, rep, max_replacements=None if "g" in flags else 1)


@handles(exp.StartsWith)
def _starts(ev, e):
    s, prefix = _str(ev.eval(e.this), "starts_with()"), ev.eval(e.expression)
    if not isinstance(prefix, pa.Scalar):
        raise PlanError("starts_with() takes a string constant second argument")
    if not prefix.is_valid:  # NULL for every row
        return pa.scalar(None, pa.bool_()) if isinstance(s, pa.Scalar) else pa.nulls(len(s), pa.bool_())
    return pc.starts_with(s, _str(prefix, "starts_with()").as_py())


@handles(exp.Replace)
def _replace(ev, e):
    return pc.replace_substring(_str(ev.eval(e.this), "replace()"), ev.eval(e.expression).as_py(),
                                ev.eval(e.args["replacement"]).as_py())


@handles(exp.StrPosition)
def _strpos(ev, e):
    s = _str(ev.eval(e.this), "strpos()")
    sub = ev.eval(e.args.get("substr") or e.expression).as_py()
    if isinstance(s, pa.Scalar):
        return pa.scalar(None if not s.is_valid else s.as_py().find(sub) + 1, pa.int64())
    return pa.array([None if x is None else x.find(sub) + 1 for x in s.to_pylist()], pa.int64())


# -- dates and times ---------------------------------------------------------------------
def _ts(v: Value, what: str) -> Value:
    if pa.types.is_date(v.type):
        return v.cast(pa.timestamp("us"))
    if pa.types.is_string(v.type) and isinstance(v, pa.Scalar):
        return _parse_time(v, pa.timestamp("us"))
    if not pa.types.is_timestamp(v.type):
        raise PlanError(f"{what} needs a timestamp or a date, got a {_tname(v.type)} value")
    return v.cast(pa.timestamp("us", v.type.tz)) if v.type.unit != "us" else v


def extract(part: str, v: Value) -> Value:
    """``EXTRACT(part FROM v)`` as DuckDB answers it (BIGINT; epoch a DOUBLE)."""
    if part == "epoch":
        if pa.types.is_duration(v.type):
            return pc.divide(v.cast(pa.int64()).cast(pa.float64()), 1e6)
        us = _ts(v, "EXTRACT").cast(pa.timestamp("us")).cast(pa.int64())
        return pc.divide(us.cast(pa.float64()), 1e6)
    v = _ts(v, "EXTRACT")
    fns = {"year": pc.year, "month": pc.month, "day": pc.day, "hour": pc.hour,
           "minute": pc.minute, "second": pc.second, "quarter": pc.quarter,
           "doy": pc.day_of_year, "week": pc.iso_week, "isoyear": pc.iso_year,
           "millisecond": None, "microsecond": None}
    if part == "dow":
        return pc.day_of_week(v, count_from_zero=True, week_start=7)
    if part == "isodow":
        return pc.day_of_week(v, count_from_zero=False, week_start=1)
    if part in ("millisecond", "microsecond"):
        us = pc.add(pc.multiply(pc.second(v), 10**6), pc.add(pc.multiply(pc.millisecond(v), 1000),
                                                              pc.microsecond(v)))
        return us if part == "microsecond" else pc.divide(us, 1000)
    fn = fns.get(part)
    if fn is None:
        raise PlanError(f"EXTRACT({part.upper()}) is not supported")
    return fn(v)


@handles(exp.Extract)
def _extract(ev, e):
    return extract(unit_name(e.this), ev.eval(e.expression))


def _date_part(ev, e):
    args = e.expressions
    return extract(unit_name(ev.eval(args[0]).as_py()), ev.eval(args[1]))


#: date_trunc's units of several years, and their years
_YEARS = {"decade": 10, "century": 100, "millennium": 1000}


def _trunc(unit: str, v: Value) -> Value:
    v = _ts(v, "date_trunc()")
    if unit == "week":
        return pc.floor_temporal(v, unit="week", week_starts_monday=True)
    if unit in _YEARS:  # DuckDB: the year rounded down to a multiple of the unit's years
        out = pc.floor_temporal(v, multiple=_YEARS[unit], unit="year", calendar_based_origin=True)
        years = pc.year(out)
        first = (years if isinstance(years, pa.Scalar) else pc.min(years)).as_py()
        if first is not None and first < 1:
            raise PlanError(f"date_trunc({unit!r}) of a year before {_YEARS[unit]} is year 0 "
                            "(1 BC), which is not supported")
        return out
    if unit not in ("microsecond", "millisecond", "second", "minute", "hour", "day", "month",
                    "quarter", "year"):
        raise PlanError(f"date_trunc({unit!r}) is not supported")
    return pc.floor_temporal(v, unit=unit)


@handles(exp.TimestampTrunc, exp.DateTrunc, exp.DatetimeTrunc)
def _date_trunc(ev, e):
    # of a DATE too: the TIMESTAMP of its midnight, truncated (DuckDB's type, whatever the unit)
    return _trunc(unit_name(e.args.get("unit")), ev.eval(e.this))


@handles(exp.TimeToStr)
def _strftime(ev, e):
    fmt = ev.eval(e.args["format"]).as_py()
    if "%-" in fmt:
        raise PlanError("strftime's unpadded fields (%-d, %-m, ...) are not supported")
    v = _ts(ev.eval(e.this), "strftime()")
    if "%S" in fmt:  # Arrow writes the seconds' fraction with %S; DuckDB whole seconds
        v = pc.floor_temporal(v, unit="second").cast(pa.timestamp("s", v.type.tz))
    return pc.strftime(v, format=fmt)


@handles(exp.Dayname)
def _dayname(ev, e):
    return pc.strftime(_ts(ev.eval(e.this), "dayname()"), format="%A")


@handles(exp.DateDiff, exp.TimestampDiff, exp.DatetimeDiff)
def _date_diff(ev, e):
    unit = unit_name(e.args.get("unit") or "day")
    end, start = _ts(ev.eval(e.this), "date_diff()"), _ts(ev.eval(e.expression), "date_diff()")
    if unit in ("year", "quarter", "month"):
        months = pc.add(pc.multiply(pc.subtract(pc.year(end), pc.year(start)), 12),
                        pc.subtract(pc.month(end), pc.month(start)))
        per = {"year": None, "quarter": 3, "month": 1}[unit]
        if per is None:
            return pc.subtract(pc.year(end), pc.year(start))
        if per == 3:
            q = pc.add(pc.multiply(pc.subtract(pc.year(end), pc.year(start)), 4),
                       pc.subtract(pc.quarter(end), pc.quarter(start)))
            return q
        return months
    if unit not in _UNIT_US:
        raise PlanError(f"date_diff({unit!r}) is not supported")
    tu = "week" if unit == "week" else unit
    a = _trunc(tu, end).cast(pa.int64()) if unit != "microsecond" else end.cast(pa.int64())
    b = _trunc(tu, start).cast(pa.int64()) if unit != "microsecond" else start.cast(pa.int64())
    return pc.divide(pc.subtract(a, b), _UNIT_US[unit])


def _epoch(ev, e):
    return extract("epoch", ev.eval(e.expressions[0] if e.expressions else e.this))


def _month_name(ev, e):
    return pc.strftime(_ts(ev.eval(e.expressions[0] if e.expressions else e.this), "monthname()"),
                       format="%B")


@handles(exp.Anonymous)
def _anonymous(ev, e: exp.Anonymous):
    fn = _ANON.get(e.name.lower())
    if fn is None:
        raise PlanError(f"function {e.name}() is not supported")
    return fn(ev, e)


def _unit_fn(part: str):
    def h(ev, e):
        arg = e.expressions[0] if isinstance(e, exp.Anonymous) else e.this
        return extract(part, ev.eval(arg))
    return h


_ANON: dict[str, Callable] = {
    "date_part": _date_part, "datepart": _date_part, "epoch": _epoch, "monthname": _month_name,
    "hour": _unit_fn("hour"), "minute": _unit_fn("minute"), "second": _unit_fn("second"),
    "dayofweek": _unit_fn("dow"), "isodow": _unit_fn("isodow"),
}
for _k, _p in (("Year", "year"), ("Month", "month"), ("Day", "day"), ("DayOfWeek", "dow"),
               ("DayOfYear", "doy"), ("WeekOfYear", "week"), ("Quarter", "quarter"),
               ("DayOfMonth", "day"), ("Hour", "hour"), ("Minute", "minute"), ("Second", "second")):
    _BY_NAME[_k] = _unit_fn(_p)
_BY_NAME["MonthName"] = _month_name
_BY_NAME["Epoch"] = _epoch

