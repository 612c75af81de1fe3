"""Casts and numeric functions (ABS, ROUND, FLOOR, CEIL, POW, SIGN, ...) of the expression
evaluator.
"""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from sqlglot import exp

from bamql.errors import PlanError
from bamql.plan.evaluator import _HANDLERS, Evaluator, Value, _parse_time, _tname, decimal_constant, handles
from bamql.plan.fn_text import _as_text, const_int
from bamql.plan.types import CAST_TYPES


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
