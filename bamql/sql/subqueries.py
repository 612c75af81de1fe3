"""``x [NOT] IN (SELECT column FROM dim [WHERE ...])`` over a registered table.

A registered (dimension) table is small and held in memory, so an uncorrelated
IN-subquery over it is answered once, here at plan time, with the evaluator that
``sql.joins`` runs dimension conditions with; the list of values it returns becomes
the constant list of an ``IN`` (zone maps and value sets prune it like any other). A NULL
among the values keeps SQL's meaning: ``x NOT IN`` such a list is never true. A subquery
that returns no rows makes ``x IN`` false and ``x NOT IN`` true on every row, NULL ``x``
included, as in DuckDB. A subquery over a stored table is refused."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Protocol

import numpy as np
from sqlglot import exp

from bamql.errors import TREE_ONLY
from bamql.fused import ir
from bamql.fused.evaluate import evaluate
from bamql.sql.expressions import ExprTranslator


class Dimension(Protocol):
    """What of ``sql.dimensions.Dimension`` (a registered table) a subquery reads."""

    name: str
    values: Mapping[str, tuple[np.ndarray, np.ndarray]]
    metas: Mapping

    @property
    def rows(self) -> int: ...

    def column(self, name: str) -> str | None: ...

#: Parts of a SELECT that a subquery may not have (its rows are one column's values).
_CLAUSES = {"joins": "JOIN", "group": "GROUP BY", "having": "HAVING", "order": "ORDER BY",
            "limit": "LIMIT", "offset": "OFFSET", "qualify": "QUALIFY", "windows": "WINDOW",
            "with_": "WITH", "with": "WITH"}


def _dimension(dims: Mapping[str, Dimension], name: str) -> Dimension | None:
    if name in dims:
        return dims[name]
    low = [d for n, d in dims.items() if n.lower() == name.lower()]
    return low[0] if len(low) == 1 else None


def in_subquery(t: ExprTranslator, node: exp.In, dims: Mapping[str, Dimension]) -> ir.Expr:
    """``node`` (an ``IN`` whose list is a subquery) as a condition on ``node.this``."""
    q = node.args["query"]
    s = q.this if isinstance(q, exp.Subquery) else q
    if not isinstance(s, exp.Select):
        raise t.fail("IN (subquery) takes one SELECT of one column", q)
    for arg, what in _CLAUSES.items():
        if s.args.get(arg):
            raise t.fail(f"IN (subquery): {what} in the subquery is not supported", q)
    if s.args.get("distinct") is not None and s.args["distinct"].args.get("on") is not None:
        raise t.fail("IN (subquery): DISTINCT ON in the subquery is not supported", q)
    frm = s.args.get("from_") or s.args.get("from")
    table = frm.this if frm is not None else None
    if not (isinstance(table, exp.Table) and isinstance(table.this, exp.Identifier)
            and not table.args.get("db")):
        raise t.fail("IN (subquery) needs FROM <registered table>", q)
    dim = _dimension(dims, table.name)
    if dim is None:
        if table.name in t.catalog:
            raise t.fail(f"IN (subquery) over stored table {table.name!r} is not supported: a "
                         "subquery may read a registered table only (Session.register, or "
                         "zones)", table)
        known = ", ".join(sorted(dims)) or "none"
        raise t.fail(f"unknown table {table.name!r} in IN (subquery) (registered tables: "
                     f"{known})", table)
    if len(s.expressions) != 1:
        raise t.fail("IN (subquery) selects exactly one column of the registered table", q)
    if not isinstance(s.expressions[0].unalias(), exp.Column):  # the plan tree computes it
        raise t.fail(f"IN (subquery) of an expression {TREE_ONLY}", q)

    inner = table.alias_or_name.lower()
    for c in s.find_all(exp.Column):
        outer = c.table.lower() != inner if c.table else \
            dim.column(c.name) is None and c.name in t.cols
        if outer:
            raise t.fail(f"IN (subquery) that reads the outer query's column {c.sql()} (a "
                         "correlated subquery) is not supported", c)
    sub = ExprTranslator.for_columns(dim.metas, dim.name)
    sub.sql, sub.lists, sub.qualifier = t.sql, t.lists, table.alias_or_name
    col = sub.column(s.expressions[0].unalias())
    n = dim.rows
    passes = np.ones(n, dtype=bool)
    where = s.args.get("where")
    if where is not None:
        p = sub.bool_expr(where.this)
        env = {c: dim.values[c] for c in ir.columns_of(p)}
        pv, pok = evaluate(p, env, n)
        passes = np.asarray(pv, dtype=bool) & pok
    v, ok = dim.values[col.name]
    # the left side is bound and checked against the column's type whatever the subquery
    # returns: an empty result must not hide an unknown column or a type mismatch
    a = t.expr(node.this)
    if a.kind == "strlit":
        raise t.fail("IN of a string constant is not supported", node)
    if not passes.any():
        t.coerce_literal(_stand_in(col.kind), a, node)
        return ir.Lit(False, "bool")  # x IN (no rows) is false for every x, NULL too
    lits = [_lit(x, col.kind, dim.metas[col.name].dictionary) for x in np.unique(v[passes & ok])]
    if (passes & ~ok).any():
        lits.append(ir.Lit(None, "null"))
    return t.in_list(a, [t.coerce_literal(x, a, node) for x in lits], node)


def _lit(x, kind: str, dictionary) -> ir.Lit:
    """A value of a registered table's column as the constant SQL would have written."""
    if kind == "string":
        return ir.Lit(dictionary[int(x)], "strlit")
    if kind == "float":
        return ir.Lit(float(x), "float")
    return ir.Lit(int(x), kind)


def _stand_in(kind: str) -> ir.Lit:
    """A value of a subquery column's type, checked against the left side of an ``IN``
    whose subquery returns no rows as a returned value would be."""
    if kind == "string":
        return ir.Lit("", "strlit")
    return ir.Lit(0.0, "float") if kind == "float" else ir.Lit(0, kind)
