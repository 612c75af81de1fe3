"""IR expressions back to readable SQL-like text (for EXPLAIN), one rendering per node."""

from __future__ import annotations

from functools import singledispatch

from bamql.fused import ir

#: An IN list shows this many constants, then how many more it holds.
SHOWN_VALUES = 8


@singledispatch
def show(e: ir.Expr) -> str:
    """A compact SQL-like rendering of an IR expression."""
    raise TypeError(f"show: no rendering of {type(e).__name__}")


@show.register
def _(e: ir.Col) -> str:
    return e.name


@show.register
def _(e: ir.Lit) -> str:
    return "NULL" if e.value is None else repr(e.value) if e.kind != "timestamp" else f"ts({e.value})"


@show.register
def _(e: ir.Lookup) -> str:
    return f"{e.label or 'lookup'}[{show(e.key)}]"


@show.register
def _(e: ir.Arith) -> str:
    return f"({show(e.left)} {e.op} {show(e.right)})"


@show.register
def _(e: ir.Dec) -> str:  # a DECIMAL column by its name; exact arithmetic of them scaled
    if isinstance(e.left, ir.Col):
        return show(e.left)
    return f"({show(e.left)} / 1e{e.scale})"


@show.register
def _(e: ir.Neg) -> str:
    return f"-{show(e.arg)}"


@show.register
def _(e: ir.Cmp) -> str:
    return f"{show(e.left)} {e.op} {show(e.right)}"


@show.register
def _(e: ir.And) -> str:
    return "(" + " AND ".join(show(a) for a in e.args) + ")"


@show.register
def _(e: ir.Or) -> str:
    return "(" + " OR ".join(show(a) for a in e.args) + ")"


@show.register
def _(e: ir.Not) -> str:
    return f"NOT {show(e.arg)}"


@show.register
def _(e: ir.IsNull) -> str:
    return f"{show(e.arg)} IS {'NOT ' if e.negated else ''}NULL"


@show.register
def _(e: ir.InList) -> str:
    vals = ", ".join(show(v) for v in e.values[:SHOWN_VALUES])
    if len(e.values) > SHOWN_VALUES:
        vals += f", ... {len(e.values) - SHOWN_VALUES:,} more"
    return f"{show(e.arg)} {'NOT ' if e.negated else ''}IN ({vals})"


@show.register
def _(e: ir.Extract) -> str:
    return f"EXTRACT({e.part.upper()} FROM {show(e.arg)})"


@show.register
def _(e: ir.Trunc) -> str:
    return f"date_trunc('{e.unit}', {show(e.arg)})"


@show.register
def _(e: ir.Case) -> str:
    whens = " ".join(f"WHEN {show(c)} THEN {show(v)}" for c, v in e.whens)
    default = "" if e.default is None else f" ELSE {show(e.default)}"
    return f"CASE {whens}{default} END"


@show.register
def _(e: ir.Math) -> str:
    digits = f", {e.digits}" if e.digits else ""
    return f"{e.func.upper()}({show(e.arg)}{digits})"


@show.register
def _(e: ir.Cast) -> str:
    return f"CAST({show(e.arg)} AS {e.to.upper()})"


@show.register
def _(e: ir.Agg) -> str:
    text = f"{e.func.upper()}({'*' if e.arg is None else show(e.arg)})"
    return text if e.filter is None else f"{text} FILTER (WHERE {show(e.filter)})"


@show.register
def _(e: ir.KeyRef) -> str:
    return f"key{e.index}"


@show.register
def _(e: ir.AggRef) -> str:
    return f"agg{e.index}"


def show_query(q: ir.Query) -> str:
    """The query as a logical plan on one line, root first."""
    parts = []
    if q.limit is not None or q.offset:
        parts.append(f"Limit({q.limit if q.limit is not None else 'all'}"
                     + (f", offset {q.offset})" if q.offset else ")"))
    if q.order:
        parts.append("Sort(" + ", ".join(f"#{i}{' DESC' if d else ''}{' NULLS FIRST' if nf else ''}"
                                         for i, d, nf in q.order) + ")")
    parts.append(f"Project({', '.join(q.names)}" + (", HAVING" if q.having else "") + ")")
    parts.append(f"Aggregate({len(q.keys)} keys, {len(q.aggs)} aggs)")
    if q.predicate is not None:
        parts.append(f"Filter({show(q.predicate)})")
    cols = sorted({c for e in (q.predicate, *q.keys, *q.aggs) if e is not None
                   for c in ir.columns_of(e)})
    parts.append(f"Scan({q.table}: {', '.join(cols)})")
    return " <- ".join(parts)
