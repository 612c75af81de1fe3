"""A vectorized NumPy interpreter of IR expressions, with SQL three-valued logic.

Used where rows are few: selectivity estimates on the store's row sample, HAVING and the
select list over aggregate results. Kernels compile the same IR instead (kernels.codegen).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from bamql.planner import ir

Vec = tuple[np.ndarray, np.ndarray]  # (values, valid)


def evaluate(e: ir.Expr, env: Mapping, n: int) -> Vec:
    """Evaluate ``e`` over ``n`` rows; ``env`` maps column names, ``('key', i)`` and
    ``('agg', i)`` to ``(values, valid)`` arrays."""
    ones = np.ones(n, dtype=bool)
    if isinstance(e, ir.Col):
        return env[e.name]
    if isinstance(e, ir.KeyRef):
        return env[("key", e.index)]
    if isinstance(e, ir.AggRef):
        return env[("agg", e.index)]
    if isinstance(e, ir.Lit):
        if e.value is None:
            return np.zeros(n), ~ones
        return np.full(n, e.value), ones
    if isinstance(e, ir.Neg):
        v, ok = evaluate(e.arg, env, n)
        return -v, ok
    if isinstance(e, ir.Arith):
        a, oa = evaluate(e.left, env, n)
        b, ob = evaluate(e.right, env, n)
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
    if isinstance(e, ir.Cmp):
        a, oa = evaluate(e.left, env, n)
        b, ob = evaluate(e.right, env, n)
        ops = {"=": np.equal, "<>": np.not_equal, "<": np.less, "<=": np.less_equal,
               ">": np.greater, ">=": np.greater_equal}
        return ops[e.op](a, b), oa & ob
    if isinstance(e, ir.And | ir.Or):
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
    if isinstance(e, ir.Not):
        v, ok = evaluate(e.arg, env, n)
        return ~v.astype(bool), ok
    if isinstance(e, ir.IsNull):
        _, ok = evaluate(e.arg, env, n)
        return (ok if e.negated else ~ok), ones
    if isinstance(e, ir.InList):
        a, oa = evaluate(e.arg, env, n)
        vals = [x.value for x in e.values if x.value is not None]
        hit = np.isin(a, vals) if vals else np.zeros(n, dtype=bool)
        has_null = any(x.value is None for x in e.values)
        ok = oa & (hit | (not has_null))  # x IN (.., NULL) is NULL unless it hits
        return (~hit if e.negated else hit), ok
    if isinstance(e, ir.Extract):
        v, ok = evaluate(e.arg, env, n)
        return extract_np(e.part, v.astype(np.int64)), ok
    raise TypeError(f"cannot evaluate {type(e).__name__}")


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
