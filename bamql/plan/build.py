"""sqlglot's AST -> the logical plan (``plan.nodes``), one dispatch per AST node kind.

A SELECT that the fused kernel's translator takes whole becomes one ``Fused`` leaf (the
fusion rule, applied where a SELECT is translated: the kernel is the engine's core). Any
other SELECT becomes Scan -> Filter -> Aggregate -> Filter (HAVING) -> Window -> Filter
(QUALIFY) -> Project -> Distinct -> Sort -> Limit, and the rules of ``plan.rules`` push
what they can back into the kernel. Subqueries in expressions become ``SubPlan``s
(correlated ones decorrelated into keyed lookups).
"""

from __future__ import annotations

import decimal
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

import pyarrow as pa
from sqlglot import exp

from bamql.errors import PlanError
from bamql.plan import nodes as n
from bamql.plan.expr import Evaluator, Rel, find, resolve
from bamql.plan.sqlast import (
    D,
    _arg,
    _distinct_on,
    _is_star,
    _parents,
    _transform,
    _unalias,
    col,
    collect_aggs,
    collect_windows,
    is_agg,
    out_name,
    position,
    replace,
)
from bamql.plan.subplans import SubqueryPlanner


@dataclass
class Catalog:
    """What a plan may read: stored tables (their column names), in-memory tables, and
    whether the fused kernel takes a SELECT's SQL whole."""

    tables: Mapping[str, tuple[str, ...]]
    memory: Mapping[str, pa.Table]
    fusable: Callable[[str], bool]
    #: per stored table, the scale of each column whose source type is DECIMAL
    decimals: Mapping[str, tuple[tuple[str, int], ...]] = field(default_factory=dict)
    ctes: list[dict[str, n.Node]] = field(default_factory=list)


class Builder(SubqueryPlanner):
    """Translates one statement; ``catalog`` names what it may read."""

    def __init__(self, catalog: Catalog) -> None:
        self.cat = catalog
        self.scopes: list[dict[str, n.Node]] = []

    # -- dispatch ------------------------------------------------------------------------
    def query(self, e: exp.Expression, outer: tuple[n.ColName, ...] = ()) -> n.Node:
        if isinstance(e, exp.Subquery):
            return self.query(e.this, outer)
        if isinstance(e, exp.Paren):
            return self.query(e.this, outer)
        with_ = _arg(e, "with")
        pushed = False
        if with_ is not None and not isinstance(e, exp.Select):
            self._push_ctes(with_, outer)
            pushed = True
        try:
            if isinstance(e, exp.Select):
                return self.select(e, outer)
            if isinstance(e, exp.Union | exp.Intersect | exp.Except):
                return self.setop(e, outer)
            if isinstance(e, exp.Values):
                return self.values(e)
        finally:
            if pushed:
                self.scopes.pop()
        raise PlanError(f"only SELECT queries are supported, not {e.key.upper()}")

    def _push_ctes(self, with_: exp.With, outer) -> None:
        scope: dict[str, n.Node] = {}
        self.scopes.append(scope)
        for cte in with_.expressions:
            names = tuple(c.name for c in (cte.args["alias"].columns or []))
            if with_.args.get("recursive") and any(t.name.lower() == cte.alias.lower()
                                                   for t in cte.this.find_all(exp.Table)):
                scope[cte.alias.lower()] = self._recursive(cte, names, scope, outer)
                continue
            node = self.query(cte.this, outer)
            scope[cte.alias.lower()] = _renamed(node, cte.alias, names) if names else node

    def _recursive(self, cte: exp.CTE, names: tuple[str, ...], scope: dict[str, n.Node],
                   outer) -> n.Recursive:
        """A CTE of WITH RECURSIVE that reads itself: ``first UNION [ALL] step``, the step
        reading the rows the last round added."""
        body, name = cte.this, cte.alias
        if not isinstance(body, exp.Union) or any(
                t.name.lower() == name.lower() for t in body.this.find_all(exp.Table)):
            raise PlanError(f"WITH RECURSIVE {name}: a CTE that reads itself is <query> UNION "
                            "[ALL] <query reading it>, its first part not reading it")
        first = self.query(body.this, outer)
        if len(names) > len(first.cols):
            raise PlanError(f"table {name} has {len(first.cols)} columns available but "
                            f"{len(names)} columns specified")
        cols = names + tuple(c for _, c in first.cols[len(names):])
        scope[name.lower()] = n.WorkTable(name, cols)
        step = self.query(body.expression, outer)
        if len(step.cols) != len(cols):
            raise PlanError(f"WITH RECURSIVE {name}: its parts return {len(cols)} and "
                            f"{len(step.cols)} columns")
        return n.Recursive(first, step, name, cols, bool(body.args.get("distinct")))

    def _cte(self, name: str) -> n.Node | None:
        for scope in reversed(self.scopes):
            if name.lower() in scope:
                return scope[name.lower()]
        return None

    # -- fusion ----------------------------------------------------------------------------
    def fused(self, s: exp.Select) -> n.Fused | None:
        """``s`` as one Fused leaf, where the kernel's translator takes it whole."""
        tables = [t for t in s.find_all(exp.Table)]
        if not tables or any(self._cte(t.name) is not None for t in tables):
            return None
        if any(t.name not in self.cat.tables and t.name not in self.cat.memory for t in tables):
            return None
        if any(isinstance(x, exp.Values | exp.Window | exp.Lateral) for x in s.walk()):
            return None
        names = []
        for item in s.expressions:
            if isinstance(item, exp.Star) or (isinstance(item, exp.Column)
                                              and isinstance(item.this, exp.Star)):
                if _arg(s, "joins") or len(tables) != 1:
                    return None
                t = tables[0].name
                if t not in self.cat.tables:
                    return None
                names += list(self.cat.tables[t])
            else:
                names.append(out_name(item))
        sql = s.sql(dialect=D)
        if not self.cat.fusable(sql):
            return None
        return n.Fused(sql, tuple(names))

    # -- SELECT ----------------------------------------------------------------------------
    def select(self, s: exp.Select, outer: tuple[n.ColName, ...] = ()) -> n.Node:
        with_ = _arg(s, "with")
        if with_ is not None:
            self._push_ctes(with_, outer)
            try:
                inner = s.copy()
                inner.set("with_", None)
                inner.set("with", None)
                return self.select(inner, outer)
            finally:
                self.scopes.pop()
        if not outer:
            f = self.fused(s)
            if f is not None:
                return f
        if s.args.get("distinct") is not None and s.args["distinct"].args.get("on"):
            if _arg(s, "from") is not None and any(_is_star(x) for x in s.expressions):
                s = s.copy()  # positions count the columns a * stands for
                s.set("expressions", self.expand(s.expressions, self.from_(s).cols))
            return self.select(_distinct_on(s), outer)
        if s.args.get("windows"):
            raise PlanError("a named WINDOW clause is not supported; write the window in OVER (...)")
        if any(j.args.get("using") for j in _arg(s, "joins") or []) and any(
                _is_star(x) for x in s.expressions):
            raise PlanError("SELECT * over a JOIN ... USING is not supported; name the columns")
        src = self.from_(s) if _arg(s, "from") is not None else n.Values(
            pa.table({"__one": pa.array([0], pa.int8())}), ("__one",), None, "one row")
        where = _arg(s, "where")
        if where is not None:
            cond, subs = self.subqueries(where.this, src.cols, filtered=True)
            if any(is_agg(x) for x in cond.walk()):
                raise PlanError("aggregate functions are not allowed in WHERE")
            src = n.Filter(src, cond, subs)
        items = self.expand(s.expressions, src.cols)
        names = [out_name(x) for x in items]
        exprs = [_unalias(x) for x in items]
        aliases = {x.alias.lower(): _unalias(x) for x in items if isinstance(x, exp.Alias)}

        def alias_ref(node):
            if isinstance(node, exp.Column) and not node.table and \
                    node.name.lower() in aliases and resolve(src.cols, node) is None:
                return aliases[node.name.lower()].copy()
            return node
        # a select alias in HAVING or QUALIFY means its expression (DuckDB)
        having = _arg(s, "having")
        having = _transform(having.this.copy(), alias_ref) if having is not None else None
        qualify = _arg(s, "qualify")
        qualify = _transform(qualify.this.copy(), alias_ref) if qualify is not None else None
        order = [o for o in (_arg(s, "order").expressions if _arg(s, "order") else [])]
        group = _arg(s, "group")
        aggs: list[exp.Expression] = []
        for x in (*exprs, *(o.this for o in order), *(y for y in (having, qualify) if y is not None)):
            collect_aggs(x, aggs)
        node = src
        if group is not None or aggs or having is not None:
            node, exprs, order, having, qualify = self.aggregate(
                src, s, group, aggs, exprs, names, order, having, qualify)
        if having is not None:
            having, subs = self.subqueries(having, node.cols)
            node = n.Filter(node, having, subs)
        wins: list[exp.Window] = []
        for x in (*exprs, *(o.this for o in order), *(y for y in (qualify,) if y is not None)):
            collect_windows(x, wins)
        if wins:
            node = n.Window(node, tuple(wins))
            pairs = [(w, col(f"__w{i}")) for i, w in enumerate(wins)]
            exprs = [replace(x, pairs) for x in exprs]
            order = [replace(o, pairs) for o in order]
            qualify = replace(qualify, pairs) if qualify is not None else None
        if qualify is not None:
            qualify, subs = self.subqueries(qualify, node.cols)
            node = n.Filter(node, qualify, subs)
        # ORDER BY: a select item (by ordinal, alias or equal expression), else hidden
        keys: list[tuple[int, bool, bool]] = []
        hidden: list[exp.Expression] = []
        low_names = [x.lower() for x in names]
        for o in order:
            t = o.this
            desc = bool(o.args.get("desc"))
            nf = bool(o.args.get("nulls_first"))
            if isinstance(t, exp.Literal) and t.is_string:
                raise PlanError(f"ORDER BY a constant ({t.sql(dialect=D)}) has no effect; "
                                "name a column or its position")
            if isinstance(t, exp.Literal) and not t.is_string:
                i = position(t, "ORDER BY") - 1
                if not 0 <= i < len(exprs):
                    raise PlanError(f"ORDER BY {t.this}: the select list has {len(exprs)} items")
            elif isinstance(t, exp.Column) and not t.table and t.name.lower() in low_names \
                    and low_names.count(t.name.lower()) == 1 and t.name.lower() in [
                        y.alias.lower() for y in items if isinstance(y, exp.Alias)] + low_names:
                i = low_names.index(t.name.lower())
            elif any(t == x for x in exprs):
                i = next(j for j, x in enumerate(exprs) if t == x)
            else:
                if s.args.get("distinct") is not None:
                    raise PlanError("for SELECT DISTINCT, ORDER BY expressions must appear in "
                                    "the select list")
                hidden.append(t)
                i = len(exprs) + len(hidden) - 1
            keys.append((i, desc, nf))
        all_exprs = [*exprs, *hidden]
        subs_all: list[n.SubPlan] = []
        proj = []
        for x in all_exprs:
            y, subs = self.subqueries(x, node.cols, base=len(subs_all))
            subs_all += subs
            proj.append(y)
        node = n.Project(node, tuple(proj), (*names, *(f"__h{i}" for i in range(len(hidden)))),
                         tuple(subs_all))
        if s.args.get("distinct") is not None:
            node = n.Distinct(node)
        if keys:
            node = n.Sort(node, tuple(keys))
        node = self.limit(s, node)
        if hidden:
            node = n.Select(node, len(exprs))
        return node

    def limit(self, s: exp.Expression, node: n.Node) -> n.Node:
        lim, off = _arg(s, "limit"), _arg(s, "offset")
        if lim is None and off is None:
            return node
        if lim is not None and lim.args.get("limit_options") is not None and \
                lim.args["limit_options"].args.get("percent"):
            raise PlanError("LIMIT ... % (a share of the rows) is not supported")
        return n.Limit(node, self._count(lim, "LIMIT"), self._count(off, "OFFSET") or 0)

    @staticmethod
    def _count(e, what: str) -> int | None:
        """LIMIT's or OFFSET's count: a constant expression cast to BIGINT as DuckDB casts it
        (a DOUBLE rounded half to even, a DECIMAL half away from zero, text read as a whole
        number), not negative."""
        if e is None:
            return None
        v = e.expression if isinstance(e, exp.Limit | exp.Offset) else e
        if isinstance(v, exp.Literal) and not v.is_string and v.this.isdigit() \
                and int(v.this) < 2**63:
            return int(v.this)
        if any(v.find_all(exp.Column, exp.Subquery, exp.Select)):
            raise PlanError(f"{what} takes a non-negative integer constant")
        lit = v.this if isinstance(v, exp.Neg) else v
        if isinstance(lit, exp.Literal) and not lit.is_string and not any(c in lit.this for c in "eE"):
            value = decimal.Decimal(lit.this) * (-1 if lit is not v else 1)  # a DECIMAL literal
        else:
            x = Evaluator(Rel.of([pa.array([0])], ((None, "__one"),))).eval(v)
            if isinstance(x, pa.Array) and len(x) == 1:
                x = x[0]
            if isinstance(x, pa.Scalar) and not x.is_valid:
                return None  # LIMIT NULL: no limit (OFFSET NULL: none), as in DuckDB
            value = x.as_py() if isinstance(x, pa.Scalar) else None
            if isinstance(value, bool):  # TRUE is 1
                value = int(value)
        if isinstance(value, str):  # text cast to BIGINT: a number, rounded as a DECIMAL
            try:
                value = decimal.Decimal(value.strip())
            except decimal.InvalidOperation:
                value = None
            if value is not None and not value.is_finite():
                value = None
        if isinstance(value, bool) or not isinstance(value, int | float | decimal.Decimal) or (
                isinstance(value, float) and not math.isfinite(value)):
            raise PlanError(f"{what} takes a non-negative integer constant")
        if isinstance(value, float):  # a DOUBLE's cast to BIGINT: half to even
            value = round(value)
        elif isinstance(value, decimal.Decimal):  # a DECIMAL's: half away from zero
            value = int(value.to_integral_value(rounding=decimal.ROUND_HALF_UP))
        if value >= 2**63:
            raise PlanError(f"{what} {value} is out of range for BIGINT")
        if value < 0:
            raise PlanError(f"{what} takes a non-negative integer constant")
        return value

    def expand(self, items: list[exp.Expression], cols: tuple[n.ColName, ...]) -> list[exp.Expression]:
        """The select list with ``*`` and ``t.*`` as the columns they name."""
        out: list[exp.Expression] = []
        for x in items:
            star_q, star = None, None
            if isinstance(x, exp.Star):
                star_q, star = "", x
            elif isinstance(x, exp.Column) and isinstance(x.this, exp.Star):
                star_q, star = x.table, x.this
            if star_q is None:
                out.append(x)
                continue
            if star.args.get("ilike"):
                raise PlanError(f"{x.sql(dialect=D)}: ILIKE after * is not supported")
            drop = {c.name.lower() for c in star.args.get("except_") or ()}
            swap = {a.alias.lower(): a for a in star.args.get("replace") or ()}
            renamed = {a.this.name.lower(): a.alias for a in star.args.get("rename") or ()}
            if set(renamed) & set(swap):
                raise PlanError(f"{x.sql(dialect=D)}: a column cannot be both replaced and "
                                "renamed")
            hit = [(q, nm) for q, nm in cols if not nm.startswith("__")
                   and (not star_q or (q or "").lower() == star_q.lower())]
            missing = sorted((drop | set(swap) | set(renamed)) - {nm.lower() for _, nm in hit})
            if missing:
                raise PlanError(f"{x.sql(dialect=D)}: no column {missing[0]!r} to exclude, "
                                "replace or rename")
            hit = [(q, nm) for q, nm in hit if nm.lower() not in drop]
            if not hit:
                raise PlanError(f"no columns match {x.sql(dialect=D)}")
            for q, nm in hit:
                if nm.lower() in swap:
                    out.append(exp.Alias(this=swap[nm.lower()].this.copy(),
                                         alias=exp.to_identifier(nm, quoted=True)))
                    continue
                c = exp.Column(this=exp.to_identifier(nm, quoted=True),
                               table=exp.to_identifier(q, quoted=True) if q else None)
                if nm.lower() in renamed:
                    out.append(exp.Alias(this=c, alias=exp.to_identifier(renamed[nm.lower()],
                                                                         quoted=True)))
                elif len(find(cols, nm, None)) > 1 and q:
                    out.append(exp.Alias(this=c, alias=exp.to_identifier(nm, quoted=True)))
                else:
                    out.append(c)
        return out

    # -- GROUP BY ------------------------------------------------------------------------------
    def aggregate(self, src, s, group, aggs, exprs, names, order, having, qualify):
        keys: list[exp.Expression] = []
        sets: list[tuple[int, ...]] | None = None

        def key_index(k: exp.Expression) -> int:
            k = self._group_item(k, exprs, names, src.cols)
            for i, x in enumerate(keys):
                if x == k:
                    return i
            keys.append(k)
            return len(keys) - 1

        if group is not None:
            if group.args.get("all"):
                for x in exprs:
                    probe: list[exp.Expression] = []
                    collect_aggs(x, probe)
                    if not probe and not isinstance(x, exp.Literal):
                        key_index(x)
            plain: list[int] = []
            multi: list[list[tuple[int, ...]]] = []
            for g in group.expressions:
                if isinstance(g, exp.Rollup | exp.Cube | exp.GroupingSets):
                    multi.append(self._sets(g, key_index))
                else:
                    plain.append(key_index(g))
            for kind in ("rollup", "cube", "grouping_sets"):
                for g in group.args.get(kind) or []:
                    multi.append(self._sets(g, key_index))
            if multi:
                combos: list[tuple[int, ...]] = [tuple(plain)]
                for m in multi:
                    combos = [tuple(dict.fromkeys((*c, *x))) for c in combos for x in m]
                sets = combos
        for a in aggs:
            for x in a.walk():
                if x is not a and is_agg(x) and not isinstance(a, exp.Filter | exp.IgnoreNulls
                                                               | exp.WithinGroup):
                    raise PlanError(f"aggregate function calls cannot be nested: {a.sql(dialect=D)}")
        node = n.Aggregate(src, tuple(keys), tuple(aggs), tuple(sets) if sets is not None else None)
        pairs = [(a, col(f"__a{j}")) for j, a in enumerate(aggs)] + \
                [(k, col(f"__k{i}")) for i, k in enumerate(keys)]
        norm = self._normer(src.cols)
        exprs = [self._grouped(replace(x, pairs, norm), x) for x in exprs]
        order2 = []
        low = [x.lower() for x in names]
        for o in order:
            t = o.this
            if (isinstance(t, exp.Literal) and not t.is_string) or (
                    isinstance(t, exp.Column) and not t.table and t.name.lower() in low):
                order2.append(o)  # a select item: resolved after the projection
            else:
                order2.append(self._grouped(replace(o, pairs, norm), o))
        having = self._grouped(replace(having, pairs, norm), having) if having is not None else None
        qualify = self._grouped(replace(qualify, pairs, norm), qualify) if qualify is not None else None
        return node, exprs, order2, having, qualify

    def _sets(self, g, key_index) -> list[tuple[int, ...]]:
        items = list(g.expressions)

        def idx(x) -> tuple[int, ...]:
            if isinstance(x, exp.Tuple):
                return tuple(key_index(y) for y in x.expressions)
            if isinstance(x, exp.Paren):
                return idx(x.this) if not isinstance(x.this, exp.Tuple) else idx(x.this)
            return (key_index(x),)

        if isinstance(g, exp.Rollup):
            ks = [idx(x) for x in items]
            return [tuple(k for part in ks[:i] for k in part) for i in range(len(ks), -1, -1)]
        if isinstance(g, exp.Cube):
            ks = [idx(x) for x in items]
            out = []
            for mask in range(2 ** len(ks) - 1, -1, -1):
                out.append(tuple(k for i, part in enumerate(ks) if mask >> (len(ks) - 1 - i) & 1
                                 for k in part))
            return out
        return [idx(x) for x in items]

    def _group_item(self, g: exp.Expression, exprs, names, cols) -> exp.Expression:
        """A GROUP BY item: an ordinal or a select alias as the select item it names."""
        if isinstance(g, exp.Literal) and not g.is_string:
            i = position(g, "GROUP BY") - 1
            if not 0 <= i < len(exprs):
                raise PlanError(f"GROUP BY {g.this}: the select list has {len(exprs)} items")
            return exprs[i]
        if isinstance(g, exp.Column) and not g.table and resolve(cols, g) is None:
            low = [x.lower() for x in names]
            if g.name.lower() in low:
                return exprs[low.index(g.name.lower())]
        if isinstance(g, exp.Paren):
            return self._group_item(g.this, exprs, names, cols)
        return g

    @staticmethod
    def _normer(cols):
        """Columns compared without their qualifier where the name alone is unambiguous."""
        def norm(e: exp.Expression) -> exp.Expression:
            if isinstance(e, exp.Column) and e.table and not isinstance(e.this, exp.Star):
                if len(find(cols, e.name, None)) == 1:
                    return exp.Column(this=exp.to_identifier(e.name.lower()))
                return e
            if not any(isinstance(x, exp.Column) for x in e.walk()):
                return e
            c = e.copy()
            for x in list(c.find_all(exp.Column)):
                if x.table and len(find(cols, x.name, None)) == 1:
                    x.replace(exp.Column(this=exp.to_identifier(x.name.lower())))
                elif not x.table:
                    x.replace(exp.Column(this=exp.to_identifier(x.name.lower())))
            return c
        return norm

    @staticmethod
    def _grouped(e: exp.Expression, original: exp.Expression) -> exp.Expression:
        """``e`` after its aggregates and keys were replaced: any column left is one that
        is neither grouped nor aggregated."""
        def bad(x) -> bool:
            return isinstance(x, exp.Column) and not isinstance(x.this, exp.Star) \
                and not x.name.startswith(("__a", "__k", "__w"))
        for x in e.walk():
            if isinstance(x, exp.Subquery | exp.Select):
                continue
            if bad(x) and not any(isinstance(p, exp.Subquery | exp.Select) for p in _parents(x)):
                raise PlanError(f"column {x.sql(dialect=D)!r} must appear in the GROUP BY clause "
                                "or be used in an aggregate function")
        return e

    # -- FROM ----------------------------------------------------------------------------------
    def from_(self, s: exp.Select) -> n.Node:
        f = _arg(s, "from")
        if f is None:
            raise PlanError("a SELECT needs FROM here")
        node = self.source(f.this)
        for j in _arg(s, "joins") or []:
            node = self.join(node, j)
        return node

    def source(self, t: exp.Expression) -> n.Node:
        if isinstance(t, exp.Table):
            if isinstance(t.this, exp.Anonymous | exp.Func):
                raise PlanError(f"table function {t.this.sql(dialect=D)[:60]} is not supported here")
            name = t.name
            alias = t.alias or name
            cols = tuple(c.name for c in (t.args["alias"].columns if t.args.get("alias") else []) or [])
            cte = self._cte(name)
            if cte is not None:
                return _renamed(cte, alias, cols)
            if name in self.cat.tables:
                node: n.Node = n.Scan(name, self.cat.tables[name], alias,
                                      decimals=self.cat.decimals.get(name, ()))
            elif name in self.cat.memory:
                tbl = self.cat.memory[name]
                node = n.Values(tbl, tuple(tbl.column_names), alias, label=f"table {name}")
            else:
                known = ", ".join(sorted({*self.cat.tables, *self.cat.memory}))
                raise PlanError(f"unknown table {name!r} (tables: {known})")
            return _renamed(node, alias, cols) if cols else node
        if isinstance(t, exp.Subquery):
            node = self.query(t.this)
            alias = t.alias or "unnamed_subquery"
            cols = tuple(c.name for c in (t.args["alias"].columns if t.args.get("alias") else []) or [])
            return _renamed(node, alias, cols)
        if isinstance(t, exp.Values):
            return self.values(t)
        raise PlanError(f"{t.key.upper()} in FROM is not supported")

    def values(self, v: exp.Values) -> n.Node:
        rows = [r.expressions if isinstance(r, exp.Tuple) else [r] for r in v.expressions]
        width = len(rows[0])
        if any(len(r) != width for r in rows):
            raise PlanError("every row of VALUES must have the same number of values")
        one = Rel.of([pa.array([0])], ((None, "__one"),))
        ev = Evaluator(one)
        arrays = []
        from bamql.plan.expr import _common

        for j in range(width):
            vals = _common([ev.eval(r[j]) for r in rows])
            t = vals[0].type
            arrays.append(pa.array([x.as_py() for x in vals], t if not pa.types.is_null(t) else None))
        alias = v.alias or "valueslist"
        cols = tuple(c.name for c in (v.args["alias"].columns if v.args.get("alias") else []) or [])
        names = cols or tuple(f"col{j}" for j in range(width))
        return n.Values(pa.Table.from_arrays(arrays, names=[f"c{j}" for j in range(width)]),
                        names, alias)

    def join(self, left: n.Node, j: exp.Join) -> n.Node:
        right = self.source(j.this)
        side = (j.args.get("side") or "").upper()
        kind = (j.args.get("kind") or "").upper()
        on = j.args.get("on")
        using = j.args.get("using")
        if kind in ("SEMI", "ANTI", "ASOF", "POSITIONAL") or j.args.get("method"):
            raise PlanError(f"{kind or j.args.get('method')} JOIN is not supported")
        if using:
            terms = []
            for u in using:
                name = u.name
                lq = [q for q, c in left.cols if c.lower() == name.lower()]
                rq = [q for q, c in right.cols if c.lower() == name.lower()]
                if not lq or not rq:
                    raise PlanError(f"USING ({name}): both sides need a column {name!r}")
                terms.append(exp.EQ(this=exp.Column(this=exp.to_identifier(name, quoted=True),
                                                    table=exp.to_identifier(lq[0], quoted=True)),
                                    expression=exp.Column(this=exp.to_identifier(name, quoted=True),
                                                          table=exp.to_identifier(rq[0], quoted=True))))
            on = exp.and_(*terms)
        jt = {"LEFT": n.JoinType.LEFT, "RIGHT": n.JoinType.RIGHT, "FULL": n.JoinType.FULL}.get(side)
        if jt is None:
            jt = n.JoinType.CROSS if on is None else n.JoinType.INNER
        if on is not None and any(isinstance(x, exp.Subquery | exp.Exists) for x in on.walk()):
            raise PlanError("a subquery in a join condition is not supported")
        return n.Join(left, right, jt, on)

    # -- set operations -----------------------------------------------------------------------
    def setop(self, e, outer) -> n.Node:
        kind = {exp.Union: n.SetKind.UNION, exp.Intersect: n.SetKind.INTERSECT,
                exp.Except: n.SetKind.EXCEPT}[type(e)]
        if e.args.get("by_name"):
            raise PlanError("UNION BY NAME is not supported")
        left, right = self.query(e.this, outer), self.query(e.expression, outer)
        if len(left.cols) != len(right.cols):
            raise PlanError(f"{kind.value}: the two sides have {len(left.cols)} and "
                            f"{len(right.cols)} columns")
        node: n.Node = n.SetOp(left, right, kind, bool(e.args.get("distinct", True)))
        order = _arg(e, "order")
        if order is not None:
            names = [c.lower() for _, c in node.cols]
            keys = []
            for o in order.expressions:
                t = o.this
                if isinstance(t, exp.Literal) and not t.is_string:
                    i = position(t, "ORDER BY") - 1
                elif isinstance(t, exp.Column) and t.name.lower() in names:
                    i = names.index(t.name.lower())
                else:
                    raise PlanError("ORDER BY of a UNION names an output column or its position")
                if not 0 <= i < len(names):
                    raise PlanError(f"ORDER BY {i + 1}: the query has {len(names)} columns")
                keys.append((i, bool(o.args.get("desc")), bool(o.args.get("nulls_first"))))
            node = n.Sort(node, tuple(keys))
        return self.limit(e, node)

def _renamed(node: n.Node, alias: str, names: tuple[str, ...]) -> n.Alias:
    """``node`` as ``alias(names...)``: its first columns renamed, by position."""
    if len(names) > len(node.cols):
        raise PlanError(f"table {alias} has {len(node.cols)} columns available but "
                        f"{len(names)} columns specified")
    return n.Alias(node, alias, names)


def build(tree: exp.Expression, catalog: Catalog) -> n.Node:
    """The logical plan of a parsed statement."""
    return Builder(catalog).query(tree)
