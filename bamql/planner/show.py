"""IR expressions back to readable SQL-like text (for EXPLAIN)."""

from __future__ import annotations

from bamql.planner import ir


def show(e: ir.Expr) -> str:
    """A compact SQL-like rendering of an IR expression."""
    if isinstance(e, ir.Col):
        return e.name
    if isinstance(e, ir.Lit):
        return "NULL" if e.value is None else repr(e.value) if e.kind != "timestamp" else f"ts({e.value})"
    if isinstance(e, ir.Arith):
        return f"({show(e.left)} {e.op} {show(e.right)})"
    if isinstance(e, ir.Neg):
        return f"-{show(e.arg)}"
    if isinstance(e, ir.Cmp):
        return f"{show(e.left)} {e.op} {show(e.right)}"
    if isinstance(e, ir.And | ir.Or):
        op = " AND " if isinstance(e, ir.And) else " OR "
        return "(" + op.join(show(a) for a in e.args) + ")"
    if isinstance(e, ir.Not):
        return f"NOT {show(e.arg)}"
    if isinstance(e, ir.IsNull):
        return f"{show(e.arg)} IS {'NOT ' if e.negated else ''}NULL"
    if isinstance(e, ir.InList):
        vals = ", ".join(show(v) for v in e.values)
        return f"{show(e.arg)} {'NOT ' if e.negated else ''}IN ({vals})"
    if isinstance(e, ir.Extract):
        return f"EXTRACT({e.part.upper()} FROM {show(e.arg)})"
    if isinstance(e, ir.Agg):
        return f"{e.func.upper()}({'*' if e.arg is None else show(e.arg)})"
    if isinstance(e, ir.KeyRef):
        return f"key{e.index}"
    if isinstance(e, ir.AggRef):
        return f"agg{e.index}"
    return type(e).__name__


def show_plan(p: ir.Plan) -> str:
    """The logical plan chain on one line, root first."""
    parts = []
    while True:
        if isinstance(p, ir.Limit):
            parts.append(f"Limit({p.n})")
        elif isinstance(p, ir.Sort):
            parts.append("Sort(" + ", ".join(f"#{i}{' DESC' if d else ''}" for i, d in p.keys) + ")")
        elif isinstance(p, ir.Project):
            parts.append(f"Project({', '.join(p.names)}" + (", HAVING" if p.having else "") + ")")
        elif isinstance(p, ir.Aggregate):
            parts.append(f"Aggregate({len(p.keys)} keys, {len(p.aggs)} aggs)")
        elif isinstance(p, ir.Filter):
            parts.append(f"Filter({show(p.predicate)})")
        elif isinstance(p, ir.Scan):
            parts.append(f"Scan({p.table}: {', '.join(p.columns)})")
            return " <- ".join(parts)
        p = p.child
