"""SQL expressions -> IR expressions, with sqlglot: columns, constants, arithmetic,
comparisons, boolean logic, IN, IS NULL and EXTRACT, with the coercions that make a constant
comparable with a column exactly as DuckDB compares them. The query level (SELECT, GROUP BY,
aggregates, HAVING, ORDER BY) builds on it in ``sql.translate``."""

from __future__ import annotations

import bisect
import difflib
from collections.abc import Mapping
from fractions import Fraction
from functools import singledispatchmethod
from typing import Self

import numpy as np
from sqlglot import exp

from bamql.errors import TREE_ONLY, PlanError
from bamql.fused import ir
from bamql.intmath import I64_MAX, fits_int64
from bamql.sql import lists, scalars, strings
from bamql.sql.constants import int_compare, timestamp_us
from bamql.sql.valuetypes import SQL_ARITH, column_value, date_valued, decimal_source, decimal_valued
from bamql.storage.format import ColumnMeta
from bamql.storage.sqltypes import BOOLEAN, DAY_US, DOUBLE_EXACT, TIMESTAMPTZ

#: sqlglot's comparison, arithmetic and aggregate nodes and what they are in the IR.
CMP_OPS = {exp.EQ: "=", exp.NEQ: "<>", exp.LT: "<", exp.LTE: "<=", exp.GT: ">", exp.GTE: ">="}
ARITH_OPS = {exp.Add: "+", exp.Sub: "-", exp.Mul: "*", exp.Div: "/"}
AGGREGATES = {exp.Count: "count", exp.Sum: "sum", exp.Avg: "avg", exp.Min: "min", exp.Max: "max"}
#: The comparison that holds with its operands swapped.
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



#: SQL spellings of constructs that sqlglot parses and bamql refuses (named in errors)
_SQL_NAMES: dict[type, str] = {
    exp.Mod: "the % operator", exp.DPipe: "the || operator", exp.IntDiv: "the // operator",
    exp.BitwiseAnd: "the & operator", exp.BitwiseOr: "the | operator",
    exp.BitwiseXor: "the xor operator", exp.BitwiseNot: "the ~ operator",
    exp.BitwiseLeftShift: "the << operator", exp.BitwiseRightShift: "the >> operator",
    exp.NullSafeEQ: "IS NOT DISTINCT FROM", exp.NullSafeNEQ: "IS DISTINCT FROM",
    exp.SimilarTo: "SIMILAR TO", exp.RegexpLike: "regexp_matches()", exp.Pow: "the ^ operator",
}

class ExprTranslator:
    """SQL expressions over one table -> IR. Its checks (``coerce_literal``, ``compare``,
    ``in_list``) are public: ``sql.subqueries`` builds IR through them."""

    @classmethod
    def for_columns(cls, cols: Mapping[str, ColumnMeta], table: str = "") -> Self:
        """A translator of expressions over one table's ``cols`` (no SQL text)."""
        t = cls("", {})
        t.cols, t.table = cols, table
        return t

    def __init__(self, sql: str, catalog: Mapping[str, Mapping[str, ColumnMeta]]) -> None:
        self.sql = sql
        self.catalog = catalog
        self.cols: Mapping[str, ColumnMeta] = {}
        self.table = ""
        #: the name that qualifies the table's columns: its alias in FROM, else its name
        self.qualifier = ""
        #: exact values of the decimal constants (SQL's ``2.5``, a DECIMAL, not a DOUBLE):
        #: id(Lit) -> (the Lit, kept alive, and its value as a Fraction)
        self.decimals: dict[int, tuple[ir.Lit, Fraction]] = {}
        #: long integer IN lists cut out of the text before parsing (``sql.lists``)
        self.text, self.lists = lists.lift(sql)

    def fail(self, what: str, node: exp.Expression | None = None) -> PlanError:
        return PlanError(what + (_where(node, self.sql) if node is not None else ""))

    # -- expressions -------------------------------------------------------------------
    def column(self, node: exp.Column) -> ir.Expr:
        name = node.name
        if node.table and node.table != (self.qualifier or self.table):
            raise self.fail(f"unknown table {node.table!r} in column {node.sql()}", node)
        if name not in self.cols:  # matched without regard to case, as DuckDB does
            name = next((c for c in self.cols if c.lower() == name.lower()), name)
        if name not in self.cols:
            close = difflib.get_close_matches(name, list(self.cols), n=1)
            hint = f"; did you mean {close[0]!r}?" if close else ""
            raise self.fail(f"unknown column {name!r} in table {self.table!r}{hint}", node)
        return column_value(name, self.cols[name])

    def boolean_column(self, e: ir.Expr) -> bool:
        """Whether ``e`` is a BOOLEAN column (held as 0/1 integers)."""
        c = self.cols.get(e.name) if isinstance(e, ir.Col) else None
        return c is not None and c.sql_type == BOOLEAN

    def as_condition(self, e: ir.Expr, node=None) -> ir.Expr:
        """A BOOLEAN column as the condition it holds (NULL stays NULL); a number as DuckDB
        casts it to BOOLEAN (true where it is not zero: NaN is true); ``e`` otherwise."""
        if self.boolean_column(e):
            return ir.Cmp("<>", e, ir.Lit(0, "int"))
        if e.kind in ("int", "float") and isinstance(e, ir.Lit):  # WHERE 1: a constant truth
            return ir.Lit(bool(e.value != 0), "bool")
        if e.kind in ("int", "float"):
            return self.compare("<>", e, ir.Lit(0, "int"), node)
        return e

    def bool_expr(self, node) -> ir.Expr:
        e = self.as_condition(self.expr(node), node)
        if e.kind != "bool":
            what = {"strlit": "string constant", "null": "NULL"}.get(e.kind, f"{e.kind} expression")
            raise self.fail(f"expected a condition, got a {what}", node)
        return e

    def expr(self, node) -> ir.Expr:
        """The IR of a sqlglot expression (one rule per node class, ``_expr``)."""
        return self._expr(node)

    @singledispatchmethod
    def _expr(self, node) -> ir.Expr:
        return self._unsupported(node)

    def _unsupported(self, node) -> ir.Expr:
        what = _SQL_NAMES.get(type(node))
        if what is None and isinstance(node, exp.Anonymous):
            what = f"function {str(node.name).lower()}()"
        elif what is None and isinstance(node, exp.Func):
            what = f"function {node.sql_name().lower()}()"
        elif what is None:  # the construct as the query wrote it
            text = node.sql(dialect="duckdb")
            what = repr(text if len(text) <= 40 else text[:37] + "...")
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
        # 2.5 is a DECIMAL, exact; 2.5e0 a DOUBLE, and so is a literal of more digits than a
        # DECIMAL holds (38, leading zeros included), as DuckDB types them
        if "e" not in v.lower() and sum(c.isdigit() for c in v) <= 38:
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
        if isinstance(inner, exp.Literal) and inner.is_string and to == "date":
            return date_literal(inner.this)  # its midnight, as DuckDB casts the text to DATE
        if isinstance(inner, exp.Literal) and inner.is_string and "timestamp" in to:
            return ir.Lit(timestamp_us(inner.this, zoned=to == "timestamptz"), "timestamp")
        return scalars.scalar(self, node, self.expr)

    @_expr.register
    def _(self, node: exp.Neg) -> ir.Expr:
        a = self.expr(node.this)
        if isinstance(a, ir.Dec):  # exactly: the integers negated
            return ir.dec(ir.Neg(a.left, "int"), a.scale, a.bound, a.source)
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
        op = ARITH_OPS[type(node)]
        a, b = self.expr(node.this), self.expr(node.expression)
        self.need_numeric(a, node.this)
        self.need_numeric(b, node.expression)
        if op != "/" and (isinstance(a, ir.Dec) or isinstance(b, ir.Dec)):
            exact = self.decimal_arith(op, a, b, node)
            if exact is not None:
                return exact
        for x in (a, b) if op != "/" else ():  # a division is a DOUBLE, as in DuckDB
            if decimal_valued(x) and not isinstance(x, ir.Dec) and "float" not in \
                    {y.kind for y in (a, b) if not decimal_valued(y)} - {"null"}:
                raise self.fail(f"{SQL_ARITH[op]} of a value computed from DECIMAL column "
                                f"{decimal_source(x)!r} (a FLOOR, CEIL or CASE of it) is not "
                                "computed exactly; CAST it to DOUBLE to compute it rounded", node)
        kind = "float" if op == "/" or "float" in (a.kind, b.kind) else "int"
        return ir.Arith(op, a, b, kind)

    # -- DECIMALs, exactly ---------------------------------------------------------------
    def scaled(self, e: ir.Expr) -> tuple[ir.Expr, int, int, int] | None:
        """``e`` as an exact decimal ``(x, scale, bound, precision)``, its value
        ``x / 10**scale`` with ``x`` an integer expression (a constant: an int) of at most
        ``bound`` in magnitude, of SQL type DECIMAL(precision, scale): a DECIMAL
        (``ir.Dec``), an integer expression (BIGINT, DECIMAL(19,0)), or an exact constant (an
        integer or SQL's ``2.5``); None for anything else (a DOUBLE, a NULL, a string)."""
        if isinstance(e, ir.Dec):
            return e.left, e.scale, e.bound, e.precision
        if isinstance(e, ir.Lit):
            if e.kind == "int" and type(e.value) is int:
                return ir.Lit(e.value, "int"), 0, abs(e.value), len(str(abs(e.value)))
            if id(e) in self.decimals:
                v = self.decimals[id(e)][1]
                s = _decimal_places(v)
                x = int(v * 10**s)
                return ir.Lit(x, "int"), s, abs(x), max(len(str(abs(x))), s)
            return None
        if e.kind == "int":
            return e, 0, _int_bound(e, self.cols), 19
        return None

    def decimal_arith(self, op: str, a: ir.Expr, b: ir.Expr, node=None) -> ir.Expr | None:
        """``a op b`` (``+``, ``-``, ``*``) of a DECIMAL and a DECIMAL, an integer or an exact
        constant, computed exactly on the integers (an int64 overflow is an error, as
        DuckDB's overflow of a DECIMAL(18) is); None where the other side is a DOUBLE (the
        sum is then a DOUBLE, as in DuckDB)."""
        sa, sb = self.scaled(a), self.scaled(b)
        if sa is None or sb is None:
            return None
        (x, s, bx, p), (y, t, by, q) = sa, sb
        source = next(e.source for e in (a, b) if isinstance(e, ir.Dec))
        if op == "*":
            out = ir.dec(_int_arith("*", x, y), s + t, bx * by, source, p + q)
        else:
            m = max(s, t)
            x, y = _times_pow10(x, m - s), _times_pow10(y, m - t)
            out = ir.dec(_int_arith(op, x, y), m, bx * 10 ** (m - s) + by * 10 ** (m - t),
                         source, max(p - s, q - t) + m + 1)
        for n in ir.walk(out.left):  # a constant the kernels' int64 cannot hold
            if isinstance(n, ir.Lit) and not fits_int64(n.value):
                raise self.fail(f"DECIMAL arithmetic with column {source!r} needs the integer "
                                f"{n.value}, beyond BIGINT (int64), which bamql computes "
                                "DECIMALs in; CAST to DOUBLE to compute it rounded", node)
        return out

    def decimal_compare(self, op: str, a: ir.Expr, b: ir.Expr, node=None) -> ir.Expr | None:
        """``a op b`` of a DECIMAL and a DECIMAL, an integer or an exact constant, compared
        exactly as integers (a constant as the integers it admits, ``int_compare``); None
        where one side is no exact decimal (a DOUBLE: compared as doubles, as DuckDB does)."""
        sa, sb = self.scaled(a), self.scaled(b)
        if sa is None or sb is None:
            return None
        (x, s, bx, _), (y, t, by, _) = sa, sb
        if isinstance(y, ir.Lit) or isinstance(x, ir.Lit):
            if isinstance(x, ir.Lit):
                (x, s), (y, t), op = (y, t), (x, s), _FLIP[op]
            c = Fraction(y.value, 10**t) * 10**s  # the constant in the units of x, exactly
            if c.denominator == 1 and fits_int64(int(c)):
                return ir.Cmp(op, x, ir.Lit(int(c), "int"))
            return int_compare(op, x, c)
        m = max(s, t)
        if 10 ** (m - min(s, t)) > I64_MAX:  # no int64 multiplier aligns them
            if max(bx, by) >= DOUBLE_EXACT:
                src = next(e.source for e in (a, b) if isinstance(e, ir.Dec))
                raise self.fail(f"DECIMALs of scales {s} and {t} (column {src!r}) compare "
                                "exactly only as integers beyond BIGINT (int64), and their "
                                "doubles may round; CAST one to DOUBLE to compare rounded", node)
            return None  # both hold in a double exactly: compared as doubles
        return ir.Cmp(op, _times_pow10(x, m - s), _times_pow10(y, m - t))

    def decimal_column(self, e: ir.Expr) -> str | None:
        """A DECIMAL column that ``e`` reads as a double, or None."""
        return decimal_source(e)

    def check_decimal_literal(self, e: ir.Expr, lit: ir.Expr, node) -> None:
        """Refuse comparing ``e``, a value computed from a DECIMAL column in doubles (inside
        a function, a CASE...), with a constant of more digits than a double holds: DuckDB
        compares the exact decimals, and the doubles may tie where they differ."""
        if not isinstance(lit, ir.Lit) or id(lit) not in self.decimals:
            return
        v = self.decimals[id(lit)][1]
        if _significant_digits(v) <= 15:
            return
        src = self.decimal_column(e)
        if src is not None:
            raise self.fail(f"the constant {_decimal_text(v)} has more significant digits than "
                            f"a double holds, and is compared with a value computed from "
                            f"DECIMAL column {src!r} as a double, which would round it; "
                            "compare the column itself, or round the constant", node)

    def _comparison(self, node) -> ir.Expr:
        return self.compare(CMP_OPS[type(node)], self.expr(node.this), self.expr(node.expression), node)

    def _junction(self, node) -> ir.Expr:  # a chain, flattened without recursion
        parts = [self.bool_expr(x) for x in chain(node, type(node))]
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
    def _(self, node: exp.NullSafeEQ) -> ir.Expr:
        return self.not_distinct(node)

    @_expr.register
    def _(self, node: exp.NullSafeNEQ) -> ir.Expr:
        return ir.Not(self.not_distinct(node))

    def not_distinct(self, node) -> ir.Expr:
        """``a IS NOT DISTINCT FROM b``: equal (NaN equals NaN), or both NULL; never NULL."""
        a, b = self.expr(node.this), self.expr(node.expression)

        def null(e: ir.Expr) -> ir.Expr | None:  # e IS NULL; None where it never is
            if e.kind == "null":
                return ir.Lit(True, "bool")
            if e.kind == "strlit" or isinstance(e, ir.Lit):
                return None
            return ir.IsNull(e)

        na, nb = null(a), null(b)
        if a.kind == "null" or b.kind == "null":  # the other operand IS NULL
            other = nb if a.kind == "null" else na
            return ir.Lit(False, "bool") if other is None else other
        eq = self.compare("=", a, b, node)
        known = tuple(ir.IsNull(x.arg, True) for x in (na, nb) if x is not None)
        equal = ir.And((*known, eq)) if known else eq
        if na is None or nb is None:
            return equal
        return ir.Or((ir.And((na, nb)), equal))

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
        if node.args.get("unnest") is not None:
            raise self.fail("IN (UNNEST ...) is not supported", node)
        if node.args.get("query") is not None:
            return self.in_subquery(node)
        a = self.expr(node.this)
        if a.kind == "strlit":  # a string constant is comparable with a string column only
            raise self.fail("IN of a string constant is not supported", node)
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
                raise self.fail("IN (...) of columns or expressions is not supported by the fused kernels "
                                "(constants only)", v)
            vals.append(self.coerce_literal(lit, a, v))
        return self.in_list(a, vals, node)

    def in_subquery(self, node: exp.In) -> ir.Expr:
        """``x IN (SELECT ...)``: refused here; ``sql.joins`` answers it over a
        registered table (``sql.subqueries``)."""
        raise self.fail("IN (subquery) is supported over registered tables only", node)

    def _scalar(self, node) -> ir.Expr:
        return scalars.scalar(self, node, self.expr)

    def _like(self, node) -> ir.Expr:
        return strings.like(self, node)

    def _string_function(self, node) -> ir.Expr:
        return strings.function(self, node, strings.FUNCTIONS[type(node)])

    def _calendar(self, node: exp.Anonymous) -> ir.Expr:
        """HOUR(ts), MINUTE(ts), DAYOFWEEK(ts) and DOW(ts) that sqlglot leaves unparsed
        (and the string tests ``prefix`` and ``suffix``)."""
        if node.name.lower() in strings.ANONYMOUS:
            return strings.function(self, node, strings.ANONYMOUS[node.name.lower()])
        part = {"hour": "hour", "minute": "minute", "second": "second", "dayofweek": "dow",
                "dow": "dow", "isodow": "isodow", "doy": "doy", "isoyear": "isoyear",
                "yearweek": ""}.get(node.name.lower())
        if part and len(node.expressions) == 1:
            return self.extract(part, node.expressions[0], node)
        return self._unsupported(node)

    def _aggregate_here(self, node) -> ir.Expr:
        raise self.fail(f"aggregate {node.sql()} is not allowed here", node)

    for _cls in ARITH_OPS:
        _expr.register(_cls, _arith)
    for _cls in CMP_OPS:
        _expr.register(_cls, _comparison)
    for _cls in (exp.And, exp.Or):
        _expr.register(_cls, _junction)
    _expr.register(exp.Anonymous, _calendar)
    for _cls in (exp.Like, exp.ILike, exp.Escape):
        _expr.register(_cls, _like)
    for _cls in strings.FUNCTIONS:
        _expr.register(_cls, _string_function)
    for _cls in scalars.NODES:
        if _cls is not exp.Cast:
            _expr.register(_cls, _scalar)
    for _cls in AGGREGATES:
        _expr.register(_cls, _aggregate_here)
    del _cls

    def extract(self, part: str, arg_node, node) -> ir.Expr:
        return scalars.extract(self, part, arg_node, node, self.expr)

    def is_null(self, node: exp.Is, negated: bool) -> ir.Expr:
        if isinstance(node.expression, exp.Boolean):  # IS [NOT] TRUE / FALSE: never NULL
            if isinstance(node.this, exp.Null):  # NULL is neither
                return ir.Lit(negated, "bool")
            x = self.bool_expr(node.this)
            holds = ir.And((ir.IsNull(x, True), x if node.expression.this else ir.Not(x)))
            return ir.Not(holds) if negated else holds
        if not isinstance(node.expression, exp.Null):
            raise self.fail("IS takes only NULL / NOT NULL, TRUE or FALSE", node)
        e = self.expr(node.this)
        if e.kind == "strlit":  # a string constant is comparable with a string column only
            raise self.fail("IS NULL of a string constant is not supported", node)
        return ir.IsNull(e, negated)

    def need_numeric(self, e: ir.Expr, node) -> None:
        if e.kind not in ("int", "float", "null"):
            raise self.fail(f"arithmetic needs numbers, got a {e.kind.replace('strlit', 'string')} "
                            "value", node)
        if isinstance(e, ir.Lit) and e.kind == "int" and not fits_int64(e.value):
            raise self.fail(f"integer constant {e.value} is out of the range of BIGINT (int64) "
                            "in arithmetic", node)

    def zoned(self, e: ir.Expr) -> bool:
        """Whether timestamp expression ``e`` is a TIMESTAMP WITH TIME ZONE: a column of
        that type, or a timestamp computed of one (``exec.result.time_zone``)."""
        todo = [e]
        while todo:
            x = todo.pop()
            if isinstance(x, ir.Col) and x.name in self.cols \
                    and self.cols[x.name].sql_type == TIMESTAMPTZ:
                return True
            todo.extend(c for c in x.children() if c.kind == "timestamp")
        return False

    def coerce_literal(self, lit: ir.Lit, other: ir.Expr, node) -> ir.Lit:
        """Make a literal comparable with ``other`` (timestamps, dictionary strings, TRUE and
        FALSE against a BOOLEAN column: 1 and 0, so FALSE < TRUE)."""
        if lit.kind == "null":
            return lit
        if lit.kind == "bool" and self.boolean_column(other):
            return ir.Lit(int(lit.value), "int")
        if other.kind == "timestamp":
            if lit.kind == "strlit" and date_valued(other, self.cols):  # cast to DATE: its day
                return date_literal(lit.value)
            if lit.kind == "strlit":  # its offset applied against a TIMESTAMP WITH TIME ZONE
                return ir.Lit(timestamp_us(lit.value, zoned=self.zoned(other)), "timestamp")
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
        if isinstance(a, ir.Dec) or isinstance(b, ir.Dec):  # a DECIMAL: exactly
            exact = self.decimal_compare(op, a, b, node)
            if exact is not None:
                return exact
        self.check_decimal_literal(a, b, node)
        self.check_decimal_literal(b, a, node)
        ka, kb = a.kind, b.kind
        numeric = {"int", "float"}
        ok = (ka in numeric and kb in numeric) or ka == kb or "null" in (ka, kb)
        if ka == "string" and kb == "string" and not (isinstance(b, ir.Lit) or a == b):
            # two string columns: their dictionaries differ; the plan tree compares the text
            raise self.fail(f"a comparison of two string columns {TREE_ONLY}", node)
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
        if isinstance(a, ir.Dec) and all(x.kind == "null" or self.scaled(x) is not None
                                         for x in vals):
            # a DECIMAL: x IN (a, b) is x = a OR x = b, each compared exactly
            eqs = tuple(self.compare("=", a, x, node) for x in vals)
            return eqs[0] if len(eqs) == 1 else ir.any_of(eqs)
        for x in vals:
            self.check_decimal_literal(a, x, node)
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


def date_literal(text: str) -> ir.Lit:
    """The DATE constant of ``text`` (``'2019-01-05'``; a time after the date is dropped, as
    DuckDB's cast of text to DATE drops it): its midnight's microseconds."""
    us = timestamp_us(text)
    return ir.Lit(us - us % DAY_US, "timestamp", date=True)


def _int_bound(e: ir.Expr, cols: Mapping[str, ColumnMeta]) -> int:
    """The most ``|e|`` of an integer expression may be: a column's range, else int64's."""
    if isinstance(e, ir.Col) and e.name in cols:
        c = cols[e.name]
        if isinstance(c.min, int) and isinstance(c.max, int):
            return max(abs(c.min), abs(c.max))
    return 1 << 63


def _decimal_places(v: Fraction) -> int:
    """The decimals of the exact decimal ``v`` (a SQL decimal constant)."""
    s = 0
    while (v * 10**s).denominator != 1:
        s += 1
    return s


def _significant_digits(v: Fraction) -> int:
    x = abs(int(v * 10 ** _decimal_places(v)))
    return len(str(x).rstrip("0")) if x else 1


def _decimal_text(v: Fraction) -> str:
    s = _decimal_places(v)
    x = int(v * 10**s)
    sign, digits = ("-" if x < 0 else ""), str(abs(x)).rjust(s + 1, "0")
    return sign + (digits[:-s] + "." + digits[-s:] if s else digits)


def _times_pow10(x: ir.Expr, k: int) -> ir.Expr:
    """The integer expression ``x * 10**k`` (a constant computed here)."""
    if k == 0:
        return x
    if isinstance(x, ir.Lit):
        return ir.Lit(x.value * 10**k, "int")
    return _int_arith("*", x, ir.Lit(10**k, "int"))


def _int_arith(op: str, x: ir.Expr, y: ir.Expr) -> ir.Expr:
    """``x op y`` in int64, the kernels flagging an overflow (a constant folded here)."""
    if isinstance(x, ir.Lit) and isinstance(y, ir.Lit):
        return ir.Lit({"+": x.value + y.value, "-": x.value - y.value,
                       "*": x.value * y.value}[op], "int")
    return ir.Arith(op, x, y, "int")


def chain(node: exp.Expression, cls: type) -> list[exp.Expression]:
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
