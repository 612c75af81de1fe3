"""SQL text -> logical IR, with sqlglot. Anything bamql cannot run fails here, with one
line naming the construct and where it is in the query."""

from __future__ import annotations

import bisect
import difflib
import re
import sys
from collections.abc import Mapping
from fractions import Fraction
from functools import singledispatchmethod

import numpy as np
import sqlglot
from sqlglot import exp
from sqlglot.errors import ParseError, TokenError

from bamql.errors import PlanError
from bamql.intmath import I64_MAX, I64_MIN, first_above, first_at_least, fits_int64
from bamql.planner import ir, lists
from bamql.storage.format import ColumnMeta

#: Most groups a GROUP BY may produce (dense accumulators, one slot per possible key).
MAX_GROUPS = 1 << 20

_CMP = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
_ARITH = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/"}
_AGGS = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
_FLIP = {"<": ">", "<=": ">=", ">": "<", ">=": "<=", "=": "=", "<>": "<>"}


def _where(node: exp.Expression, sql: str) -> str:
    """' at line L, column C' for a node, from the token positions sqlglot keeps."""
    for n in [node, *node.walk()]:
        meta = getattr(n, "meta", None) or {}
        if "start" in meta:
            start = meta["start"]
            line = sql.count("\n", 0, start) + 1
            col = start - (sql.rfind("\n", 0, start) + 1) + 1
            return f" at line {line}, column {col}"
    text = node.sql()
    pos = sql.lower().find(text.lower()) if text else -1
    if pos >= 0:
        line = sql.count("\n", 0, pos) + 1
        return f" at line {line}, column {pos - (sql.rfind(chr(10), 0, pos) + 1) + 1}"
    return ""


def timestamp_us(text: str) -> int:
    """A timestamp constant as int64 microseconds since 1970, exactly: NumPy wraps silently
    beyond the int64 range (``'300000-01-01'``), so the seconds are parsed apart from the
    fraction and the microseconds computed with Python integers, then checked."""
    s = text.strip().replace(" ", "T")
    base, dot, frac = s.partition(".")
    out_of_range = PlanError(f"timestamp {text!r} is out of range: timestamps are int64 "
                             "microseconds, from -290308-12-21 to 294247-01-10")
    year = re.match(r"-?(\d+)", base)
    if year is not None and len(year.group(1)) > 6:  # too far for NumPy's days to be exact
        raise out_of_range
    try:
        if year is None or (dot and not frac.isdigit()):
            raise ValueError
        t = np.datetime64(base)
        unit = np.datetime_data(t.dtype)[0]
        if unit not in ("Y", "M", "W", "D", "h", "m", "s") or (dot and unit != "s"):
            raise ValueError
        day = t.astype("datetime64[D]")
        secs = int(day.astype(np.int64)) * 86400 + int((t - day) // np.timedelta64(1, "s"))
    except ValueError:
        raise PlanError(f"not a timestamp: {text!r} (use 'YYYY-MM-DD[ HH:MM:SS]')") from None
    us = secs * 1_000_000 + (int(frac[:6].ljust(6, "0")) if dot else 0)  # below 1 us: cut
    if not I64_MIN < us <= I64_MAX:  # the minimum is the null sentinel
        raise out_of_range
    return us


class Translator:
    """SQL text -> logical IR. Its checks (``coerce_literal``, ``compare``, ``in_list``,
    ``key_of``, ``agg_of``, ``check_domain``) are public: the dataframe API builds its IR
    through them (``for_columns``), so both accept and refuse the same things."""

    @classmethod
    def for_columns(cls, cols: Mapping[str, ColumnMeta], table: str = "") -> Translator:
        """A translator of expressions over one table's ``cols`` (no SQL text)."""
        t = cls("", {})
        t.cols, t.table = cols, table
        return t

    def __init__(self, sql: str, catalog: Mapping[str, Mapping[str, ColumnMeta]]) -> None:
        self.sql = sql
        self.catalog = catalog
        self.cols: Mapping[str, ColumnMeta] = {}
        self.table = ""
        #: exact values of the decimal constants (SQL's ``2.5``, a DECIMAL, not a DOUBLE):
        #: id(Lit) -> (the Lit, kept alive, and its value as a Fraction)
        self.decimals: dict[int, tuple[ir.Lit, Fraction]] = {}
        #: long integer IN lists cut out of the text before parsing (``planner.lists``)
        self.text, self.lists = lists.lift(sql)

    def fail(self, what: str, node: exp.Expression | None = None) -> PlanError:
        return PlanError(what + (_where(node, self.sql) if node is not None else ""))

    # -- statements --------------------------------------------------------------------
    def query(self) -> ir.Query:
        try:
            stmts = [s for s in sqlglot.parse(self.text, read="duckdb") if s is not None]
        except (ParseError, TokenError) as e:
            msg = str(e).strip().splitlines()[0]
            raise PlanError(f"SQL syntax error: {msg}") from None
        if len(stmts) != 1:
            raise PlanError(f"expected one SQL statement, got {len(stmts)}")
        s = stmts[0]
        if not isinstance(s, exp.Select):
            raise self.fail(f"only SELECT queries are supported, not {s.key.upper()}", s)
        for arg, what in (("with_", "WITH (common table expressions)"), ("joins", "JOIN"),
                          ("windows", "WINDOW"), ("distinct", "SELECT DISTINCT"),
                          ("qualify", "QUALIFY"), ("offset", "OFFSET")):
            if s.args.get(arg) or s.args.get(arg.rstrip("_")):
                node = s.args.get(arg) or s.args.get(arg.rstrip("_"))
                node = node[0] if isinstance(node, list) else node
                raise self.fail(f"{what} is not supported", node if isinstance(node, exp.Expression)
                                else s)
        for sub in s.find_all(exp.Subquery, exp.Window, exp.Join, exp.Union):
            raise self.fail(f"{sub.key.upper()} is not supported (bamql runs single-table "
                            "filter-aggregate queries)", sub)
        frm = s.args.get("from_") or s.args.get("from")
        if frm is None:
            raise PlanError("the query needs FROM <table>")
        t = frm.this
        if not isinstance(t, exp.Table) or not isinstance(t.this, exp.Identifier):
            raise self.fail("FROM must name one table", t)
        self.table = t.name
        if self.table not in self.catalog:
            known = ", ".join(sorted(self.catalog)) or "none"
            raise self.fail(f"unknown table {self.table!r} (tables: {known})", t)
        self.cols = self.catalog[self.table]

        where = s.args.get("where")
        pred = self.bool_expr(where.this) if where is not None else None

        items = list(s.expressions)
        if any(isinstance(i, exp.Star) for i in items):
            raise self.fail("SELECT * is not supported: name the aggregates to compute",
                            next(i for i in items if isinstance(i, exp.Star)))
        aliases = {i.alias: i.this for i in items if isinstance(i, exp.Alias)}

        keys: list[ir.Expr] = []
        group = s.args.get("group")
        if group is not None:
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
        self.check_domain(keys, group)

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
            if having.kind != "bool":
                raise self.fail("HAVING needs a condition", s.args["having"])
        if not aggs and not keys:
            raise self.fail("bamql answers aggregate queries: SELECT needs aggregates "
                            "(COUNT, SUM, AVG, MIN, MAX) or a GROUP BY", s)
        order = []
        if s.args.get("order") is not None:
            for o in s.args["order"].expressions:
                order.append((self.order_index(o.this, names, exprs, keys, aggs), bool(o.args.get("desc"))))
        limit = None
        if s.args.get("limit") is not None:
            lim = s.args["limit"].expression
            if not (isinstance(lim, exp.Literal) and not lim.is_string and lim.this.isdigit()):
                raise self.fail("LIMIT needs a non-negative integer", s.args["limit"])
            limit = int(lim.this)
        return ir.Query(self.table, pred, tuple(keys), tuple(aggs), tuple(names), tuple(exprs),
                        having, tuple(order), limit)

    def check_domain(self, keys: list[ir.Expr], node) -> None:
        total = 1
        for k in keys:
            total *= key_domain(k, self.cols)[1] + 1
        if total > MAX_GROUPS:
            raise self.fail(f"GROUP BY has up to {total:,} groups; bamql groups only small domains "
                            f"(at most {MAX_GROUPS:,})", node)

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
        e = self.outer(node, keys, list(aggs))
        if e in exprs:
            return exprs.index(e)
        raise self.fail("ORDER BY must name a column of the select list", node)

    # -- expressions -------------------------------------------------------------------
    def column(self, node: exp.Column) -> ir.Col:
        name = node.name
        if node.table and node.table != self.table:
            raise self.fail(f"unknown table {node.table!r} in column {node.sql()}", node)
        if name not in self.cols:
            close = difflib.get_close_matches(name, list(self.cols), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise self.fail(f"unknown column {name!r} in table {self.table!r}{hint}", node)
        return ir.Col(name, self.cols[name].kind)

    def key_expr(self, node) -> ir.Expr:
        return self.key_of(self.expr(node), node)

    def key_of(self, e: ir.Expr, node) -> ir.Expr:
        """``e`` as a group key, or the error that says what a key may be (SQL and frames)."""
        if isinstance(e, ir.Col) and e.kind in ("int", "string"):
            return e
        if isinstance(e, ir.Extract):
            return e
        raise self.fail("GROUP BY takes integer or dictionary-string columns, or EXTRACT(HOUR|"
                        "MINUTE|DOW FROM timestamp)", node)

    def bool_expr(self, node) -> ir.Expr:
        e = self.expr(node)
        if e.kind != "bool":
            raise self.fail(f"expected a condition, got a {e.kind} expression", node)
        return e

    def expr(self, node) -> ir.Expr:
        """The IR of a sqlglot expression (one rule per node class, ``_expr``)."""
        return self._expr(node)

    @singledispatchmethod
    def _expr(self, node) -> ir.Expr:
        return self._unsupported(node)

    def _unsupported(self, node) -> ir.Expr:
        what = type(node).__name__.upper()
        if isinstance(node, exp.Func):
            what = f"function {node.sql_name() if hasattr(node, 'sql_name') else what}"
        raise self.fail(f"{what} is not supported", node)

    @_expr.register
    def _(self, node: exp.Paren) -> ir.Expr:
        return self.expr(node.this)

    @_expr.register
    def _(self, node: exp.Column) -> ir.Expr:
        return self.column(node)

    @_expr.register
    def _(self, node: exp.Literal) -> ir.Expr:
        if node.is_string:
            return ir.Lit(node.this, "strlit")
        v = node.this
        if v.lstrip("-").isdigit():
            return ir.Lit(int(v), "int")
        lit = ir.Lit(float(v), "float")
        if "e" not in v.lower():  # 2.5 is a DECIMAL, exact; 2.5e0 a DOUBLE
            self.decimals[id(lit)] = (lit, Fraction(v))
        return lit

    @_expr.register
    def _(self, node: exp.Null) -> ir.Expr:
        return ir.Lit(None, "null")

    @_expr.register
    def _(self, node: exp.Boolean) -> ir.Expr:
        return ir.Lit(bool(node.this), "bool")

    @_expr.register
    def _(self, node: exp.Cast) -> ir.Expr:
        inner = node.this
        to = node.to.this.name.lower() if node.to is not None else ""
        if isinstance(inner, exp.Literal) and inner.is_string and ("timestamp" in to or to == "date"):
            return ir.Lit(timestamp_us(inner.this), "timestamp")
        raise self.fail(f"CAST to {node.to.sql()} is not supported", node)

    @_expr.register
    def _(self, node: exp.Neg) -> ir.Expr:
        a = self.expr(node.this)
        if isinstance(a, ir.Lit) and a.kind in ("int", "float"):
            if id(a) in self.decimals:  # a DECIMAL: -0.0 is 0, with no sign, as in DuckDB
                exact = -self.decimals[id(a)][1]
                neg = ir.Lit(float(exact), a.kind)
                self.decimals[id(neg)] = (neg, exact)
            else:
                neg = ir.Lit(-a.value, a.kind)
            return neg
        self.need_numeric(a, node)
        return ir.Neg(a, a.kind)

    def _arith(self, node) -> ir.Expr:
        op = _ARITH[type(node)]
        a, b = self.expr(node.this), self.expr(node.expression)
        self.need_numeric(a, node.this)
        self.need_numeric(b, node.expression)
        kind = "float" if op == "/" or "float" in (a.kind, b.kind) else "int"
        return ir.Arith(op, a, b, kind)

    def _comparison(self, node) -> ir.Expr:
        return self.compare(_CMP[type(node)], self.expr(node.this), self.expr(node.expression), node)

    def _junction(self, node) -> ir.Expr:  # a chain, flattened without recursion
        parts = [self.bool_expr(x) for x in _chain(node, type(node))]
        return ir.all_of(parts) if isinstance(node, exp.And) else ir.any_of(parts)

    @_expr.register
    def _(self, node: exp.Not) -> ir.Expr:
        inner = node.this
        if isinstance(inner, exp.Is):
            return self.is_null(inner, negated=True)
        if isinstance(inner, exp.In):
            e = self.expr(inner)
            if isinstance(e, ir.InList):
                return ir.InList(e.arg, e.values, negated=True)
            return ir.Not(e)  # an IN rewritten as ORs of comparisons (``compare``)
        return ir.Not(self.bool_expr(inner))

    @_expr.register
    def _(self, node: exp.Is) -> ir.Expr:
        return self.is_null(node, negated=False)

    @_expr.register
    def _(self, node: exp.Between) -> ir.Expr:
        a = self.expr(node.this)
        lo, hi = self.expr(node.args["low"]), self.expr(node.args["high"])
        return ir.And((self.compare(">=", a, lo, node), self.compare("<=", a, hi, node)))

    @_expr.register
    def _(self, node: exp.In) -> ir.Expr:
        if node.args.get("query") is not None or node.args.get("unnest") is not None:
            raise self.fail("IN (subquery) is not supported", node)
        a = self.expr(node.this)
        vals = []
        lifted = (self.lists.get(node.expressions[0].name) if len(node.expressions) == 1
                  and isinstance(node.expressions[0], exp.Column) else None)
        if lifted is not None:  # integers: each coerced as the parser's constant would be
            plain = (a.kind in ("int", "float") and not self._is_float32(a)
                     and fits_int64(min(lifted)) and fits_int64(max(lifted)))
            if plain:  # what coerce_literal returns for each: the int64 itself
                vals = [ir.Lit(x, "int") for x in lifted]
            else:
                vals = [self.coerce_literal(ir.Lit(x, "int"), a, node) for x in lifted]
            return self.in_list(a, vals, node)
        for v in node.expressions:
            lit = self.expr(v)
            if not isinstance(lit, ir.Lit):
                raise self.fail("IN (...) takes constants only", v)
            vals.append(self.coerce_literal(lit, a, v))
        return self.in_list(a, vals, node)

    @_expr.register
    def _(self, node: exp.Extract) -> ir.Expr:
        part = node.this.name.lower() if isinstance(node.this, exp.Var | exp.Identifier) else ""
        return self.extract(part, node.expression, node)

    def _calendar(self, node) -> ir.Expr:
        """HOUR(ts), MINUTE(ts), DAYOFWEEK(ts) and DOW(ts) as EXTRACT."""
        fname = (node.name if isinstance(node, exp.Anonymous) else type(node).__name__).lower()
        part = {"hour": "hour", "minute": "minute", "dayofweek": "dow", "dow": "dow"}.get(fname)
        if part:
            arg = node.expressions[0] if isinstance(node, exp.Anonymous) else node.this
            return self.extract(part, arg, node)
        return self._unsupported(node)

    def _aggregate_here(self, node) -> ir.Expr:
        raise self.fail(f"aggregate {node.sql()} is not allowed here", node)

    for _cls in _ARITH:
        _expr.register(_cls, _arith)
    for _cls in _CMP:
        _expr.register(_cls, _comparison)
    for _cls in (exp.And, exp.Or):
        _expr.register(_cls, _junction)
    for _cls in (exp.Anonymous, *(getattr(exp, n) for n in ("Hour", "Minute", "DayOfWeek")
                                  if hasattr(exp, n))):
        _expr.register(_cls, _calendar)
    for _cls in _AGGS:
        _expr.register(_cls, _aggregate_here)
    del _cls

    def extract(self, part: str, arg_node, node) -> ir.Expr:
        if part not in ir.EXTRACT_PARTS:
            raise self.fail(f"EXTRACT({part.upper() or '?'}) is not supported (HOUR, MINUTE, DOW)", node)
        a = self.expr(arg_node)
        if a.kind != "timestamp":
            raise self.fail(f"EXTRACT needs a timestamp, got {a.kind}", node)
        return ir.Extract(part, a)

    def is_null(self, node: exp.Is, negated: bool) -> ir.Expr:
        if not isinstance(node.expression, exp.Null):
            raise self.fail("IS takes only NULL / NOT NULL", node)
        return ir.IsNull(self.expr(node.this), negated)

    def need_numeric(self, e: ir.Expr, node) -> None:
        if e.kind not in ("int", "float", "null"):
            raise self.fail(f"arithmetic needs numbers, got a {e.kind.replace('strlit', 'string')} "
                            "value", node)
        if isinstance(e, ir.Lit) and e.kind == "int" and not fits_int64(e.value):
            raise self.fail(f"integer constant {e.value} is out of the range of BIGINT (int64) "
                            "in arithmetic", node)

    def coerce_literal(self, lit: ir.Lit, other: ir.Expr, node) -> ir.Lit:
        """Make a literal comparable with ``other`` (timestamps, dictionary strings)."""
        if lit.kind == "null":
            return lit
        if other.kind == "timestamp":
            if lit.kind == "strlit":
                return ir.Lit(timestamp_us(lit.value), "timestamp")
            if lit.kind == "timestamp":
                return lit
        elif other.kind == "string":
            if lit.kind != "strlit":
                raise self.fail("a string column compares only with string constants", node)
            if not isinstance(other, ir.Col):
                raise self.fail("string comparisons take a column and a constant", node)
            d = self.cols[other.name].dictionary or ()
            i = bisect.bisect_left(d, lit.value)
            # a string between dictionary entries gets a code between theirs: order holds
            code = i if i < len(d) and d[i] == lit.value else i - 0.5
            return ir.Lit(code, "string")
        elif other.kind in ("int", "float"):
            if lit.kind in ("int", "float") and self._is_float32(other):
                return self._as_float32(lit, node)
            if lit.kind == "int" and other.kind == "float" and not fits_int64(lit.value):
                return ir.Lit(self._double(lit.value, node), "float")  # DOUBLE vs HUGEINT
            if lit.kind in ("int", "float"):
                return lit
        elif other.kind in ("strlit", "null") and lit.kind in ("int", "float", "strlit", "timestamp"):
            return lit
        if lit.kind == "bool" and other.kind == "bool":
            return lit
        raise self.fail(f"cannot compare a {other.kind.replace('strlit', 'string')} with a "
                        f"{lit.kind.replace('strlit', 'string')} constant", node)

    def _is_float32(self, e: ir.Expr) -> bool:
        """Whether ``e`` is a column stored as float32 (SQL's FLOAT)."""
        c = self.cols.get(e.name) if isinstance(e, ir.Col) else None
        return c is not None and c.dtype == "float32"

    def _double(self, v, node) -> float:
        try:
            return float(v)
        except OverflowError:
            raise self.fail(f"numeric constant {str(v)[:20]}... is out of the range of DOUBLE",
                            node) from None

    def _as_float32(self, lit: ir.Lit, node) -> ir.Lit:
        """A constant compared with a FLOAT column, rounded to float32 as DuckDB casts it
        (beyond float32's range it stays a double: no finite FLOAT equals it)."""
        v = self._double(lit.value, node)
        if v != v or abs(v) > float(np.finfo(np.float32).max):
            return ir.Lit(v, "float")
        return ir.Lit(float(np.float32(v)), "float")

    def compare(self, op: str, a: ir.Expr, b: ir.Expr, node) -> ir.Expr:
        if isinstance(a, ir.Lit) and not isinstance(b, ir.Lit):
            a, b, op = b, a, _FLIP[op]
        if isinstance(b, ir.Lit):
            b = self.coerce_literal(b, a, node)
        if a.kind == "strlit" or (isinstance(a, ir.Lit) and isinstance(b, ir.Lit)):
            raise self.fail("comparisons between two constants are not supported", node)
        ka, kb = a.kind, b.kind
        numeric = {"int", "float"}
        ok = (ka in numeric and kb in numeric) or ka == kb or "null" in (ka, kb)
        if ka == "string" and kb == "string" and not (isinstance(b, ir.Lit) or a == b):
            ok = False
        if not ok:
            raise self.fail(f"cannot compare {ka} with {kb}", node)
        if ka == "int" and kb in numeric and isinstance(b, ir.Lit):
            c = self.int_constant(b)
            if c is None:
                return int_compare(op, a, self.decimals[id(b)][1] if id(b) in self.decimals
                                   else b.value)
            b = c
        return ir.Cmp(op, a, b)

    def in_list(self, a: ir.Expr, vals: list[ir.Lit], node) -> ir.Expr:
        """``a IN (vals)``, the constants made comparable with ``a`` already."""
        if a.kind == "int" and any(x.kind != "null" and self.int_constant(x) is None for x in vals):
            # a constant that no int64 equals as such: x IN (a, b) is x = a OR x = b
            eqs = tuple(self.compare("=", a, x, node) for x in vals)
            return eqs[0] if len(eqs) == 1 else ir.Or(eqs)
        return ir.InList(a, tuple(self.int_constant(x) if a.kind == "int" and x.kind != "null"
                                  else x for x in vals))

    def int_constant(self, lit: ir.Lit) -> ir.Lit | None:
        """``lit`` as an int64 constant when an integer compares with it as with that int64
        (``4``, ``4.0``); None when it does not (``2.5``, ``1e19``, ``2**64``, or a double
        from 2**53 on, which every integer rounding to it equals)."""
        v = lit.value
        if id(lit) in self.decimals:
            v = self.decimals[id(lit)][1]
            v = int(v) if v.denominator == 1 else None
        elif isinstance(v, float):
            v = int(v) if v.is_integer() and abs(v) < 2.0**53 else None
        if isinstance(v, int) and fits_int64(v):
            return lit if lit.kind == "int" and type(lit.value) is int else ir.Lit(v, "int")
        return None

    # -- after aggregation -------------------------------------------------------------
    def outer(self, node, keys, aggs, names=None, exprs=None) -> ir.Expr:
        """An expression over group keys and aggregates (select list, HAVING, ORDER BY)."""
        if isinstance(node, exp.Paren):
            return self.outer(node.this, keys, aggs, names, exprs)
        if isinstance(node, tuple(_AGGS)):
            a = self.aggregate(node)
            if a not in aggs:
                aggs.append(a)
            return ir.AggRef(aggs.index(a), a.kind)
        if isinstance(node, exp.Column) and names is not None and node.name in names \
                and node.name not in self.cols:
            return exprs[names.index(node.name)]
        if any(isinstance(n, tuple(_AGGS)) for n in node.walk()):
            # rebuild arithmetic/comparisons over aggregates
            for cls, op in _ARITH.items():
                if isinstance(node, cls):
                    a = self.outer(node.this, keys, aggs, names, exprs)
                    b = self.outer(node.expression, keys, aggs, names, exprs)
                    kind = "float" if op == "/" or "float" in (a.kind, b.kind) else "int"
                    return ir.Arith(op, a, b, kind)
            for cls, op in _CMP.items():
                if isinstance(node, cls):
                    a = self.outer(node.this, keys, aggs, names, exprs)
                    b = self.outer(node.expression, keys, aggs, names, exprs)
                    return ir.Cmp(op, a, b)
            if isinstance(node, exp.And | exp.Or):
                parts = (self.outer(node.this, keys, aggs, names, exprs),
                         self.outer(node.expression, keys, aggs, names, exprs))
                return ir.And(parts) if isinstance(node, exp.And) else ir.Or(parts)
            if isinstance(node, exp.Not):
                return ir.Not(self.outer(node.this, keys, aggs, names, exprs))
            if isinstance(node, exp.Neg):
                a = self.outer(node.this, keys, aggs, names, exprs)
                return ir.Neg(a, a.kind)
            raise self.fail(f"{type(node).__name__.upper()} over aggregates is not supported", node)
        e = self.expr(node)
        if isinstance(e, ir.Lit):
            return ir.Lit(e.value, "string") if e.kind == "strlit" else e
        if e in keys:
            return ir.KeyRef(keys.index(e), e.kind)
        cols = ir.columns_of(e)
        if cols:
            raise self.fail(f"column {cols[0]!r} must appear in GROUP BY or inside an aggregate", node)
        raise self.fail("expression is not supported in the select list", node)

    def aggregate(self, node) -> ir.Agg:
        func = _AGGS[type(node)]
        arg = node.this
        if func == "count" and (arg is None or isinstance(arg, exp.Star)):
            return ir.Agg("count", None, "int")
        if isinstance(arg, exp.Distinct):
            raise self.fail(f"{func.upper()}(DISTINCT ...) is not supported", node)
        if node.args.get("expressions"):
            raise self.fail(f"{func.upper()} takes one argument", node)
        if any(isinstance(n, tuple(_AGGS)) for n in arg.walk()):
            raise self.fail("aggregates cannot be nested", node)
        return self.agg_of(func, self.expr(arg), node)

    def agg_of(self, func: str, e: ir.Expr, node) -> ir.Agg:
        """The aggregate ``func`` of ``e`` (not COUNT(*)), or the error that says why not: the
        one set of rules for SQL and the dataframe API."""
        if isinstance(e, ir.Lit):
            raise self.fail(f"{func.upper()} of a constant is not supported", node)
        if ir.size(e) > MAX_AGG_NODES:  # compiled into the kernel: its length is compile time
            raise self.fail(f"the argument of {func.upper()} is too large ({ir.size(e)} terms; "
                            f"at most {MAX_AGG_NODES})", node)
        if func == "count":
            return ir.Agg("count", e, "int")
        if func in ("sum", "avg"):
            if e.kind not in ("int", "float"):
                raise self.fail(f"{func.upper()} needs a number, got {e.kind}", node)
            return ir.Agg(func, e, "float" if func == "avg" or e.kind == "float" else "int")
        if e.kind == "bool":
            raise self.fail(f"{func.upper()} of a condition is not supported", node)
        return ir.Agg(func, e, e.kind)


def _below(a: ir.Expr, t: int, negate: bool = False) -> ir.Cmp:
    """``a < t`` (``a >= t`` with ``negate``) for an int64 expression ``a``: a threshold
    beyond int64 becomes a comparison that is always TRUE or always FALSE (NULL for NULL)."""
    if t > I64_MAX:  # a < t always: a <= MAX
        return ir.Cmp(">" if negate else "<=", a, ir.Lit(I64_MAX, "int"))
    if t <= I64_MIN:  # a < t never: a < MIN
        return ir.Cmp(">=" if negate else "<", a, ir.Lit(I64_MIN, "int"))
    return ir.Cmp(">=" if negate else "<", a, ir.Lit(t, "int"))


def int_compare(op: str, a: ir.Expr, c: int | float | Fraction) -> ir.Expr:
    """``a op c`` for an integer expression ``a`` and a constant that is no int64 (a decimal
    compared exactly, a double as SQL compares a BIGINT with a DOUBLE, an integer beyond
    int64) as comparisons with int64 constants, which kernels and zone maps compare exactly
    where a float comparison would round (``intmath``)."""
    ge, gt = first_at_least(c), first_above(c)  # x >= c from ge on, x > c from gt on
    if op == "=":
        return ir.And((_below(a, ge, negate=True), _below(a, gt)))
    if op == "<>":
        return ir.Or((_below(a, ge), _below(a, gt, negate=True)))
    return _below(a, ge if op in ("<", ">=") else gt, negate=op in (">", ">="))


def key_domain(k: ir.Expr, cols: Mapping[str, ColumnMeta]) -> tuple[int, int]:
    """``(base, size)`` of a group key: key value ``v`` maps to slot ``v - base``; one more
    slot (``size``) holds NULL."""
    if isinstance(k, ir.Extract):
        return 0, ir.EXTRACT_PARTS[k.part]
    assert isinstance(k, ir.Col)
    c = cols[k.name]
    if c.kind == "string":
        return 0, max(len(c.dictionary or ()), 1)
    if c.min is None:
        return 0, 1
    return int(c.min), int(c.max) - int(c.min) + 1


#: The most nodes an aggregate's argument may have: it is compiled into the query's kernel,
#: whose compile time grows faster than linearly with its length.
MAX_AGG_NODES = 200

#: Python frames translation may use (see ``translate``)
_RECURSION_LIMIT = 6000


def _chain(node: exp.Expression, cls: type) -> list[exp.Expression]:
    """The operands of a chain of ``cls`` (AND or OR) in order, parentheses around links
    dropped: ``a AND (b AND c) AND d`` -> ``[a, b, c, d]``. Iterative, so a chain of
    thousands of terms does not exhaust Python's recursion limit."""
    out: list[exp.Expression] = []
    stack = [node]
    while stack:
        n = stack.pop()
        while isinstance(n, exp.Paren) and isinstance(n.this, cls):
            n = n.this
        if isinstance(n, cls):
            stack.append(n.expression)
            stack.append(n.this)
        else:
            out.append(n)
    return out


def translate(sql: str, catalog: Mapping[str, Mapping[str, ColumnMeta]]) -> ir.Query:
    """Translate SQL text into a logical query over ``catalog`` (table -> columns)."""
    if not sql or not sql.strip():
        raise PlanError("empty query")
    # sqlglot's parser recurses about 16 frames per level of parentheses: Python's default
    # limit of 1,000 stops at ~60 levels, which a generated query reaches
    if sys.getrecursionlimit() < _RECURSION_LIMIT:
        sys.setrecursionlimit(_RECURSION_LIMIT)
    try:
        return Translator(sql, catalog).query()
    except RecursionError:
        raise PlanError("the query nests too deeply (parentheses, NOT or arithmetic some "
                        "hundreds of levels deep); write it flatter") from None
