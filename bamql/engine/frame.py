"""A dataframe-like path to the same IR: ``con.table("trips").filter(...).agg(...)``."""

from __future__ import annotations

import datetime
from dataclasses import dataclass

import numpy as np

from bamql.engine.result import Result
from bamql.errors import PlanError
from bamql.planner import ir
from bamql.planner.constants import timestamp_us
from bamql.planner.show import show
from bamql.planner.translate import Translator


@dataclass(frozen=True)
class ColExpr:
    """An unresolved column expression; resolved against a table's schema when run."""

    op: str
    args: tuple

    # comparisons
    def __eq__(self, o):  # type: ignore[override]
        return ColExpr("=", (self, o))

    def __ne__(self, o):  # type: ignore[override]
        return ColExpr("<>", (self, o))

    def __lt__(self, o):
        return ColExpr("<", (self, o))

    def __le__(self, o):
        return ColExpr("<=", (self, o))

    def __gt__(self, o):
        return ColExpr(">", (self, o))

    def __ge__(self, o):
        return ColExpr(">=", (self, o))

    # arithmetic
    def __add__(self, o):
        return ColExpr("+", (self, o))

    def __radd__(self, o):
        return ColExpr("+", (o, self))

    def __sub__(self, o):
        return ColExpr("-", (self, o))

    def __rsub__(self, o):
        return ColExpr("-", (o, self))

    def __mul__(self, o):
        return ColExpr("*", (self, o))

    def __rmul__(self, o):
        return ColExpr("*", (o, self))

    def __truediv__(self, o):
        return ColExpr("/", (self, o))

    def __rtruediv__(self, o):
        return ColExpr("/", (o, self))

    def __neg__(self):
        return ColExpr("neg", (self,))

    # logic
    def __and__(self, o):
        return ColExpr("and", (self, o))

    def __or__(self, o):
        return ColExpr("or", (self, o))

    def __invert__(self):
        return ColExpr("not", (self,))

    def __hash__(self):
        return hash((self.op, self.args))

    def __bool__(self):
        raise TypeError("use & | ~ to combine conditions, not and/or/not")

    def isin(self, values) -> ColExpr:
        return ColExpr("in", (self, tuple(values)))

    def between(self, lo, hi) -> ColExpr:
        return (self >= lo) & (self <= hi)

    def is_null(self) -> ColExpr:
        return ColExpr("isnull", (self,))

    def is_not_null(self) -> ColExpr:
        return ColExpr("notnull", (self,))

    def hour(self) -> ColExpr:
        return ColExpr("extract", ("hour", self))

    # aggregates
    def mean(self) -> ColExpr:
        return ColExpr("agg", ("avg", self))

    def sum(self) -> ColExpr:
        return ColExpr("agg", ("sum", self))

    def min(self) -> ColExpr:
        return ColExpr("agg", ("min", self))

    def max(self) -> ColExpr:
        return ColExpr("agg", ("max", self))

    def count(self) -> ColExpr:
        return ColExpr("agg", ("count", self))


def col(name: str) -> ColExpr:
    """A column of the table, by name."""
    return ColExpr("col", (name,))


def count() -> ColExpr:
    """COUNT(*)."""
    return ColExpr("agg", ("count", None))


def _raw_lit(v) -> ir.Lit:
    if isinstance(v, str):
        lit = ir.Lit(v, "strlit")
    elif isinstance(v, bool):
        lit = ir.Lit(v, "bool")
    elif isinstance(v, int):
        lit = ir.Lit(v, "int")
    elif isinstance(v, float):
        lit = ir.Lit(v, "float")
    elif v is None:
        lit = ir.Lit(None, "null")
    elif isinstance(v, np.datetime64 | datetime.datetime):
        # through the text: a cast to microseconds wraps beyond int64, this raises
        lit = ir.Lit(timestamp_us(str(np.datetime64(v))), "timestamp")
    else:
        raise PlanError(f"unsupported constant {v!r}")
    return lit


def _lit(v, other: ir.Expr, cols) -> ir.Lit:
    return Translator.for_columns(cols).coerce_literal(_raw_lit(v), other, None)


def resolve(e, cols) -> ir.Expr:
    """ColExpr -> IR over a table's columns (same checks as SQL)."""
    t = Translator.for_columns(cols)
    if not isinstance(e, ColExpr):
        raise PlanError(f"expected a column expression, got {e!r}")
    op, a = e.op, e.args
    if op == "col":
        if a[0] not in cols:
            raise PlanError(f"unknown column {a[0]!r}")
        return ir.Col(a[0], cols[a[0]].kind)
    if op in ("=", "<>", "<", "<=", ">", ">="):
        left = resolve(a[0], cols)
        right = resolve(a[1], cols) if isinstance(a[1], ColExpr) else _raw_lit(a[1])
        return t.compare(op, left, right, None)
    if op in ("+", "-", "*", "/"):
        x = resolve(a[0], cols) if isinstance(a[0], ColExpr) else _lit(a[0], ir.Lit(0, "int"), cols)
        y = resolve(a[1], cols) if isinstance(a[1], ColExpr) else _lit(a[1], ir.Lit(0, "int"), cols)
        for z in (x, y):
            t.need_numeric(z, None)
        kind = "float" if op == "/" or "float" in (x.kind, y.kind) else "int"
        return ir.Arith(op, x, y, kind)
    if op == "neg":
        x = resolve(a[0], cols)
        return ir.Neg(x, x.kind)
    if op in ("and", "or"):
        parts = (resolve(a[0], cols), resolve(a[1], cols))
        return ir.all_of(parts) if op == "and" else ir.any_of(parts)
    if op == "not":
        return ir.Not(resolve(a[0], cols))
    if op == "in":
        x = resolve(a[0], cols)
        return t.in_list(x, [_lit(v, x, cols) for v in a[1]], None)
    if op in ("isnull", "notnull"):
        return ir.IsNull(resolve(a[0], cols), negated=op == "notnull")
    if op == "extract":
        x = resolve(a[1], cols)
        if x.kind != "timestamp":
            raise PlanError("hour() needs a timestamp column")
        return ir.Extract(a[0], x)
    raise PlanError(f"{op} is not allowed here")


def _agg(e: ColExpr, cols) -> ir.Agg:
    if not isinstance(e, ColExpr) or e.op != "agg":
        raise PlanError("agg() takes aggregates such as col('x').mean() or count()")
    func, arg = e.args
    if arg is None:
        return ir.Agg("count", None, "int")
    return Translator.for_columns(cols).agg_of(func, resolve(arg, cols), None)


class Frame:
    """A lazy query on one table; ``agg`` runs it."""

    def __init__(self, session, table: str, predicate: ColExpr | None = None,
                 keys: tuple = ()) -> None:
        self.session, self.name, self.predicate, self.keys = session, table, predicate, keys

    def filter(self, cond: ColExpr) -> Frame:
        """Rows where ``cond`` holds (ANDed with earlier filters)."""
        p = cond if self.predicate is None else (self.predicate & cond)
        return Frame(self.session, self.name, p, self.keys)

    def group_by(self, *keys) -> Frame:
        """Group by columns (names or expressions such as ``col('pickup_datetime').hour()``)."""
        ks = tuple(col(k) if isinstance(k, str) else k for k in keys)
        return Frame(self.session, self.name, self.predicate, ks)

    def query(self, **aggs: ColExpr) -> ir.Query:
        """The logical query that ``agg(**aggs)`` would run."""
        if not aggs:
            raise PlanError("agg() needs at least one named aggregate")
        cols = self.session.store(self.name).columns
        pred = resolve(self.predicate, cols) if self.predicate is not None else None
        if pred is not None and pred.kind != "bool":
            raise PlanError("filter() needs a condition")
        t = Translator.for_columns(cols, self.name)
        keys = tuple(t.key_of(resolve(k, cols), None) for k in self.keys)
        agg_list: list[ir.Agg] = []
        exprs = []
        for a in aggs.values():
            g = _agg(a, cols)
            if g not in agg_list:
                agg_list.append(g)
            exprs.append(ir.AggRef(agg_list.index(g), g.kind))
        key_names = tuple(k.name if isinstance(k, ir.Col) else k.part if isinstance(k, ir.Extract)
                          else show(k) for k in keys)
        names = key_names + tuple(aggs)
        key_exprs = tuple(ir.KeyRef(i, k.kind) for i, k in enumerate(keys))
        order = tuple((i, False, False) for i in range(len(keys)))
        return ir.Query(self.name, pred, keys, tuple(agg_list), names, key_exprs + tuple(exprs),
                        None, order, None)

    def agg(self, **aggs: ColExpr) -> Result:
        """Run the query: one output column per named aggregate (plus the group keys)."""
        return self.session.execute(self.query(**aggs))

    def explain(self, **aggs: ColExpr) -> str:
        """The EXPLAIN text of ``agg(**aggs)``."""
        return self.session.explain_query(self.query(**aggs))
