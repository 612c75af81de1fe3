"""Subqueries in expressions as ``SubPlan``s of the logical plan: uncorrelated ones planned as
they are, correlated ones decorrelated into plans keyed by the inner sides of their WHERE's
equalities (the builder's part that :class:`plan.build.Builder` takes from here)."""

from __future__ import annotations

from sqlglot import exp

from bamql.errors import PlanError
from bamql.plan import nodes as n
from bamql.plan.expr import find
from bamql.plan.sqlast import (
    D,
    _arg,
    _conjuncts,
    _is_star,
    _transform,
    _unalias,
    collect_aggs,
    columns_in,
    is_agg,
)


class SubqueryPlanner:
    """The subquery methods of the plan builder; ``query`` and ``from_`` are the builder's."""

    def subqueries(self, e: exp.Expression, cols: tuple[n.ColName, ...], base: int = 0,
                   filtered: bool = False) -> tuple[exp.Expression, tuple[n.SubPlan, ...]]:
        """``e`` with each subquery as a SubRef to a SubPlan (indices from ``base``).
        ``filtered``: ``e`` is a condition that keeps only the rows where it is TRUE (WHERE,
        HAVING, QUALIFY), where a NULL is as good as FALSE."""
        subs: list[n.SubPlan] = []

        def fn(node):
            if (filtered and isinstance(node, exp.In) and node.args.get("query") is not None
                    and _conjunct(node)):
                exists = self._in_as_exists(node, cols)
                if exists is not None:
                    subs.append(self.subplan(exists, n.SubKind.EXISTS, cols))
                    return n.SubRef(this=exp.Literal.number(base + len(subs) - 1))
            if isinstance(node, exp.Exists):
                sp = self.subplan(node.this, n.SubKind.EXISTS, cols)
                subs.append(sp)
                return n.SubRef(this=exp.Literal.number(base + len(subs) - 1))
            if isinstance(node, exp.Not) and isinstance(node.this, exp.Exists):
                sp = self.subplan(node.this.this, n.SubKind.EXISTS, cols)
                subs.append(sp)
                return n.SubRef(this=exp.Literal.number(base + len(subs) - 1), negated=True)
            if isinstance(node, exp.In) and node.args.get("query") is not None:
                q = node.args["query"]
                sp = self.subplan(q.this if isinstance(q, exp.Subquery) else q, n.SubKind.IN, cols)
                subs.append(sp)
                left = _transform(node.this.copy(), fn)
                return n.SubRef(this=exp.Literal.number(base + len(subs) - 1), expression=left)
            if isinstance(node, exp.Subquery):
                sp = self.subplan(node.this, n.SubKind.SCALAR, cols)
                subs.append(sp)
                return n.SubRef(this=exp.Literal.number(base + len(subs) - 1))
            return node

        if not any(isinstance(x, exp.Subquery | exp.Exists) or (
                isinstance(x, exp.In) and x.args.get("query") is not None) for x in e.walk()):
            return e, ()
        out = _transform(e.copy(), fn)
        return out, tuple(subs)

    def subplan(self, q: exp.Expression, kind: n.SubKind, outer: tuple[n.ColName, ...]) -> n.SubPlan:
        """A subquery's plan; a correlated one (it names the outer row's columns in
        equalities of its WHERE) as a plan keyed by the inner sides of those equalities."""
        if not isinstance(q, exp.Select):
            if kind == n.SubKind.SCALAR or not self._outer_refs(q, outer):
                return n.SubPlan(kind, self.query(q))
            raise PlanError("a correlated subquery must be a SELECT")
        inner_cols = self.from_(q).cols if _arg(q, "from") is not None else ()
        refs = self._outer_refs(q, outer, inner_cols)
        if not refs:
            return n.SubPlan(kind, self.query(q))
        if kind == n.SubKind.IN:
            raise PlanError("a correlated IN (subquery) is not supported; write it as EXISTS")
        where = _arg(q, "where")
        conj = list(_conjuncts(where.this)) if where is not None else []
        keep, inner_keys, outer_keys = [], [], []
        for c in conj:
            outer_side = self._outer_refs(c, outer, inner_cols)
            if not outer_side:
                keep.append(c)
                continue
            if isinstance(c, exp.EQ):
                lo = self._outer_refs(c.left, outer, inner_cols)
                ro = self._outer_refs(c.right, outer, inner_cols)
                if lo and not ro and all(self._is_outer(x, outer, inner_cols) for x in columns_in(c.left)):
                    outer_keys.append(c.left)
                    inner_keys.append(c.right)
                    continue
                if ro and not lo and all(self._is_outer(x, outer, inner_cols) for x in columns_in(c.right)):
                    outer_keys.append(c.right)
                    inner_keys.append(c.left)
                    continue
            raise PlanError("a correlated subquery may compare the outer query's columns only "
                            f"by equality in its WHERE: {c.sql(dialect=D)[:80]}")
        if any(self._outer_refs(x, outer, inner_cols) for x in q.expressions) or (
                _arg(q, "having") is not None and self._outer_refs(_arg(q, "having"), outer, inner_cols)):
            raise PlanError("a correlated subquery may name the outer query's columns only in "
                            "its WHERE")
        inner = q.copy()
        inner.set("where", exp.Where(this=exp.and_(*keep)) if keep else None)
        inner.set("where_", None) if "where_" in inner.args else None
        key_items = [exp.Alias(this=k.copy(), alias=exp.to_identifier(f"__ck{i}", quoted=True))
                     for i, k in enumerate(inner_keys)]
        count = False
        if any(_arg(q, k) is not None for k in ("group", "having", "limit", "offset", "qualify")):
            raise PlanError("a correlated subquery with GROUP BY, HAVING, LIMIT or OFFSET is not "
                            "supported")
        if kind == n.SubKind.EXISTS:
            aggs0: list[exp.Expression] = []
            for x in q.expressions:
                collect_aggs(x, aggs0)
            if aggs0:
                raise PlanError("a correlated EXISTS over an aggregate is not supported")
            inner.set("expressions", key_items)
            inner.set("distinct", exp.Distinct())
            inner.set("order", None)
            inner.set("limit", None)
        else:
            if len(q.expressions) != 1:
                raise PlanError("a scalar subquery must return one column")
            aggs: list[exp.Expression] = []
            collect_aggs(q.expressions[0], aggs)
            item = _unalias(q.expressions[0])
            if not is_agg(item):
                raise PlanError("a correlated scalar subquery must return one aggregate "
                                "(SELECT AVG(...) ... WHERE inner.key = outer.key)")
            base = item
            while isinstance(base, exp.Filter | exp.IgnoreNulls):
                base = base.this
            count = isinstance(base, exp.Count | exp.CountIf)
            inner.set("expressions", [*key_items, item.copy()])
            inner.set("group", exp.Group(expressions=[k.copy() for k in inner_keys]))
        plan = self.query(inner)
        return n.SubPlan(kind, plan, tuple(outer_keys), count)

    def _in_as_exists(self, node: exp.In, outer: tuple[n.ColName, ...]) -> exp.Select | None:
        """A correlated ``x IN (SELECT y FROM ... WHERE ...)`` that only filters rows, as
        ``EXISTS (SELECT 1 FROM ... WHERE ... AND y = x)``: TRUE for the same rows, NULL
        (no match beside a NULL) and FALSE alike dropped. None where the subquery is not
        correlated (it runs once, as an IN list) or ``x`` names a column of the subquery."""
        q = node.args["query"]
        q = q.this if isinstance(q, exp.Subquery) else q
        if not isinstance(q, exp.Select) or len(q.expressions) != 1 or _is_star(q.expressions[0]):
            return None
        inner_cols = self.from_(q).cols if _arg(q, "from") is not None else ()
        if not self._outer_refs(q, outer, inner_cols):
            return None
        x = node.this.copy()  # the outer query's: its columns qualified to stay so inside
        for c in columns_in(x):
            hits = find(outer, c.name, c.table or None)
            if len(hits) != 1:
                return None
            qual, name = outer[hits[0]]
            if qual is None or find(inner_cols, name, qual):
                return None
            c.set("table", exp.to_identifier(qual, quoted=True))
            c.set("this", exp.to_identifier(name, quoted=True))
        match = exp.EQ(this=_unalias(q.expressions[0]).copy(), expression=x)
        where = _arg(q, "where")
        out = q.copy()
        out.set("where", exp.Where(this=exp.and_(where.this.copy(), match) if where is not None
                                   else match))
        if "where_" in out.args:
            out.set("where_", None)
        out.set("expressions", [exp.Literal.number(1)])
        return out

    def _is_outer(self, c: exp.Column, outer, inner_cols) -> bool:
        if c.table:
            in_inner = bool(find(inner_cols, c.name, c.table))
            return not in_inner and bool(find(outer, c.name, c.table))
        return not find(inner_cols, c.name, None) and bool(find(outer, c.name, None))

    def _outer_refs(self, e: exp.Expression, outer, inner_cols=None) -> list[exp.Column]:
        if not outer:
            return []
        if inner_cols is None:
            inner_cols = ()
        out = []
        for c in columns_in(e):
            if self._is_outer(c, outer, inner_cols):
                out.append(c)
        return out


def _conjunct(node: exp.Expression) -> bool:
    """Whether ``node`` is the whole condition or one of its top-level ANDed terms."""
    p = node.parent
    while p is not None:
        if not isinstance(p, exp.And | exp.Paren):
            return False
        p = p.parent
    return True
