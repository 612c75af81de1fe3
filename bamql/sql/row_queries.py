"""SQL -> IR for what the aggregate kernel does not compute: queries that return rows
(``SELECT col, ... WHERE ... ORDER BY ... LIMIT n OFFSET m``) and exact quantiles (MEDIAN,
quantile_cont, quantile_disc). Both run in ``exec.rows``, on the matching rows' values."""

from __future__ import annotations

from sqlglot import exp

from bamql.errors import TREE_ONLY
from bamql.fused import ir
from bamql.sql.expressions import ExprTranslator as Translator
from bamql.sql.valuetypes import column_value

#: sqlglot's nodes of the quantile aggregates -> ``ir.QUANTILES`` name
QUANTILE_NODES = {exp.Median: "median", exp.PercentileCont: "quantile_cont",
                  exp.PercentileDisc: "quantile_disc"}


def is_row_query(s: exp.Select, aggregates: tuple[type, ...]) -> bool:
    """Whether ``s`` returns rows: no GROUP BY, HAVING or aggregate anywhere in it."""
    if s.args.get("group") is not None or s.args.get("having") is not None:
        return False
    parts = [*s.expressions, *(s.args["order"].expressions if s.args.get("order") else ())]
    return not any(isinstance(n, aggregates) for p in parts for n in p.walk())


def row_query(t: Translator, s: exp.Select, pred: ir.Expr | None) -> ir.RowQuery:
    """The row query of ``s`` (``is_row_query``), with its WHERE already translated."""
    names: list[str] = []
    aliased: set[int] = set()  # positions of names that are AS aliases
    exprs: list[ir.Expr] = []
    for item in s.expressions:
        star = item if isinstance(item, exp.Star) else (
            item.this if isinstance(item, exp.Column) and isinstance(item.this, exp.Star) else None)
        if star is not None:
            if isinstance(item, exp.Column) and item.table and item.table != t.qualifier:
                raise t.fail(f"{item.sql(dialect='duckdb')}: only {t.qualifier}.* is supported",
                             item)
            if star.args.get("except") or star.args.get("replace") or star.args.get("rename"):
                raise t.fail("SELECT * EXCLUDE/REPLACE/RENAME is not supported", item)
            for name, meta in t.cols.items():
                names.append(name)
                exprs.append(column_value(name, meta))  # a DECIMAL's value, not its integers
            continue
        node = item.unalias() if isinstance(item, exp.Alias) else item
        if isinstance(item, exp.Alias):
            aliased.add(len(names))
            names.append(item.alias)
        elif isinstance(item, exp.Column):
            names.append(item.name)
        else:
            names.append(item.sql(dialect="duckdb"))
        exprs.append(_value(t, node))
    order = []
    if s.args.get("order") is not None:
        for o in s.args["order"].expressions:
            e = _order_expr(t, o.this, names, exprs, aliased)
            if isinstance(e, ir.Dec):  # a DECIMAL orders as its integers, exactly
                e = e.left
            order.append((e, bool(o.args.get("desc")), bool(o.args.get("nulls_first"))))
    return ir.RowQuery(t.table, pred, tuple(names), tuple(exprs), tuple(order),
                       clause_count(t, s, "limit"), clause_count(t, s, "offset") or 0)


def _value(t: Translator, node) -> ir.Expr:
    """A select-list or ORDER BY expression over one row."""
    e = t.expr(node)
    if e.kind == "strlit":
        return ir.Lit(e.value, "string")
    if e.kind == "null":
        return ir.Lit(None, "int")
    if isinstance(e, ir.Lit) and e.kind == "string":
        raise t.fail("a string constant compared into a column's codes is not supported here",
                     node)
    return e


def _order_expr(t: Translator, node, names: list[str], exprs: list[ir.Expr],
                aliased: set[int]) -> ir.Expr:
    """An ORDER BY term: a select-list position, an output name, or an expression."""
    if isinstance(node, exp.Literal) and not node.is_string:
        if not node.this.isdigit():
            raise t.fail("ORDER BY position must be a whole number", node)
        k = int(node.this)
        if not 1 <= k <= len(names):
            raise t.fail(f"ORDER BY position {k} is not in the select list", node)
        return exprs[k - 1]
    if isinstance(node, exp.Column) and not node.table:
        # as DuckDB binds it: a select-list alias before a column of that name, the last
        # alias of several, names compared case-insensitively
        hits = [i for i, n in enumerate(names) if i in aliased and n.lower() == node.name.lower()]
        if hits:
            return exprs[hits[-1]]
    e = _value(t, node)
    if isinstance(e, ir.Lit):
        raise t.fail("ORDER BY a constant is not supported", node)
    return e


def clause_count(t: Translator, s: exp.Select, arg: str) -> int | None:
    """LIMIT's or OFFSET's non-negative integer, None where the query has none."""
    node = s.args.get(arg)
    if node is None:
        return None
    n = node.expression
    options = node.args.get("limit_options")
    if options is not None and options.args.get("percent"):
        raise t.fail(f"{arg.upper()} ... % (a share of the rows) is not supported", node)
    whole = isinstance(n, exp.Literal) and not n.is_string and n.this.isdigit()
    if not whole and not any(n.find_all(exp.Column, exp.Select)):  # 7 // 2, 3.0, '3'
        raise t.fail(f"{arg.upper()} of an expression {TREE_ONLY}", node)
    if not whole:
        raise t.fail(f"{arg.upper()} needs a non-negative integer", node)
    if int(n.this) >= 2**63:
        raise t.fail(f"{arg.upper()} {n.this} is out of range for BIGINT", node)
    return int(n.this)


def quantile_agg(t: Translator, node) -> ir.Agg:
    """``MEDIAN(x)``, ``quantile_cont(x, q)``, ``quantile_disc(x, q)`` or
    ``percentile_cont(q) WITHIN GROUP (ORDER BY x)`` (and ``_disc``) as an ``ir.Agg``."""
    if isinstance(node, exp.WithinGroup):
        inner, order = node.this, node.expression
        if not isinstance(inner, exp.PercentileCont | exp.PercentileDisc) or \
                not isinstance(order, exp.Order) or len(order.expressions) != 1:
            raise t.fail("WITHIN GROUP takes percentile_cont(q) or percentile_disc(q) and one "
                         "ORDER BY expression", node)
        o = order.expressions[0]
        if o.args.get("desc"):
            raise t.fail("WITHIN GROUP (ORDER BY ... DESC) is not supported: use 1 - q", node)
        func, arg, q = QUANTILE_NODES[type(inner)], o.this, inner.this
    else:
        func = QUANTILE_NODES[type(node)]
        arg, q = node.this, node.args.get("expression")
        if func == "median":
            if q is not None or node.args.get("expressions"):
                raise t.fail("MEDIAN takes one argument", node)
        elif q is None:
            raise t.fail(f"{func}(x, q) needs the fraction q", node)
    name = func.upper()
    if isinstance(arg, exp.Distinct):
        raise t.fail(f"{name}(DISTINCT ...) is not supported", node)
    if any(isinstance(n, tuple(QUANTILE_NODES) + (exp.AggFunc,)) for n in arg.walk()):
        raise t.fail("aggregates cannot be nested", node)
    frac = 0.5 if func == "median" else _fraction(t, q, name, node)
    e = t.expr(arg)
    if isinstance(e, ir.Lit):
        raise t.fail(f"{name} of a constant is not supported", node)
    if e.kind not in ("int", "float", "timestamp", "string"):
        raise t.fail(f"{name} needs a number, got {e.kind}", node)
    if func != "quantile_disc" and e.kind not in ("int", "float"):
        raise t.fail(f"{name} of a {e.kind} is not supported (quantile_disc is)", node)
    if e.kind == "string" and not isinstance(e, ir.Col):
        raise t.fail(f"{name} of a string takes a column", node)
    if isinstance(e, ir.Dec) and e.bound < 2**62:
        # of the DECIMAL's integers, the answer the same DECIMAL (as DuckDB's): a value of
        # them, or two interpolated as DuckDB interpolates a DECIMAL's
        a = ir.Agg(func, e.left, "int", param=frac,
                   precision=0 if func == "quantile_disc" else e.precision)
        t.agg_decs[a] = e
        return a
    return ir.Agg(func, e, "float" if func != "quantile_disc" else e.kind, param=frac)


def _fraction(t: Translator, q, name: str, node) -> float:
    if isinstance(q, exp.Array):
        raise t.fail(f"{name} of a list of fractions is not supported: one fraction per call",
                     node)
    neg = isinstance(q, exp.Neg)
    lit = q.this if neg else q
    if not (isinstance(lit, exp.Literal) and not lit.is_string):
        raise t.fail(f"{name}'s fraction must be a number between 0 and 1", node)
    v = -float(lit.this) if neg else float(lit.this)
    if not 0.0 <= v <= 1.0:
        raise t.fail(f"{name}'s fraction must be between 0 and 1, not {v:g}", node)
    return v
