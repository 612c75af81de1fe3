"""SQL text -> logical IR, with sqlglot: the query level (one SELECT over one table, its
GROUP BY, aggregates, HAVING, ORDER BY and LIMIT) over the expressions of
``sql.expressions``. Anything bamql cannot run fails here, with one line naming the
construct and where it is in the query."""

from __future__ import annotations

import dataclasses
import re
import sys
from collections.abc import Callable, Mapping

import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from bamql.errors import TREE_ONLY, PlanError
from bamql.fused import ir
from bamql.sql import row_queries, scalars
from bamql.sql.ctes import inline_ctes
from bamql.sql.expressions import AGGREGATES, ARITH_OPS, CMP_OPS, ExprTranslator
from bamql.storage.format import ColumnMeta
from bamql.storage.sqltypes import DOUBLE_EXACT

#: Most slots the kernel's dense accumulators take for a GROUP BY (one per possible key);
#: a GROUP BY of more is hash-aggregated (``sql.grouping``).
MAX_GROUPS = 1 << 20

#: The most nodes an aggregate's argument may have: it is compiled into the query's kernel,
#: whose compile time grows faster than linearly with its length.
MAX_AGG_NODES = 200

#: Aggregate functions in the select list, HAVING and ORDER BY: ``AGGREGATES`` and the
#: variances (STDDEV and VARIANCE are the sample ones, as in DuckDB).
QUERY_AGGREGATES = {**AGGREGATES, exp.Stddev: "stddev_samp", exp.StddevSamp: "stddev_samp",
                    exp.StddevPop: "stddev_pop", exp.Variance: "var_samp",
                    exp.VariancePop: "var_pop", **row_queries.QUANTILE_NODES,
                    exp.WithinGroup: "quantile"}

#: Python frames translation may use (see ``translate``)
_RECURSION_LIMIT = 6000


class Translator(ExprTranslator):
    """SQL text -> logical IR. The dataframe API (``api.frame``) builds SQL and runs it
    through here, so both accept and refuse the same things."""

    def __init__(self, sql: str, catalog: Mapping[str, Mapping[str, ColumnMeta]]) -> None:
        super().__init__(sql, catalog)
        #: an aggregate of a DECIMAL's integers -> the DECIMAL it gives (SUM, MIN, MAX, a
        #: quantile) or
        #: the scale its double is divided by (AVG: a DOUBLE)
        self.agg_decs: dict[ir.Agg, ir.Dec | int] = {}

    # -- statements --------------------------------------------------------------------
    def query(self) -> ir.Query | ir.RowQuery:
        try:
            stmts = [s for s in sqlglot.parse(self.text, read="duckdb") if s is not None]
        except (ParseError, TokenError) as e:
            msg = str(e).strip().splitlines()[0]
            if "<class" in msg:  # sqlglot names its own node class: keep only the position
                at = re.search(r"Line (\d+), Col: (\d+)", msg)
                msg = f"at line {at[1]}, column {at[2]}" if at else "in the query"
                raise PlanError(f"SQL syntax error {msg}") from None
            raise PlanError(f"SQL syntax error: {msg}") from None
        if len(stmts) != 1:
            raise PlanError(f"expected one SQL statement, got {len(stmts)}")
        s = stmts[0]
        if not isinstance(s, exp.Select):
            raise self.fail(f"only SELECT queries are supported, not {s.key.upper()}", s)
        for star in s.find_all(exp.Star):
            mod = next((m for m in ("except_", "replace", "rename", "ilike") if star.args.get(m)),
                       None)
            if mod is not None:
                word = {"except_": "EXCLUDE"}.get(mod, mod.upper())
                raise self.fail(f"SELECT * {word} is not supported by the fused kernels", star)
        s = self.distinct_as_group_by(inline_ctes(s, self.fail))
        for arg, what in (("windows", "WINDOW"), ("qualify", "QUALIFY")):
            if s.args.get(arg) or s.args.get(arg.rstrip("_")):
                node = s.args.get(arg) or s.args.get(arg.rstrip("_"))
                node = node[0] if isinstance(node, list) else node
                raise self.fail(f"{what} is not supported", node if isinstance(node, exp.Expression)
                                else s)
        for sub in s.find_all(exp.Subquery, exp.Window, exp.Join, exp.Union):
            if isinstance(sub, exp.Join) and sub.parent is s:
                continue  # the query's own joins: ``bind``
            if isinstance(sub, exp.Subquery) and isinstance(sub.parent, exp.In) \
                    and sub.parent.args.get("query") is sub:
                continue  # x IN (SELECT ...): ``in_subquery``
            raise self.fail(f"{sub.key.upper()} is not supported (bamql runs single-table "
                            "filter-aggregate queries)", sub)
        frm = s.args.get("from_") or s.args.get("from")
        if frm is None:
            raise PlanError("the query needs FROM <table>")
        t = frm.this
        if not isinstance(t, exp.Table) or not isinstance(t.this, exp.Identifier):
            raise self.fail("FROM must name one table", t)
        for tab in (t, *(j.this for j in s.args.get("joins") or ())):
            alias = tab.args.get("alias") if isinstance(tab, exp.Table) else None
            if alias is not None and alias.columns:  # t(a, b) renames columns by position
                raise self.fail(f"column names after the alias {alias.name} {TREE_ONLY}", tab)
        self.table = t.name
        if self.table not in self.catalog:
            raise self.unknown_table(t)
        self.cols = self.catalog[self.table]
        self.qualifier = t.alias_or_name
        self.bind(s)

        where = s.args.get("where")
        pred = self.bool_expr(where.this) if where is not None else None
        if row_queries.is_row_query(s, tuple(QUERY_AGGREGATES)):  # no group, no aggregate
            return row_queries.row_query(self, s, pred)

        items = list(s.expressions)
        if any(isinstance(i, exp.Star) for i in items):
            raise self.fail("SELECT * is not supported: name the aggregates to compute",
                            next(i for i in items if isinstance(i, exp.Star)))
        aliases = {i.alias: i.this for i in items if isinstance(i, exp.Alias)}

        keys: list[ir.Expr] = []
        group = s.args.get("group")
        if group is not None and group.args.get("all"):  # the select list's non-aggregates
            for item in items:
                node = item.unalias()
                if not any(isinstance(n, tuple(QUERY_AGGREGATES)) for n in node.walk()):
                    if (k := self.key_expr(node)) not in keys:
                        keys.append(k)
        elif group is not None:
            for g in group.expressions:
                node = g
                if isinstance(g, exp.Literal) and not g.is_string:
                    if not g.this.isdigit():
                        raise self.fail("GROUP BY position must be a whole number", g)
                    k = int(g.this)
                    if not 1 <= k <= len(items):
                        raise self.fail(f"GROUP BY position {k} is not in the select list", g)
                    node = items[k - 1].unalias()
                elif isinstance(g, exp.Column) and g.name in aliases and g.name not in self.cols:
                    node = aliases[g.name]
                keys.append(self.key_expr(node))

        aggs: list[ir.Agg] = []
        names, exprs = [], []
        for item in items:
            node = item.unalias() if isinstance(item, exp.Alias) else item
            name = item.alias if isinstance(item, exp.Alias) else item.sql(dialect="duckdb")
            names.append(name)
            exprs.append(self.outer(node, keys, aggs))
        having = None
        if s.args.get("having") is not None:
            having = self.outer(s.args["having"].this, keys, aggs, names=names, exprs=exprs)
            if having.kind in ("int", "float"):  # a number as DuckDB casts it to BOOLEAN
                having = self.as_condition(having, s.args["having"])
            if having.kind != "bool":
                raise self.fail("HAVING needs a condition", s.args["having"])
        if not aggs and not keys:
            raise self.fail("bamql answers aggregate queries: SELECT needs aggregates "
                            "(COUNT, SUM, AVG, MIN, MAX) or a GROUP BY", s)
        order = []
        shown = len(exprs)  # ORDER BY terms beyond the select list come after it, hidden
        if s.args.get("order") is not None:
            for o in s.args["order"].expressions:
                order.append((self.order_index(o.this, names, exprs, keys, aggs), bool(o.args.get("desc")),
                              bool(o.args.get("nulls_first"))))
        return ir.Query(self.table, pred, tuple(keys), tuple(aggs), tuple(names), tuple(exprs),
                        having, tuple(order), row_queries.clause_count(self, s, "limit"),
                        row_queries.clause_count(self, s, "offset") or 0, len(exprs) - shown)

    def distinct_as_group_by(self, s: exp.Select) -> exp.Select:
        """``SELECT DISTINCT a, b ...`` as ``SELECT a, b ... GROUP BY a, b`` (the same rows);
        DISTINCT ON, and DISTINCT over aggregates or a GROUP BY, are refused."""
        d = s.args.get("distinct")
        if d is None:
            return s
        if d.args.get("on") is not None:
            raise self.fail("SELECT DISTINCT ON is not supported", d)
        if s.args.get("group") is not None or any(
                isinstance(n, tuple(AGGREGATES) + (exp.AggFunc,))
                for i in s.expressions for n in i.walk()):
            raise self.fail("SELECT DISTINCT with aggregates or GROUP BY is not supported", d)
        if any(isinstance(i, exp.Star) for i in s.expressions):
            raise self.fail("SELECT DISTINCT * is not supported: name the columns", d)
        s = s.copy()
        s.set("distinct", None)
        s.set("group", exp.Group(expressions=[i.unalias().copy() for i in s.expressions]))
        return s

    def unknown_table(self, t: exp.Table) -> PlanError:
        """The error for a FROM table that is not in the catalog."""
        known = ", ".join(sorted(self.catalog)) or "none"
        return self.fail(f"unknown table {t.name!r} (tables: {known})", t)

    def bind(self, s: exp.Select) -> None:
        """Bind what FROM adds to the table's columns: here nothing, so a JOIN is refused
        (``sql.joins`` binds joins with registered dimension tables)."""
        if s.args.get("joins"):
            raise self.fail("JOIN is not supported", s.args["joins"][0])

    def order_index(self, node, names, exprs, keys, aggs) -> int:
        if isinstance(node, exp.Literal) and not node.is_string:
            if not node.this.isdigit():
                raise self.fail("ORDER BY position must be a whole number", node)
            k = int(node.this)
            if not 1 <= k <= len(names):
                raise self.fail(f"ORDER BY position {k} is not in the select list", node)
            return k - 1
        if isinstance(node, exp.Column) and node.name in names:
            return names.index(node.name)
        e = self.outer(node, keys, aggs, names=names, exprs=exprs)
        if e in exprs:
            return exprs.index(e)
        # an expression over the groups beyond the select list: ordered by, not output
        exprs.append(e)
        names.append(f"__order{len(exprs)}")
        return len(exprs) - 1

    # -- group keys and aggregates ----------------------------------------------------
    def key_expr(self, node) -> ir.Expr:
        e = self.expr(node)
        if isinstance(e, ir.Dec):  # grouped by its integers, exactly; output as the DECIMAL
            e = e.left  # (``outer`` finds the DECIMAL's integers among the keys)
        return self.key_of(e, node)

    def key_of(self, e: ir.Expr, node) -> ir.Expr:
        """``e`` as a group key, or the error that says what a key may be (SQL and frames).
        Keys the kernel cannot group by go to the hash-aggregation step (``sql.grouping``)."""
        if isinstance(e, ir.Lit):
            raise self.fail("GROUP BY a constant is not supported", node)
        if e.kind == "string" and not isinstance(e, ir.Col):
            raise self.fail("GROUP BY a string expression is not supported: group by a string "
                            "column", node)
        if e.kind not in ("int", "float", "timestamp", "string", "bool"):
            raise self.fail(f"GROUP BY a {e.kind} expression is not supported", node)
        return e

    # -- after aggregation -------------------------------------------------------------
    def outer_literal(self, lit: ir.Expr, other: ir.Expr, keys, aggs, node) -> ir.Expr:
        """A string constant compared with a timestamp over the groups (``HAVING MAX(ts) >
        '2019-01-05'``) as the timestamp it names, or the DATE where ``other`` is one (its
        day, as DuckDB casts the text to DATE); anything else as it is."""
        if not (isinstance(lit, ir.Lit) and isinstance(lit.value, str)
                and other.kind == "timestamp"):  # over the groups a string constant is kind string
            return lit
        if isinstance(other, ir.AggRef):
            other = aggs[other.index]
        elif isinstance(other, ir.KeyRef):
            other = keys[other.index]
        return self.coerce_literal(ir.Lit(lit.value, "strlit"), other, node)

    def outer(self, node, keys, aggs, names=None, exprs=None) -> ir.Expr:
        """An expression over group keys and aggregates (select list, HAVING, ORDER BY)."""
        if isinstance(node, exp.Paren):
            return self.outer(node.this, keys, aggs, names, exprs)
        if isinstance(node, tuple(QUERY_AGGREGATES)) or (
                isinstance(node, exp.Filter) and isinstance(node.this, tuple(QUERY_AGGREGATES))):
            a = self.aggregate(node)
            if a not in aggs:
                aggs.append(a)
            ref = ir.AggRef(aggs.index(a), a.kind)
            d = self.agg_decs.get(a)
            if isinstance(d, ir.Dec):  # SUM, MIN, MAX of a DECIMAL's integers: the DECIMAL
                return dataclasses.replace(d, left=ref)
            if d is not None:  # AVG of its integers: a DOUBLE, divided by 10**scale
                return ir.Arith("/", ref, ir.Lit(float(10**d), "float"), "float")
            return ref
        if isinstance(node, exp.Column) and names is not None and node.name in names \
                and node.name not in self.cols:
            return exprs[names.index(node.name)]
        if self.over_aggregates(node, names):
            # rebuild arithmetic/comparisons over aggregates and select-list aliases
            for cls, op in ARITH_OPS.items():
                if isinstance(node, cls):
                    a = self.outer(node.this, keys, aggs, names, exprs)
                    b = self.outer(node.expression, keys, aggs, names, exprs)
                    # a timestamp's or a DATE's (MAX(d) - MIN(d): days) is the plan tree's
                    self.need_numeric(a, node.this)
                    self.need_numeric(b, node.expression)
                    if op != "/" and (isinstance(a, ir.Dec) or isinstance(b, ir.Dec)):
                        exact = self.decimal_arith(op, a, b, node)
                        if exact is not None:
                            return exact
                    kind = "float" if op == "/" or "float" in (a.kind, b.kind) else "int"
                    return ir.Arith(op, a, b, kind)
            for cls, op in CMP_OPS.items():
                if isinstance(node, cls):
                    a = self.outer(node.this, keys, aggs, names, exprs)
                    b = self.outer(node.expression, keys, aggs, names, exprs)
                    a, b = self.outer_literal(a, b, keys, aggs, node), \
                        self.outer_literal(b, a, keys, aggs, node)
                    if isinstance(a, ir.Dec) or isinstance(b, ir.Dec):  # exactly
                        exact = self.decimal_compare(op, a, b, node)
                        if exact is not None:
                            return exact
                    self.check_decimal_literal(a, b, node)
                    self.check_decimal_literal(b, a, node)
                    return ir.Cmp(op, a, b)
            if isinstance(node, exp.And | exp.Or):
                parts = (self.outer_condition(node.this, keys, aggs, names, exprs),
                         self.outer_condition(node.expression, keys, aggs, names, exprs))
                return ir.And(parts) if isinstance(node, exp.And) else ir.Or(parts)
            if isinstance(node, exp.Not):
                return ir.Not(self.outer_condition(node.this, keys, aggs, names, exprs))
            if isinstance(node, exp.Neg):
                a = self.outer(node.this, keys, aggs, names, exprs)
                if isinstance(a, ir.Dec):
                    return dataclasses.replace(a, left=ir.Neg(a.left, "int"))
                return ir.Neg(a, a.kind)
            if isinstance(node, scalars.NODES):
                return scalars.scalar(self, node, lambda n: self.outer(n, keys, aggs, names, exprs))
            raise self.fail(f"{type(node).__name__.upper()} over aggregates is not supported", node)
        e = self.expr(node)
        if isinstance(e, ir.Lit):
            return ir.Lit(e.value, "string") if e.kind == "strlit" else e
        if isinstance(e, ir.Dec) and e.left in keys:  # a DECIMAL key: its integers grouped
            return dataclasses.replace(e, left=ir.KeyRef(keys.index(e.left), "int"))
        if e in keys:
            return ir.KeyRef(keys.index(e), e.kind)
        if isinstance(node, scalars.NODES):  # a function of group keys
            return scalars.scalar(self, node, lambda n: self.outer(n, keys, aggs, names, exprs))
        cols = ir.columns_of(e)
        if cols:
            raise self.fail(f"column {cols[0]!r} must appear in GROUP BY or inside an aggregate", node)
        raise self.fail("expression is not supported in the select list", node)

    def outer_condition(self, node, keys, aggs, names=None, exprs=None) -> ir.Expr:
        """An operand of AND, OR or NOT over the groups: a condition, or a number as DuckDB
        casts it to BOOLEAN (true where it is not zero); anything else is refused."""
        e = self.outer(node, keys, aggs, names, exprs)
        if e.kind == "bool":
            return e
        if isinstance(e, ir.Dec):  # a DECIMAL is zero where its integer is
            return ir.Cmp("<>", e.left, ir.Lit(0, "int"))
        if e.kind in ("int", "float"):
            return ir.Cmp("<>", e, ir.Lit(0, "int"))
        what = {"string": "string", "strlit": "string", "null": "NULL"}.get(e.kind, e.kind)
        raise self.fail(f"AND, OR and NOT take conditions, not a {what}", node)

    def over_aggregates(self, node, names) -> bool:
        """Whether ``node`` reads an aggregate or a select-list alias (HAVING and ORDER BY may
        name an output column, as in DuckDB), so it is evaluated after aggregation."""
        return any(isinstance(n, tuple(QUERY_AGGREGATES)) or (
            names is not None and isinstance(n, exp.Column) and n.name in names
            and n.name not in self.cols) for n in node.walk())

    def aggregate(self, node) -> ir.Agg:
        """An aggregate call, with its ``FILTER (WHERE ...)`` if it has one."""
        if isinstance(node, exp.Filter):
            cond = node.expression.this if isinstance(node.expression, exp.Where) else node.expression
            if any(isinstance(n, tuple(QUERY_AGGREGATES)) for n in cond.walk()):
                raise self.fail("aggregates cannot be nested", node)
            if ir.size(f := self.bool_expr(cond)) > MAX_AGG_NODES:
                raise self.fail(f"the FILTER condition is too large ({ir.size(f)} terms; "
                                f"at most {MAX_AGG_NODES})", node)
            a = self.aggregate(node.this)
            out = dataclasses.replace(a, filter=f)
            if a in self.agg_decs:
                self.agg_decs[out] = self.agg_decs[a]
            return out
        if isinstance(node, tuple(row_queries.QUANTILE_NODES) + (exp.WithinGroup,)):
            return row_queries.quantile_agg(self, node)
        func = QUERY_AGGREGATES[type(node)]
        arg = node.this
        if func == "count" and (arg is None or isinstance(arg, exp.Star)):
            return ir.Agg("count", None, "int")
        if isinstance(arg, exp.Distinct):
            return self.distinct_agg(func, arg, node)
        if node.args.get("expressions"):
            raise self.fail(f"{func.upper()} takes one argument", node)
        if any(isinstance(n, tuple(QUERY_AGGREGATES)) for n in arg.walk()):
            raise self.fail("aggregates cannot be nested", node)
        return self.agg_of(func, self.expr(arg), node)

    def distinct_agg(self, func: str, d: exp.Distinct, node) -> ir.Agg:
        """``COUNT(DISTINCT c)`` of a group-key column ``c`` (``sql.distinct`` runs it
        grouped by ``c`` as well); ``MIN``/``MAX(DISTINCT x)`` are ``MIN``/``MAX(x)``."""
        args = d.expressions
        if len(args) != 1 or d.args.get("on") is not None:
            raise self.fail(f"{func.upper()}(DISTINCT ...) takes one column", node)
        if any(isinstance(n, tuple(QUERY_AGGREGATES)) for n in args[0].walk()):
            raise self.fail("aggregates cannot be nested", node)
        e = self.expr(args[0])
        if func in ("min", "max"):
            return self.agg_of(func, e, node)
        if isinstance(e, ir.Dec) and isinstance(e.left, ir.Col):  # distinct as its integers
            e = e.left
        if func != "count":
            raise self.fail(f"{func.upper()}(DISTINCT ...) is not supported (COUNT(DISTINCT) "
                            "is)", node)
        if not (isinstance(e, ir.Col) and e.kind in ("int", "string")
                or isinstance(e, ir.Extract) and ir.EXTRACT_PARTS[e.part] is not None):
            txt = args[0].sql(dialect="duckdb")
            raise self.fail(f"COUNT(DISTINCT {txt}): {txt} is a {e.kind} expression without a "
                            "small domain; COUNT(DISTINCT) takes an integer or dictionary-string "
                            "column, or EXTRACT of a timestamp's field other than YEAR", node)
        return ir.Agg(ir.COUNT_DISTINCT, e, "int")

    def agg_of(self, func: str, e: ir.Expr, node) -> ir.Agg:
        """The aggregate ``func`` of ``e`` (not COUNT(*)), or the error that says why not: the
        one set of rules for SQL and the dataframe API."""
        if isinstance(e, ir.Lit):
            raise self.fail(f"{func.upper()} of a constant is not supported", node)
        if ir.size(e) > MAX_AGG_NODES:  # compiled into the kernel: its length is compile time
            raise self.fail(f"the argument of {func.upper()} is too large ({ir.size(e)} terms; "
                            f"at most {MAX_AGG_NODES})", node)
        if isinstance(e, ir.Dec) and func in ("count", "sum", "min", "max", "avg"):
            # of the DECIMAL's integers, exactly (a SUM in 128 bits), scaled after
            a = self.agg_of(func, e.left, node)
            if func in ("sum", "min", "max"):
                big = func == "sum"
                self.agg_decs[a] = dataclasses.replace(
                    e, bound=10**38 if big else e.bound, precision=38 if big else e.precision)
            elif func == "avg":
                self.agg_decs[a] = e.scale
            return a
        if func == "count":
            return ir.Agg("count", e, "int")
        if func in ("sum", "avg", *ir.VARIANCES):
            if func == "avg" and e.kind == "timestamp":
                raise self.fail(f"AVG of a timestamp {TREE_ONLY}", node)
            if e.kind not in ("int", "float"):
                raise self.fail(f"{func.upper()} needs a number, got {e.kind}", node)
            return ir.Agg(func, e, "int" if func == "sum" and e.kind == "int" else "float")
        if e.kind == "bool":
            raise self.fail(f"{func.upper()} of a condition is not supported", node)
        return ir.Agg(func, e, e.kind)


def translate(sql: str, catalog: Mapping[str, Mapping[str, ColumnMeta]],
              translator: Callable[..., Translator] = Translator):
    """Translate SQL text into a logical query over ``catalog`` (table -> columns), with
    ``translator(sql, catalog)`` (a subclass of ``Translator`` may translate more)."""
    if not sql or not sql.strip():
        raise PlanError("empty query")
    # sqlglot's parser recurses about 16 frames per level of parentheses: Python's default
    # limit of 1,000 stops at ~60 levels, which a generated query reaches
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    try:
        q = translator(sql, catalog).query()
        _refuse_inexact_decimals(q)
        return q
    except RecursionError:
        raise PlanError("the query nests too deeply (parentheses, NOT or arithmetic some "
                        "hundreds of levels deep); write it flatter") from None


def _refuse_inexact_decimals(q) -> None:
    """Refuse ``q`` where it computes with the double of a DECIMAL that may round (its
    integers reach 10**15: more significant digits than a double holds) where DuckDB keeps
    the DECIMAL exact: under FLOOR, CEIL, ROUND, CASE or a quantile. Comparisons,
    arithmetic, ABS, SUM, MIN, MAX, keys and outputs are exact (their integers); a double
    where DuckDB makes one too (a division, AVG, a comparison with a DOUBLE) is DuckDB's
    own double, ``float(integers) / 10**scale``."""
    if isinstance(q, ir.Query | ir.RowQuery):  # output exactly, as DECIMALs: their integers
        q = dataclasses.replace(q, exprs=tuple(e.left if isinstance(e, ir.Dec) else e
                                               for e in q.exprs))
    for x in _exprs_in(q):
        if isinstance(x, ir.Math | ir.Case) or (isinstance(x, ir.Agg) and x.func in ir.QUANTILES):
            # what DuckDB keeps a DECIMAL (FLOOR, CASE, a quantile of one) computed as a double
            for d in x.children():
                if isinstance(d, ir.Dec) and d.bound >= DOUBLE_EXACT:
                    what = (x.func.upper() if isinstance(x, ir.Math | ir.Agg)
                            else "CASE (or COALESCE, NULLIF)")
                    raise PlanError(
                        f"DECIMAL column {d.source!r} holds values of more than 15 significant "
                        f"digits, which a double does not hold exactly, and {what} of it "
                        "computes with doubles here, where DuckDB keeps the decimal exact; "
                        "bamql keeps it exact in comparisons, +, -, *, ABS, SUM, MIN, MAX, "
                        "GROUP BY and the select list; CAST it to DOUBLE to accept the rounding")


def _exprs_in(q):
    """Every expression node of a translated query (any dataclass of them), without
    recursion; an IN list's constants are not visited."""
    todo = [q]
    while todo:
        x = todo.pop()
        if isinstance(x, ir.Expr):
            yield x
            todo.extend((x.arg,) if isinstance(x, ir.InList) else x.children())
        elif isinstance(x, tuple | list):
            todo.extend(x)
        elif dataclasses.is_dataclass(x) and not isinstance(x, type):
            todo.extend(getattr(x, f.name) for f in dataclasses.fields(x))
