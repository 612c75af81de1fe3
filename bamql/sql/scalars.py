"""SQL scalar functions -> IR: CASE, COALESCE, NULLIF, IF, ABS, FLOOR, CEIL, ROUND, CAST to
INTEGER/BIGINT/DOUBLE, date_trunc and the calendar fields (EXTRACT and DuckDB's ``year(ts)``
spellings), with DuckDB's result types.

Each rule takes the translator and ``sub``, the translation of an operand: the row-level
``ExprTranslator.expr`` inside the kernel, or the translation over group keys and aggregates
in the select list, HAVING and ORDER BY (``Translator.outer``), so both accept the same
functions."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Protocol

from sqlglot import exp

from bamql.errors import TREE_ONLY, PlanError
from bamql.fused import ir
from bamql.storage.format import ColumnMeta
from bamql.storage.sqltypes import parse_decimal


class ExprTranslator(Protocol):
    """What these rules use of ``sql.expressions.ExprTranslator`` (which imports them)."""

    cols: Mapping[str, ColumnMeta]

    def fail(self, what: str, node=None) -> PlanError: ...

    def compare(self, op: str, a: ir.Expr, b: ir.Expr, node) -> ir.Expr: ...

    def need_numeric(self, e: ir.Expr, node) -> None: ...

    def as_condition(self, e: ir.Expr) -> ir.Expr: ...

Sub = Callable[[exp.Expression], ir.Expr]

#: sqlglot's calendar functions and the EXTRACT field each is.
CALENDAR = {"Year": "year", "Month": "month", "Day": "day", "DayOfMonth": "day",
            "DayOfYear": "doy", "Week": "week", "WeekOfYear": "week", "Quarter": "quarter",
            "DayOfWeekIso": "isodow", "Second": "second", "Hour": "hour", "Minute": "minute",
            "DayOfWeek": "dow"}
#: EXTRACT's spellings of its fields (DuckDB's aliases) -> ``ir.EXTRACT_PARTS``.
PART_ALIASES = {"dayofweek": "dow", "weekday": "dow", "dayofyear": "doy", "dayofmonth": "day",
                "weekofyear": "week", "years": "year", "months": "month", "days": "day",
                "hours": "hour", "minutes": "minute", "seconds": "second"}
_CASTS = {"INT": ir.CastTo.INTEGER, "BIGINT": ir.CastTo.BIGINT, "DOUBLE": ir.CastTo.DOUBLE}

#: The sqlglot nodes this module translates.
NODES: tuple[type, ...] = (exp.Case, exp.Coalesce, exp.Nullif, exp.If, exp.Abs, exp.Floor,
                           exp.Ceil, exp.Round, exp.TimestampTrunc, exp.Extract, exp.Cast,
                           *(getattr(exp, n) for n in CALENDAR if hasattr(exp, n)))


def scalar(t: ExprTranslator, node: exp.Expression, sub: Sub) -> ir.Expr:
    """The IR of scalar function ``node``, its operands translated by ``sub``."""
    if isinstance(node, exp.Case):
        return _case(t, node, sub)
    if isinstance(node, exp.If):
        false = node.args.get("false")
        return case_of(t, [(_cond(t, node.this, sub), sub(node.args["true"]))],
                       None if false is None else sub(false), node)
    if isinstance(node, exp.Coalesce):
        args = [sub(a) for a in (node.this, *node.expressions)]
        whens = [(ir.IsNull(a, negated=True), a) for a in args[:-1]]
        return case_of(t, whens, args[-1], node) if whens else args[0]
    if isinstance(node, exp.Nullif):
        a, b = sub(node.this), sub(node.expression)
        if isinstance(b, ir.Lit) and b.kind == "null":
            return a
        return case_of(t, [(t.compare("=", a, b, node), ir.Lit(None, "null"))], a, node)
    if isinstance(node, exp.Abs | exp.Floor | exp.Ceil | exp.Round):
        return _math(t, node, sub)
    if isinstance(node, exp.TimestampTrunc):
        unit = node.args.get("unit")
        name = (unit.name if unit is not None else "").lower()
        if name in ("decade", "century", "millennium"):  # the plan tree's
            raise t.fail(f"date_trunc('{name}', ...) {TREE_ONLY}", node)
        if name not in tuple(ir.TruncUnit):
            raise t.fail(f"date_trunc('{name}', ...) is not supported (units: "
                         f"{', '.join(ir.TruncUnit)})", node)
        a = sub(node.this)
        if a.kind != "timestamp":
            raise t.fail(f"date_trunc needs a timestamp, got {a.kind}", node)
        return ir.Trunc(ir.TruncUnit(name), a)
    if isinstance(node, exp.Extract):
        part = node.this.name.lower() if isinstance(node.this, exp.Var | exp.Identifier) else ""
        return extract(t, PART_ALIASES.get(part, part), node.expression, node, sub)
    if isinstance(node, exp.Cast):
        return _cast(t, node, sub)
    return extract(t, CALENDAR[type(node).__name__], node.this, node, sub)


def extract(t: ExprTranslator, part: str, arg_node, node, sub: Sub) -> ir.Expr:
    """``EXTRACT(part FROM arg)``."""
    if part not in ir.EXTRACT_PARTS:
        raise t.fail(f"EXTRACT({part.upper() or '?'}) is not supported "
                     f"({', '.join(p.upper() for p in ir.EXTRACT_PARTS)})", node)
    a = sub(arg_node)
    if a.kind != "timestamp":
        raise t.fail(f"EXTRACT needs a timestamp, got {a.kind}", node)
    return ir.Extract(part, a)


def _cond(t: ExprTranslator, node, sub: Sub) -> ir.Expr:
    c = t.as_condition(sub(node), node)
    if c.kind not in ("bool", "null"):
        raise t.fail(f"a CASE condition must be a condition, got {c.kind}", node)
    return c


def _case(t: ExprTranslator, node: exp.Case, sub: Sub) -> ir.Expr:
    subject = node.this
    s = sub(subject) if subject is not None else None
    whens = []
    for w in node.args.get("ifs") or ():
        if s is not None:  # CASE x WHEN v: x = v
            cond = t.compare("=", s, sub(w.this), w)
        else:
            cond = _cond(t, w.this, sub)
        whens.append((cond, sub(w.args["true"])))
    default = node.args.get("default")
    return case_of(t, whens, None if default is None else sub(default), node)


def case_of(t: ExprTranslator, whens: list[tuple[ir.Expr, ir.Expr]], default: ir.Expr | None,
            node) -> ir.Expr:
    """A ``Case`` whose result type is its branches' common type (DuckDB's: an integer and
    a DOUBLE or DECIMAL give a number compared as a DOUBLE)."""
    values = [v for _, v in whens] + ([default] if default is not None else [])
    kinds = {v.kind for v in values} - {"null"}
    if not kinds:
        raise t.fail("a CASE (or COALESCE, NULLIF) whose results are all NULL is not supported",
                     node)
    if kinds <= {"int", "float"}:
        kind = "float" if "float" in kinds else "int"
    elif len(kinds) == 1 and kinds <= {"bool", "timestamp"}:
        kind = kinds.pop()
    else:
        what = ", ".join(sorted(k.replace("strlit", "string") for k in kinds))
        raise t.fail(f"CASE results must be all numbers, all timestamps or all conditions "
                     f"(strings are not supported), got {what}", node)
    for v in values:
        if isinstance(v, ir.Lit) and v.kind == "int":
            t.need_numeric(v, node)  # beyond int64: no kernel value holds it
    return ir.Case(tuple(whens), default, kind)


def _number(t: ExprTranslator, e: ir.Expr, what: str, node) -> None:
    if e.kind not in ("int", "float"):
        raise t.fail(f"{what} needs a number, got {e.kind.replace('strlit', 'string')}", node)
    t.need_numeric(e, node)


def decimal_digits(t: ExprTranslator, node: exp.Expression) -> tuple[int, bool]:
    """(Most decimal digits of an exact decimal in ``node``, whether ``node`` is one bare
    column or constant): a column stored as scaled integers (it may be DuckDB's DECIMAL,
    which rounds and casts exactly, halves away from zero) or a decimal constant; under AVG,
    a division or a CAST the value is a DOUBLE."""
    digits, todo = 0, [node]
    while todo:
        n = todo.pop()
        if isinstance(n, exp.Avg | exp.Div | exp.Cast):
            continue
        if isinstance(n, exp.Column) and n.name in t.cols:
            c = t.cols[n.name]  # a column with no value has nothing to round; a DOUBLE
            d = parse_decimal(c.sql_type) if c.kind == "int" else None
            scale = c.scale if d is None else d[1]  # a DECIMAL held as its integers
            digits = max(digits, scale if c.min is not None and c.decimal is not False else 0)
        elif isinstance(n, exp.Literal) and not n.is_string and "." in n.this \
                and "e" not in n.this.lower():
            digits = max(digits, len(n.this.split(".")[1]))
        todo.extend(n.iter_expressions())
    bare = node
    while isinstance(bare, exp.Paren | exp.Neg | exp.Sum | exp.Min | exp.Max):
        bare = bare.this
    return digits, isinstance(bare, exp.Column | exp.Literal)


def _math(t: ExprTranslator, node, sub: Sub) -> ir.Expr:
    func = {exp.Abs: ir.MathFunc.ABS, exp.Floor: ir.MathFunc.FLOOR, exp.Ceil: ir.MathFunc.CEIL,
            exp.Round: ir.MathFunc.ROUND}[type(node)]
    a = sub(node.this)
    _number(t, a, func.upper(), node)
    digits = 0
    d = node.args.get("decimals")
    if d is not None:
        if func != ir.MathFunc.ROUND:
            raise t.fail(f"{func.upper()} takes one argument", node)
        lit = sub(d)
        if not (isinstance(lit, ir.Lit) and lit.kind == "int" and isinstance(lit.value, int)):
            raise t.fail("ROUND's second argument must be an integer constant", d)
        if not 0 <= lit.value <= 15:
            raise t.fail("ROUND to a negative number of digits or more than 15 is not supported",
                         d)
        digits = lit.value
    if func == ir.MathFunc.ROUND and a.kind == "float":
        exact, bare = decimal_digits(t, node.this)
        if exact > digits or (exact and not bare):
            raise t.fail(f"ROUND to {digits} digits of a value with {exact} exact decimal digits "
                         "(a DECIMAL, or a column stored as one, rounds otherwise than a "
                         "DOUBLE) is not supported: CAST it to DOUBLE first", node)
    if isinstance(a, ir.Dec) and func == ir.MathFunc.ABS:  # exactly, on its integers
        return ir.dec(ir.Math(func, a.left, "int"), a.scale, a.bound, a.source, a.precision)
    if isinstance(a, ir.Dec) and func == ir.MathFunc.ROUND and digits >= a.scale:
        return a  # no digit to round away: the DECIMAL itself
    if func == ir.MathFunc.ABS or (func == ir.MathFunc.ROUND and a.kind == "int"):
        kind = a.kind
    else:
        kind = "float"  # FLOOR/CEIL of an integer are DOUBLEs in DuckDB
    return ir.Math(func, a, kind, digits)


def _cast(t: ExprTranslator, node: exp.Cast, sub: Sub) -> ir.Expr:
    if isinstance(node, exp.TryCast):
        raise t.fail("TRY_CAST is not supported", node)
    dt = node.to
    name = dt.this.name if dt is not None and isinstance(dt.this, exp.DataType.Type) else ""
    to = _CASTS.get(name)
    if to is None or dt.expressions:
        raise t.fail(f"CAST to {dt.sql(dialect='duckdb') if dt is not None else '?'} is not "
                     "supported (INTEGER, BIGINT, DOUBLE)", node)
    if to == ir.CastTo.DOUBLE and isinstance(node.this, exp.Literal) and node.this.is_string:
        text = node.this.this.strip().lower()  # 'nan', 'inf', '-infinity', '1.5e3'
        if not re.fullmatch(r"[+-]?(nan|inf|infinity|(\d+\.?\d*|\.\d+)(e[+-]?\d+)?)", text):
            raise t.fail(f"could not convert {node.this.this!r} to DOUBLE", node)
        return ir.Lit(float(text), "float")
    a = sub(node.this)
    if a.kind == "bool":
        if to == ir.CastTo.DOUBLE:
            return ir.Case(((a, ir.Lit(1.0, "float")),), ir.Case(((ir.IsNull(a), ir.Lit(None, "null")),),
                                                                 ir.Lit(0.0, "float"), "float"), "float")
        return ir.Case(((a, ir.Lit(1, "int")),), ir.Case(((ir.IsNull(a), ir.Lit(None, "null")),),
                                                         ir.Lit(0, "int"), "int"), "int")
    if isinstance(a, ir.Lit) and a.kind == "null":  # NULL::INT: a NULL of the type
        if to == ir.CastTo.DOUBLE:
            return ir.Lit(None, "float")
        return ir.Lit(None, "int") if to == ir.CastTo.BIGINT else ir.Cast(ir.Lit(None, "int"), to, "int")
    _number(t, a, "CAST", node)
    if to != ir.CastTo.DOUBLE and a.kind == "float":
        exact, _ = decimal_digits(t, node.this)
        if exact:
            raise t.fail(f"CAST to {to.upper()} of a value with exact decimal digits (a DECIMAL, "
                         "or a column stored as one, rounds halves otherwise than a DOUBLE) is "
                         "not supported: CAST it to DOUBLE first", node)
    if to == ir.CastTo.DOUBLE and isinstance(a, ir.Dec):  # the double asked for: it may round
        return ir.Arith(a.op, a.left, a.right, "float")
    if to == ir.CastTo.DOUBLE and a.kind == "float":
        return a
    if to == ir.CastTo.BIGINT and a.kind == "int":
        return a
    return ir.Cast(a, to, "float" if to == ir.CastTo.DOUBLE else "int")
