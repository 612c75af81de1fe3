"""The optimizer: small pure rules over the logical plan, applied in order (``RULES``).

Each rule maps one node (whose children were rewritten already) to a node; ``optimize``
applies them bottom-up, subquery plans included. The rules move work into the fused
kernel: WHERE conjuncts into the scan that reads the table, equalities across a comma join
into its condition, and a GROUP BY over a scan into one fused kernel.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable

from sqlglot import exp

from bamql.plan import nodes as n
from bamql.plan.build import Catalog, columns_in, conjuncts, is_agg
from bamql.plan.expr import find

D = "duckdb"
Rule = Callable[[n.Node, Catalog], n.Node]


def _refs_only(e: exp.Expression, cols) -> bool:
    """Every column ``e`` names is one of ``cols`` (unambiguously)."""
    cs = columns_in(e)
    return all(len(find(cols, c.name, c.table or None)) == 1 for c in cs)


def _plain(e: exp.Expression) -> bool:
    """No subquery, window or aggregate inside: a condition a scan can evaluate."""
    return not any(isinstance(x, n.SubRef | exp.Window | exp.Subquery) or is_agg(x)
                   for x in e.walk())


def _unqualified(e: exp.Expression) -> exp.Expression:
    c = e.copy()
    for x in list(c.find_all(exp.Column)):
        if x.table:
            x.set("table", None)
    return c


def push_filters(node: n.Node, cat: Catalog) -> n.Node:
    """A Filter's conjuncts move down: into each side of an inner or cross join they
    reference alone (an equality across a cross join becomes its condition), and into
    the Scan beneath when the kernel can evaluate them."""
    if not isinstance(node, n.Filter) or node.subplans:
        return node
    child = node.child
    parts = list(conjuncts(node.condition))
    if isinstance(child, n.Join) and child.kind in (n.JoinType.INNER, n.JoinType.CROSS):
        left, right, rest, on = [], [], [], []
        for c in parts:
            if _plain(c) and _refs_only(c, child.left.cols):
                left.append(c)
            elif _plain(c) and _refs_only(c, child.right.cols):
                right.append(c)
            elif _plain(c) and _refs_only(c, child.cols):
                on.append(c)
            else:
                rest.append(c)
        if not (left or right or on):
            return node
        lnode = _filtered(child.left, left, cat)
        rnode = _filtered(child.right, right, cat)
        cond = [x for x in (child.on, *on) if x is not None]
        kind = n.JoinType.INNER if cond else n.JoinType.CROSS
        j = n.Join(lnode, rnode, kind, exp.and_(*cond) if cond else None)
        return n.Filter(j, exp.and_(*rest)) if rest else j
    if isinstance(child, n.Scan):
        down, rest = [], []
        for c in parts:
            ok = _plain(c) and _refs_only(c, child.cols) and cat.fusable(
                f"SELECT COUNT(*) FROM {_quote(child.table)} WHERE {_unqualified(c).sql(dialect=D)}")
            (down if ok else rest).append(c)
        if not down:
            return node
        scan = dataclasses.replace(child, predicate=(*child.predicate, *down))
        return n.Filter(scan, exp.and_(*rest)) if rest else scan
    return node


def _filtered(node: n.Node, conds: list[exp.Expression], cat: Catalog) -> n.Node:
    if not conds:
        return node
    return push_filters(n.Filter(node, exp.and_(*conds)), cat)


def _quote(name: str) -> str:
    return exp.to_identifier(name, quoted=True).sql(dialect=D)


def fuse_aggregate(node: n.Node, cat: Catalog) -> n.Node:
    """GROUP BY over a Scan (its WHERE pushed in) as one fused kernel, where the kernel's
    translator takes the keys and aggregates."""
    if not isinstance(node, n.Aggregate) or node.sets is not None or not isinstance(node.child, n.Scan):
        return node
    scan = node.child
    items = [exp.Alias(this=_unqualified(k), alias=exp.to_identifier(f"__k{i}", quoted=True))
             for i, k in enumerate(node.keys)]
    items += [exp.Alias(this=_unqualified(a), alias=exp.to_identifier(f"__a{j}", quoted=True))
              for j, a in enumerate(node.aggs)]
    if not items:
        return node
    s = exp.select(*items).from_(_quote(scan.table), dialect=D)
    if scan.predicate:
        s = s.where(exp.and_(*[_unqualified(p) for p in scan.predicate]))
    if node.keys:
        s = s.group_by(*[_unqualified(k) for k in node.keys])
    sql = s.sql(dialect=D)
    if not cat.fusable(sql):
        return node
    return n.Fused(sql, tuple(x.alias for x in items))


RULES: tuple[Rule, ...] = (push_filters, fuse_aggregate)


def optimize(node: n.Node, cat: Catalog, rules: tuple[Rule, ...] = RULES) -> n.Node:
    """``node`` with every rule applied bottom-up (subquery plans too)."""
    kids = tuple(optimize(c, cat, rules) for c in node.children)
    if kids:
        node = node.with_children(*kids)
    subs = n.subplans_of(node)
    if subs:
        node = dataclasses.replace(node, subplans=tuple(
            dataclasses.replace(s, plan=optimize(s.plan, cat, rules)) for s in subs))
    for rule in rules:
        node = rule(node, cat)
    return node


def prune_scans(node: n.Node, mentioned: frozenset[str] | None) -> n.Node:
    """Scans read only the columns the statement names (``mentioned``, lowercase; None:
    every column, for a ``*``)."""
    if mentioned is None:
        return node
    kids = tuple(prune_scans(c, mentioned) for c in node.children)
    if kids:
        node = node.with_children(*kids)
    subs = n.subplans_of(node)
    if subs:
        node = dataclasses.replace(node, subplans=tuple(
            dataclasses.replace(s, plan=prune_scans(s.plan, mentioned)) for s in subs))
    if isinstance(node, n.Scan):
        keep = tuple(c for c in node.columns if c.lower() in mentioned) or node.columns[:1]
        node = dataclasses.replace(node, columns=keep,
                                   decimals=tuple(d for d in node.decimals if d[0] in keep))
    return node
