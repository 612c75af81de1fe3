"""A vectorized NumPy interpreter of IR expressions, with SQL three-valued logic.

Used where rows are few: selectivity estimates on the store's row sample, HAVING and the
select list over aggregate results. Kernels compile the same IR instead (kernels.codegen).
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import singledispatch

import numpy as np

from bamql.errors import OutOfRangeError
from bamql.intmath import I64_MAX, I64_MIN
from bamql.planner import ir

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
def _(e: ir.Neg, env: Mapping, n: int) -> Vec:
    v, ok = evaluate(e.arg, env, n)
    return (int_arith("-", None, v, ok) if e.kind == "int" else -v), ok


@evaluate.register
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


def extract_np(part: str, us: np.ndarray) -> np.ndarray:
    """Hour, minute or day of week (Sunday = 0) of int64 microsecond timestamps."""
    if part == "hour":
        return (us // 3_600_000_000) % 24
    if part == "minute":
        return (us // 60_000_000) % 60
    return (us // 86_400_000_000 + 4) % 7  # 1970-01-01 was a Thursday


def predicate_mask(e: ir.Expr, env: Mapping, n: int) -> np.ndarray:
    """Rows where the predicate is TRUE (NULL counts as not matching)."""
    v, ok = evaluate(e, env, n)
    return v.astype(bool) & ok
