"""Arithmetic of the expression evaluator: + - * / // % and negation over integers, decimals,
floats, dates, timestamps and intervals, as DuckDB computes them.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from bamql.errors import PlanError
from bamql.plan.evaluator import (
    _HANDLERS,
    Evaluator,
    Value,
    _coerce,
    _is_null_type,
    _temporal,
    _tname,
    as_double,
    broadcast,
    exact_literal,
    handles,
    is_number_type,
)


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
