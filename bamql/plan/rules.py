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

from bamql.errors import PlanError
from bamql.plan import nodes as n
from bamql.plan.build import Catalog
from bamql.plan.expr import find, resolve
from bamql.plan.sqlast import columns_in, conjuncts, is_agg

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
    if isinstance(child, n.Alias | n.Project):
        down, rest = [], []
        for c in parts:
            moved = _below(c, child) if _plain(c) else None
            (rest if moved is None else down).append(c if moved is None else moved)
        if not down:
            return node
        inner = _again(n.Filter(child.child, exp.and_(*down)), cat)
        moved_node = child.with_children(inner)
        return n.Filter(moved_node, exp.and_(*rest)) if rest else moved_node
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


def _below(cond: exp.Expression, node: n.Alias | n.Project) -> exp.Expression | None:
    """``cond`` over ``node``'s columns as the same condition over its child's (an alias's
    columns by position, a projection's where it passes a column through); None where a
    column it reads is computed by the projection or cannot be told apart."""
    below = node.child.cols
    swaps: dict[int, exp.Expression] = {}
    for c in columns_in(cond):
        try:
            i = resolve(node.cols, c)
        except PlanError:
            return None
        if i is None:
            return None
        if isinstance(node, n.Project):
            e = node.exprs[i]
            if not isinstance(e, exp.Column):
                return None
            swaps[id(c)] = e.copy()
        else:
            if i >= len(below):
                return None
            q, name = below[i]
            ref = exp.Column(this=exp.to_identifier(name, quoted=True),
                             table=exp.to_identifier(q, quoted=True) if q else None)
            try:
                if resolve(below, ref) != i:
                    return None
            except PlanError:
                return None
            swaps[id(c)] = ref
    out = cond.copy()
    for old, new in zip(columns_in(cond), columns_in(out), strict=True):
        new.replace(swaps[id(old)].copy())
    return out


def limit_window(node: n.Node, cat: Catalog) -> n.Node:
    """A Filter that keeps rows whose ``ROW_NUMBER()`` or ``RANK()`` is at most ``k``
    (``<= k``, ``< k + 1``, ``= k``, either side) marks its Window ``keep = k``, so that the
    window runs over only the rows that can be among them (``plan.topk``); the Filter stays."""
    if not isinstance(node, n.Filter) or node.subplans or not isinstance(node.child, n.Window):
        return node
    win = node.child
    if len(win.funcs) != 1 or win.keep is not None:
        return node
    f = win.funcs[0].this
    if not isinstance(f, exp.RowNumber | exp.Rank) or not win.funcs[0].args.get("order"):
        return node
    at = len(win.cols) - 1
    best = None
    for c in conjuncts(node.condition):
        k = _rank_bound(c, win.cols, at)
        if k is not None:
            best = k if best is None else min(best, k)
    if best is None:
        return node
    return dataclasses.replace(node, child=dataclasses.replace(win, keep=max(best, 0)))


def _rank_bound(c: exp.Expression, cols, at: int) -> int | None:
    """``k`` where ``c`` holds only for column ``at`` at most ``k`` (an integer constant)."""
    flip = {exp.GTE: exp.LTE, exp.GT: exp.LT, exp.LTE: exp.GTE, exp.LT: exp.GT, exp.EQ: exp.EQ}
    if type(c) not in flip:
        return None
    left, right, kind = c.this, c.expression, type(c)
    if isinstance(left, exp.Literal):
        left, right, kind = right, left, flip[kind]
    if not (isinstance(left, exp.Column) and isinstance(right, exp.Literal)) or right.is_string:
        return None
    try:
        if resolve(cols, left) != at:
            return None
        k = int(right.this)
    except (PlanError, ValueError):
        return None
    if kind is exp.LTE or kind is exp.EQ:
        return k
    if kind is exp.LT:
        return k - 1
    return None


def _again(node: n.Node, cat: Catalog) -> n.Node:
    """Every rule applied to a node a rule made (its children are optimized already)."""
    for rule in RULES:
        node = rule(node, cat)
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


#: The name a FusedJoin's SQL gives the relation it joins (registered for that one query)
JOINED = "__bamql_joined"


def fuse_join_aggregate(node: n.Node, cat: Catalog) -> n.Node:
    """GROUP BY over a stored table joined on one key to a small relation (a derived
    GROUP BY, a registered table) as one fused kernel (``n.FusedJoin``): the relation's
    rows are computed first and its columns looked up by the fact key inside the kernel,
    the join's other conditions a WHERE there. An inner join, or a left join on the key
    alone."""
    if not isinstance(node, n.Aggregate) or node.sets is not None:
        return node
    child, where = node.child, []
    if isinstance(child, n.Filter) and not child.subplans:
        child, where = child.child, list(conjuncts(child.condition))
    if not isinstance(child, n.Join) or child.on is None or \
            child.kind not in (n.JoinType.INNER, n.JoinType.LEFT):
        return node
    scan, side = child.left, child.right
    if child.kind is n.JoinType.INNER and isinstance(scan, n.Alias):
        scan, side = side, scan
    if not isinstance(scan, n.Scan) or not isinstance(side, n.Alias) or \
            not isinstance(side.child, n.Fused | n.Values) or (where and child.kind is n.JoinType.LEFT):
        return node
    key, rest = None, []
    for c in conjuncts(child.on):
        if key is None and isinstance(c, exp.EQ) and all(
                isinstance(x, exp.Column) for x in (c.this, c.expression)) and (
                {_side(c.this, scan, side), _side(c.expression, scan, side)} == {"fact", "dim"}):
            key = c
        else:
            rest.append(c)
    if key is None or (rest and child.kind is n.JoinType.LEFT):
        return node
    items = [exp.Alias(this=k.copy(), alias=exp.to_identifier(f"__k{i}", quoted=True))
             for i, k in enumerate(node.keys)]
    items += [exp.Alias(this=a.copy(), alias=exp.to_identifier(f"__a{j}", quoted=True))
              for j, a in enumerate(node.aggs)]
    if not items:
        return node
    fact = exp.Table(this=exp.to_identifier(scan.table, quoted=True),
                     alias=exp.TableAlias(this=exp.to_identifier(scan.qual, quoted=True)))
    joined = exp.Table(this=exp.to_identifier(JOINED, quoted=True),
                       alias=exp.TableAlias(this=exp.to_identifier(side.qual, quoted=True)))
    s = exp.select(*items).from_(fact).join(
        joined, on=key.copy(), join_type="LEFT" if child.kind is n.JoinType.LEFT else None)
    conds = [*scan.predicate, *rest, *where]
    if conds:
        s = s.where(exp.and_(*[c.copy() for c in conds]))
    if node.keys:
        s = s.group_by(*[k.copy() for k in node.keys])
    return n.FusedJoin(side, s.sql(dialect=D), tuple(x.alias for x in items), JOINED,
                       tuple(c for _, c in side.cols), node)


def _side(c: exp.Column, scan: n.Scan, side: n.Alias) -> str | None:
    """Which side of a join column ``c`` names: 'fact' (the scan), 'dim' or None."""
    fact = len(find(scan.cols, c.name, c.table or None)) == 1
    dim = len(find(side.cols, c.name, c.table or None)) == 1
    return "fact" if fact and not dim else "dim" if dim and not fact else None


RULES: tuple[Rule, ...] = (push_filters, limit_window, fuse_aggregate, fuse_join_aggregate)


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
    if isinstance(node, n.Alias) and node.names:  # t(a, b) names columns by position:
        return node  # every column below stays
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
