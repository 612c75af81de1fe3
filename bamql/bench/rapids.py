"""The IR on a cuDF DataFrame: what a RAPIDS user would write for each benchmark query."""

from __future__ import annotations

import numpy as np

from bamql.planner import ir


def _series(e: ir.Expr, df):
    """A cuDF Series (or scalar) for an expression; NULLs follow cuDF's own semantics."""
    if isinstance(e, ir.Col):
        return df[e.name]
    if isinstance(e, ir.Lit):
        if e.kind == "timestamp":
            return np.datetime64(int(e.value), "us")
        return e.value
    if isinstance(e, ir.Arith):
        a, b = _series(e.left, df), _series(e.right, df)
        if e.op == "/":
            return a.astype("float64") / b if hasattr(a, "astype") else a / b
        return _arith(e.op, a, b)
    if isinstance(e, ir.Neg):
        return -_series(e.arg, df)
    if isinstance(e, ir.Cmp):
        a, b = _series(e.left, df), _series(e.right, df)
        return {"=": lambda: a == b, "<>": lambda: a != b, "<": lambda: a < b,
                "<=": lambda: a <= b, ">": lambda: a > b, ">=": lambda: a >= b}[e.op]()
    if isinstance(e, ir.And | ir.Or):
        out = _series(e.args[0], df)
        for a in e.args[1:]:
            out = (out & _series(a, df)) if isinstance(e, ir.And) else (out | _series(a, df))
        return out
    if isinstance(e, ir.Not):
        return ~_series(e.arg, df)
    if isinstance(e, ir.IsNull):
        s = _series(e.arg, df)
        return s.notna() if e.negated else s.isna()
    if isinstance(e, ir.InList):
        s = _series(e.arg, df).isin([v.value for v in e.values if v.value is not None])
        return ~s if e.negated else s
    if isinstance(e, ir.Extract):
        s = _series(e.arg, df)
        return {"hour": s.dt.hour, "minute": s.dt.minute, "dow": (s.dt.dayofweek + 1) % 7}[e.part]
    raise NotImplementedError(type(e).__name__)


def _arith(op, a, b):
    if op == "+":
        return a + b
    if op == "-":
        return a - b
    return a * b


def run_query(df, q: ir.Query) -> list[tuple]:
    """Filter, aggregate (grouped or not); rows as tuples of Python values."""
    if q.keys or q.having is not None or q.order or q.limit is not None:
        raise NotImplementedError("the RAPIDS baseline runs ungrouped aggregate queries")
    if q.predicate is not None:
        mask = _series(q.predicate, df).fillna(False)
        df = df[mask]
    out = []
    for a in q.aggs:
        if a.arg is None:
            out.append(len(df))
            continue
        s = _series(a.arg, df)
        v = {"count": s.count, "sum": s.sum, "avg": s.mean, "min": s.min, "max": s.max}[a.func]()
        v = v.item() if hasattr(v, "item") else v
        out.append(None if v is not None and isinstance(v, float) and np.isnan(v) and a.func != "count"
                   and s.count() == 0 else v)
    from bamql.planner.evaluate import evaluate

    env = {("agg", j): (np.array([v if v is not None else 0.0]), np.array([v is not None]))
           for j, v in enumerate(out)}
    row = []
    for e in q.exprs:
        v, ok = evaluate(e, env, 1)
        row.append(v[0].item() if ok[0] else None)
    return [tuple(row)]


def dnf_filters(q: ir.Query) -> list | None:
    """cuDF ``filters=`` (stripe pruning by statistics) for conjunctions of simple terms."""
    terms = []
    for c in ir.conjuncts(q.predicate):
        if isinstance(c, ir.Cmp) and isinstance(c.left, ir.Col) and isinstance(c.right, ir.Lit) \
                and c.right.value is not None and c.left.kind in ("int", "float"):
            terms.append((c.left.name, {"=": "==", "<>": "!="}.get(c.op, c.op), c.right.value))
        elif isinstance(c, ir.InList) and isinstance(c.arg, ir.Col) and not c.negated:
            terms.append((c.arg.name, "in", [v.value for v in c.values if v.value is not None]))
    return [terms] if terms else None
