"""A vectorized NumPy interpreter of IR expressions, with SQL three-valued logic.

Used where rows are few: selectivity estimates on the store's row sample, HAVING and the
select list over aggregate results. Kernels compile the same IR instead (kernels.codegen).
"""

from __future__ import annotations

from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal, localcontext
from functools import singledispatch

import numpy as np

from bamql.errors import OutOfRangeError
from bamql.fused import ir
from bamql.intmath import I64_MAX, I64_MIN

Vec = tuple[np.ndarray, np.ndarray]  # (values, valid)


@singledispatch
def evaluate(e: ir.Expr, env: Mapping, n: int) -> Vec:
    """Evaluate ``e`` over ``n`` rows; ``env`` maps column names, ``('key', i)`` and
    ``('agg', i)`` to ``(values, valid)`` arrays."""
    raise TypeError(f"evaluate: no rule for {type(e).__name__}")


@evaluate.register
def _(e: ir.Col, env: Mapping, n: int) -> Vec:
    return env[e.name]


@evaluate.register
def _(e: ir.KeyRef, env: Mapping, n: int) -> Vec:
    return env[("key", e.index)]


@evaluate.register
def _(e: ir.AggRef, env: Mapping, n: int) -> Vec:
    return env[("agg", e.index)]


@evaluate.register
def _(e: ir.Lit, env: Mapping, n: int) -> Vec:
    if e.value is None:
        return np.zeros(n), np.zeros(n, dtype=bool)
    return np.full(n, e.value), np.ones(n, dtype=bool)


@evaluate.register
def _(e: ir.Lookup, env: Mapping, n: int) -> Vec:
    k, ok = evaluate(e.key, env, n)
    values = np.asarray(e.values, np.float64 if e.kind == "float" else np.int64)
    valid = np.asarray(e.valid, bool)
    with np.errstate(over="ignore"):  # unsigned: a distance past int64 wraps, never raises
        at = np.asarray(k).astype(np.int64).view(np.uint64) - np.uint64(e.base % 2**64)
    inside = ok & (at < len(values))
    at = np.where(inside, at, 0).astype(np.int64)
    hit = inside & valid[at] if len(values) else np.zeros(n, bool)
    return (np.where(hit, values[at], 0) if len(values) else np.zeros(n, values.dtype)), hit


@evaluate.register
def _(e: ir.Neg, env: Mapping, n: int) -> Vec:
    v, ok = evaluate(e.arg, env, n)
    return (int_arith("-", None, v, ok) if e.kind == "int" else -v), ok


@evaluate.register(ir.Dec)  # a DECIMAL's double: its integers divided, as an Arith's
@evaluate.register(ir.Arith)
def _(e: ir.Arith, env: Mapping, n: int) -> Vec:
    a, oa = evaluate(e.left, env, n)
    b, ob = evaluate(e.right, env, n)
    if e.kind == "int" and e.op != "/":
        return int_arith(e.op, a, b, oa & ob), oa & ob
    with np.errstate(all="ignore"):
        if e.op == "+":
            v = a + b
        elif e.op == "-":
            v = a - b
        elif e.op == "*":
            v = a * b
        else:
            v = a.astype(np.float64) / b.astype(np.float64)
    return v, oa & ob


@evaluate.register
def _(e: ir.Cmp, env: Mapping, n: int) -> Vec:
    a, oa = evaluate(e.left, env, n)
    b, ob = evaluate(e.right, env, n)
    return compare(e.op, a, b), oa & ob


def _junction(e: ir.And | ir.Or, env: Mapping, n: int) -> Vec:
    v, ok = evaluate(e.args[0], env, n)
    v = v.astype(bool)
    for arg in e.args[1:]:
        b, ob = evaluate(arg, env, n)
        b = b.astype(bool)
        if isinstance(e, ir.And):
            decided = (ok & ~v) | (ob & ~b)  # a known FALSE decides an AND
            ok, v = (ok & ob) | decided, v & b & ~decided
        else:
            decided = (ok & v) | (ob & b)  # a known TRUE decides an OR
            ok, v = (ok & ob) | decided, decided | (v & b)
    return v, ok


evaluate.register(ir.And, _junction)
evaluate.register(ir.Or, _junction)


@evaluate.register
def _(e: ir.Not, env: Mapping, n: int) -> Vec:
    v, ok = evaluate(e.arg, env, n)
    return ~v.astype(bool), ok


@evaluate.register
def _(e: ir.IsNull, env: Mapping, n: int) -> Vec:
    _, ok = evaluate(e.arg, env, n)
    return (ok if e.negated else ~ok), np.ones(n, dtype=bool)


@evaluate.register
def _(e: ir.InList, env: Mapping, n: int) -> Vec:
    a, oa = evaluate(e.arg, env, n)
    vals = [x.value for x in e.values if x.value is not None]
    hit = np.isin(a, vals) if vals else np.zeros(n, dtype=bool)
    if any(x != x for x in vals):  # NaN = NaN, as in DuckDB
        hit |= _isnan(a)
    has_null = any(x.value is None for x in e.values)
    ok = oa & (hit | (not has_null))  # x IN (.., NULL) is NULL unless it hits
    return (~hit if e.negated else hit), ok


@evaluate.register
def _(e: ir.Extract, env: Mapping, n: int) -> Vec:
    v, ok = evaluate(e.arg, env, n)
    return extract_np(e.part, v.astype(np.int64)), ok


@evaluate.register
def _(e: ir.Trunc, env: Mapping, n: int) -> Vec:
    v, ok = evaluate(e.arg, env, n)
    return trunc_np(e.unit, v.astype(np.int64)), ok


@evaluate.register
def _(e: ir.Case, env: Mapping, n: int) -> Vec:
    # each branch over the rows that take it only (an overflow elsewhere raises nothing)
    dtype = {"float": np.float64, "bool": bool}.get(e.kind, np.int64)
    parts: list[tuple[np.ndarray, Vec]] = []
    rest = np.ones(n, dtype=bool)
    for cond, val in e.whens:
        c, oc = _on(cond, env, rest)
        t = np.zeros(n, dtype=bool)
        t[rest] = c.astype(bool) & oc
        rest &= ~t
        parts.append((t, _on(val, env, t)))
    if e.default is not None:
        parts.append((rest.copy(), _on(e.default, env, rest)))
    if any(vals.dtype == object for _, (vals, _) in parts):
        dtype = object  # exact integers (an integer SUM)
    out, ok = np.zeros(n, dtype=dtype), np.zeros(n, dtype=bool)
    for t, (vals, valid) in parts:
        out[t] = vals.astype(dtype) if dtype is not object else vals
        ok[t] = valid
    return out, ok


def _on(e: ir.Expr, env: Mapping, rows: np.ndarray) -> Vec:
    """``e`` evaluated over the rows where ``rows`` holds."""
    m = int(rows.sum())
    sub = {k: (v[rows], o[rows]) for k, (v, o) in env.items()}
    return evaluate(e, sub, m)


@evaluate.register
def _(e: ir.Math, env: Mapping, n: int) -> Vec:
    v, ok = evaluate(e.arg, env, n)
    if e.arg.kind != "float":
        ints = v if v.dtype == object else v.astype(np.int64)
        if e.func == ir.MathFunc.ABS:
            if ints.dtype != object and np.any((ints == I64_MIN) & ok):
                raise OutOfRangeError("Out of Range Error: Overflow on abs(-9223372036854775808)")
            with np.errstate(all="ignore"):
                return np.abs(ints), ok
        if e.func == ir.MathFunc.ROUND:
            return ints, ok
        return ints.astype(np.float64), ok  # FLOOR/CEIL of an integer: a DOUBLE
    x = v.astype(np.float64)
    with np.errstate(all="ignore"):
        if e.func == ir.MathFunc.ABS:
            return np.abs(x), ok
        if e.func == ir.MathFunc.FLOOR:
            return np.floor(x), ok
        if e.func == ir.MathFunc.CEIL:
            return np.ceil(x), ok
        if not e.digits:
            return round_half_away(x), ok
        q = Decimal(1).scaleb(-e.digits)  # the double's exact value rounded, halves away
        with localcontext(prec=100):  # from 2**52 on a double is a whole number already
            r = np.array([float(Decimal(y).quantize(q, ROUND_HALF_UP)) if abs(y) < 2.0**52
                          else y for y in x.tolist()], dtype=np.float64)
        return np.copysign(r, x), ok


def round_half_away(x: np.ndarray) -> np.ndarray:
    """C's ``round``: to the nearest whole number, halves away from zero (NumPy's rounds
    them to even), the sign of a zero kept."""
    t = np.trunc(x)
    with np.errstate(invalid="ignore"):
        d = x - t
        r = np.where(d >= 0.5, t + 1.0, np.where(d <= -0.5, t - 1.0, t))
    return np.copysign(r, x)


@evaluate.register
def _(e: ir.Cast, env: Mapping, n: int) -> Vec:
    v, ok = evaluate(e.arg, env, n)
    if e.to == ir.CastTo.DOUBLE:
        return v.astype(np.float64), ok
    if e.arg.kind == "float":
        with np.errstate(invalid="ignore"):
            r = np.rint(v.astype(np.float64))  # half to even, as DuckDB casts
        hi = 2.0**31 if e.to == ir.CastTo.INTEGER else 2.0**63
        with np.errstate(invalid="ignore"):
            bad = ~((r >= -hi) & (r < hi)) & ok
        _cast_check(bad, e.to)
        return np.where(bad | ~ok, 0.0, r).astype(np.int64), ok
    ints = v if v.dtype == object else v.astype(np.int64)
    lo, hi = (-(2**31), 2**31 - 1) if e.to == ir.CastTo.INTEGER else (I64_MIN, I64_MAX)
    _cast_check(((ints < lo) | (ints > hi)) & ok, e.to)
    return np.where(ok, ints, 0).astype(np.int64), ok


def _cast_check(bad: np.ndarray, to: ir.CastTo) -> None:
    if np.any(bad):
        raise OutOfRangeError("Conversion Error: a value can't be cast because it is out of "
                              f"range for the destination type "
                              f"{'INT32' if to == ir.CastTo.INTEGER else 'INT64'}")


def int_arith(op: str, a: np.ndarray | None, b: np.ndarray, valid: np.ndarray) -> np.ndarray:
    """Integer ``a op b`` (``a`` None: ``-b``) that never wraps. Over exact integers (object
    arrays: an integer SUM, DuckDB's 128-bit HUGEINT) it is exact; over int64 a valid row that
    overflows raises ``OutOfRangeError``, as DuckDB's BIGINT arithmetic does (the kernels
    flag the same, ``kernels.codegen``)."""
    if b.dtype == object or (a is not None and a.dtype == object):
        b = b.astype(object)
        if a is None:
            return -b
        a = a.astype(object)
        return a + b if op == "+" else (a - b if op == "-" else a * b)
    b = b.astype(np.int64)  # a narrow column's sample widens first, as in the kernels
    mx, mn = np.int64(I64_MAX), np.int64(I64_MIN)
    with np.errstate(all="ignore"):  # the tests as in kernels.codegen._overflows
        if a is None:
            r, bad, what = -b, b == mn, "negation"
        else:
            a = a.astype(np.int64)
            if op == "+":
                r, what = a + b, "addition"
                bad = ((b > 0) & (a > mx - b)) | ((b < 0) & (a < mn - b))
            elif op == "-":
                r, what = a - b, "subtraction"
                bad = ((b < 0) & (a > mx + b)) | ((b > 0) & (a < mn + b))
            else:  # floor divisions by safe stand-ins where the test does not look
                r, what = a * b, "multiplication"
                db = np.where((b == 0) | (b == -1), 1, b)
                da = np.where((a == 0) | (a == -1), -2, a)
                dn = np.where(a == 0, -1, a)
                bad = ((a > 0) & (((b > 0) & (a > mx // db)) | ((b < -1) & (a > mn // db)))) | (
                    (a < 0) & (((b > 0) & (a != -1) & (b > mn // da))
                               | ((b < 0) & (b < -((mn + 1) // dn)))))
    if np.any(bad & valid):
        raise OutOfRangeError(f"Out of Range Error: Overflow in {what} of INT64")
    return r


def _isnan(a: np.ndarray) -> np.ndarray:
    a = np.asarray(a)
    return np.isnan(a) if a.dtype.kind == "f" else np.zeros(a.shape, dtype=bool)


def compare(op: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a <op> b`` elementwise in DuckDB's float order: NaN = NaN, and NaN is larger than
    every other value (``+inf`` included)."""
    an, bn = _isnan(a), _isnan(b)
    eq = np.equal(a, b) | (an & bn)
    if op == "=":
        return eq
    if op == "<>":
        return ~eq
    lt = np.less(a, b) | (~an & bn)
    if op == "<":
        return lt
    if op == "<=":
        return lt | eq
    gt = np.greater(a, b) | (an & ~bn)
    return gt if op == ">" else gt | eq


def civil_np(days: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(year, month, day) of day numbers (1970-01-01 is 0), proleptic Gregorian (H. Hinnant's
    civil_from_days, as ``kernels.codegen`` emits it)."""
    z = days + 719468
    era = z // 146097
    doe = z - era * 146097
    yoe = (doe - doe // 1460 + doe // 36524 - doe // 146096) // 365
    doy = doe - (365 * yoe + yoe // 4 - yoe // 100)
    mp = (5 * doy + 2) // 153
    d = doy - (153 * mp + 2) // 5 + 1
    m = np.where(mp < 10, mp + 3, mp - 9)
    return yoe + era * 400 + (m <= 2), m, d


def days_np(y: np.ndarray, m: np.ndarray | int) -> np.ndarray:
    """Day number of the first of month ``m`` of year ``y`` (Hinnant's days_from_civil)."""
    y = y - (np.asarray(m) <= 2)
    era = y // 400
    yoe = y - era * 400
    doe = yoe * 365 + yoe // 4 - yoe // 100 + (153 * np.where(np.asarray(m) > 2, m - 3, m + 9) + 2) // 5
    return era * 146097 + doe - 719468


def extract_np(part: str, us: np.ndarray) -> np.ndarray:
    """A calendar field (``ir.EXTRACT_PARTS``) of int64 microsecond timestamps."""
    if part == "hour":
        return (us // 3_600_000_000) % 24
    if part == "minute":
        return (us // 60_000_000) % 60
    if part == "second":
        return (us // 1_000_000) % 60
    day = us // 86_400_000_000
    if part == "dow":
        return (day + 4) % 7  # 1970-01-01 was a Thursday
    if part == "isodow":
        return (day + 3) % 7 + 1
    if part in ("week", "isoyear"):  # ISO 8601: the week of the Thursday
        th = day - (day + 3) % 7 + 3
        y = civil_np(th)[0]
        return y if part == "isoyear" else (th - days_np(y, 1)) // 7 + 1
    y, m, d = civil_np(day)
    return {"year": y, "month": m, "quarter": (m - 1) // 3 + 1, "day": d,
            "doy": day - days_np(y, 1) + 1 if part == "doy" else None}[part]


def trunc_np(unit: str, us: np.ndarray) -> np.ndarray:
    """``date_trunc(unit, ts)`` of int64 microsecond timestamps."""
    step = {"second": 1_000_000, "minute": 60_000_000, "hour": 3_600_000_000,
            "day": 86_400_000_000}.get(unit)
    if step is not None:
        return (us // step) * step
    day = us // 86_400_000_000
    if unit == "week":
        return (day - (day + 3) % 7) * 86_400_000_000
    y, m, _ = civil_np(day)
    first = {"year": np.ones_like(m), "quarter": (m - 1) // 3 * 3 + 1, "month": m}[unit]
    return days_np(y, first) * 86_400_000_000


def predicate_mask(e: ir.Expr, env: Mapping, n: int) -> np.ndarray:
    """Rows where the predicate is TRUE (NULL counts as not matching)."""
    v, ok = evaluate(e, env, n)
    return v.astype(bool) & ok
