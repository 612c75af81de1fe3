"""Small functions over sqlglot's AST that the plan builder and the rules share: aggregates
and windows in an expression, rewriting, output names, columns, conjuncts, positions, and
DISTINCT ON as DuckDB answers it."""

from __future__ import annotations

from collections.abc import Callable

from sqlglot import exp

from bamql.errors import PlanError
from bamql.plan import nodes as n

D = "duckdb"


def _arg(e: exp.Expression, key: str):
    return e.args.get(key) if e.args.get(key) is not None else e.args.get(key + "_")


def is_agg(e: exp.Expression) -> bool:
    """An aggregate call (with its FILTER or IGNORE NULLS), not a window's function."""
    if isinstance(e, exp.Filter | exp.IgnoreNulls | exp.WithinGroup):
        return is_agg(e.this)
    if isinstance(e, exp.Anonymous):
        return e.name.lower() in ("arbitrary", "any_value")
    return isinstance(e, exp.AggFunc)


def collect_aggs(e: exp.Expression, out: list[exp.Expression]) -> None:
    """The aggregate calls of ``e`` (outside subqueries; inside a window's arguments)."""
    if isinstance(e, exp.Subquery | exp.Select | n.SubRef | exp.Exists):
        return
    if isinstance(e, exp.Window):
        for c in e.this.iter_expressions():
            collect_aggs(c, out)
        for key in ("partition_by",):
            for c in e.args.get(key) or []:
                collect_aggs(c, out)
        if e.args.get("order"):
            collect_aggs(e.args["order"], out)
        return
    if is_agg(e):
        if not any(e == o for o in out):
            out.append(e)
        return
    for c in e.iter_expressions():
        collect_aggs(c, out)


def collect_windows(e: exp.Expression, out: list[exp.Window]) -> None:
    if isinstance(e, exp.Subquery | exp.Select | n.SubRef):
        return
    if isinstance(e, exp.Window):
        if not any(e == o for o in out):
            out.append(e)
        return
    for c in e.iter_expressions():
        collect_windows(c, out)


def replace(e: exp.Expression, pairs: list[tuple[exp.Expression, exp.Expression]],
            norm: Callable[[exp.Expression], exp.Expression] | None = None) -> exp.Expression:
    """``e`` with each subtree equal to a pair's first item replaced by its second."""
    keys = [(norm(k) if norm else k, v) for k, v in pairs]

    def fn(node):
        if isinstance(node, exp.Subquery | exp.Select):
            return _KEEP
        probe = norm(node) if norm else node
        for k, v in keys:
            if probe == k:
                return v.copy()
        return node

    return _transform(e.copy(), fn)


_KEEP = object()


def _transform(e: exp.Expression, fn) -> exp.Expression:
    """``e`` with ``fn`` applied top-down: a node it replaces is not descended into, nor
    one it answers ``_KEEP`` for."""
    new = fn(e)
    if new is _KEEP:
        return e
    if new is not e:
        return new
    if isinstance(e, n.SubRef):
        return e
    for key, val in list(e.args.items()):
        if isinstance(val, exp.Expression):
            e.set(key, _transform(val, fn))
        elif isinstance(val, list):
            e.set(key, [_transform(v, fn) if isinstance(v, exp.Expression) else v for v in val])
    return e


def col(name: str) -> exp.Column:
    return exp.Column(this=exp.to_identifier(name, quoted=True))


def out_name(e: exp.Expression) -> str:
    """A select item's output name: its alias, its column's name, else its SQL."""
    if isinstance(e, exp.Alias):
        return e.alias
    if isinstance(e, exp.Column) and not isinstance(e.this, exp.Star):
        return e.name
    return e.sql(dialect=D)


def _unalias(e: exp.Expression) -> exp.Expression:
    return e.this if isinstance(e, exp.Alias) else e


def columns_in(e: exp.Expression) -> list[exp.Column]:
    return [c for c in e.find_all(exp.Column) if not isinstance(c.this, exp.Star)]


def position(lit: exp.Literal, what: str) -> int:
    """A numeric constant in ORDER BY or GROUP BY as the position it names (1-based)."""
    if not lit.is_int:
        raise PlanError(f"{what} {lit.sql(dialect=D)}: a position is a whole number")
    return int(lit.this)


def _distinct_on(s: exp.Select) -> exp.Select:
    """``SELECT DISTINCT ON (k) ... ORDER BY o`` as DuckDB answers it: each k's first row
    in the order o, i.e. ``QUALIFY ROW_NUMBER() OVER (PARTITION BY k ORDER BY o) = 1``. In
    k and o, a select alias (any case) and a position name the select list's expression."""
    on = s.args["distinct"].args["on"]
    keys = on.expressions if isinstance(on, exp.Tuple) else [on]
    if not keys:
        raise PlanError("DISTINCT ON needs at least one expression")
    if s.args.get("qualify") is not None:
        raise PlanError("DISTINCT ON with QUALIFY is not supported")
    aliases = {e.alias.lower(): e.this for e in s.expressions if isinstance(e, exp.Alias)}
    items = [e.this if isinstance(e, exp.Alias) else e for e in s.expressions]
    star = any(_is_star(e) for e in items)

    def expand(x: exp.Expression, what: str) -> exp.Expression:
        if isinstance(x, exp.Column) and not x.table and x.name.lower() in aliases:
            return aliases[x.name.lower()].copy()
        lit = x.this if isinstance(x, exp.Neg) else x
        if isinstance(lit, exp.Literal) and not lit.is_string:
            if star:
                raise PlanError(f"{what} by position over SELECT * is not supported with "
                                "DISTINCT ON; name the column")
            i = position(lit, what) if isinstance(x, exp.Literal) else 0
            if not 1 <= i <= len(items):
                raise PlanError(f"{what} {x.sql(dialect=D)}: the select list has {len(items)} "
                                "items")
            return items[i - 1].copy()
        return x.copy()

    order = s.args.get("order")
    ordered = [exp.Ordered(this=expand(o.this, "ORDER BY"), desc=o.args.get("desc"),
                           nulls_first=o.args.get("nulls_first"))
               for o in (order.expressions if order is not None else [])]
    win = exp.Window(this=exp.RowNumber(), partition_by=[expand(k, "DISTINCT ON") for k in keys],
                     order=exp.Order(expressions=ordered) if ordered else None)
    out = s.copy()
    out.set("distinct", None)
    out.set("qualify", exp.Qualify(this=exp.EQ(this=win, expression=exp.Literal.number(1))))
    return out


def _is_star(e: exp.Expression) -> bool:
    """Whether ``e`` is ``*`` or ``t.*``."""
    return isinstance(e, exp.Star) or (isinstance(e, exp.Column) and isinstance(e.this, exp.Star))


def _parents(x: exp.Expression):
    p = x.parent
    while p is not None:
        yield p
        p = p.parent


def _conjuncts(e: exp.Expression):
    if isinstance(e, exp.And):
        yield from _conjuncts(e.left)
        yield from _conjuncts(e.right)
    elif isinstance(e, exp.Paren) and isinstance(e.this, exp.And):
        yield from _conjuncts(e.this)
    else:
        yield e


conjuncts = _conjuncts
