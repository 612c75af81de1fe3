"""A dataframe-like path to the same queries as SQL: ``con.table("trips").filter(...).agg(...)``.

A frame is a SELECT being built: each call adds a clause, and ``agg`` or ``select`` turns
the frame into one sqlglot SELECT, held by a lazy :class:`Relation` (DuckDB's relation,
Polars' lazy frame): ``order_by``, ``filter``, ``select`` and ``limit`` on it nest it as a
derived table, and ``collect()`` (or any of a result's methods: ``rows()``, ``df()``,
``show()``, ...) runs its text through the session's SQL path, once. The SQL translator is
the one source of the rules, so a frame accepts and refuses exactly what the same SQL does,
in the same words (without the position in the generated text)."""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from enum import StrEnum

import numpy as np
from sqlglot import exp

from bamql.errors import PlanError, UsageError
from bamql.exec.result import Result
from bamql.fused import ir

#: the position ``sql.expressions`` appends to an error, meaningless for a frame
_POSITION = re.compile(r" at line \d+, column \d+")


class QuantileMethod(StrEnum):
    """How ``ColExpr.quantile`` picks its value: interpolated between the two nearest values
    (``quantile_cont``) or the nearest value itself (``quantile_disc``), as in DuckDB."""

    CONT = "cont"
    DISC = "disc"


@dataclass(frozen=True)
class ColExpr:
    """An unresolved column expression: an operation ``op`` over ``args`` (expressions or
    Python constants), turned into SQL when its frame runs."""

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
        """SQL ``x IN (v1, v2, ...)``."""
        return ColExpr("in", (self, tuple(values)))

    def between(self, lo, hi) -> ColExpr:
        """SQL ``x BETWEEN lo AND hi`` (both ends included)."""
        return ColExpr("between", (self, lo, hi))

    def is_null(self) -> ColExpr:
        """SQL ``x IS NULL``."""
        return ColExpr("isnull", (self,))

    def is_not_null(self) -> ColExpr:
        """SQL ``x IS NOT NULL``."""
        return ColExpr("notnull", (self,))

    def hour(self) -> ColExpr:
        """SQL ``hour(x)`` of a timestamp."""
        return ColExpr("func", ("hour", self))

    # aggregates
    def mean(self) -> ColExpr:
        """SQL ``AVG(x)``."""
        return ColExpr("func", ("avg", self))

    def sum(self) -> ColExpr:
        """SQL ``SUM(x)``."""
        return ColExpr("func", ("sum", self))

    def min(self) -> ColExpr:
        """SQL ``MIN(x)``."""
        return ColExpr("func", ("min", self))

    def max(self) -> ColExpr:
        """SQL ``MAX(x)``."""
        return ColExpr("func", ("max", self))

    def count(self) -> ColExpr:
        """SQL ``COUNT(x)``: the rows where ``x`` is not NULL."""
        return ColExpr("func", ("count", self))

    def median(self) -> ColExpr:
        """SQL ``MEDIAN(x)``: the exact median, interpolated as ``quantile(0.5)``."""
        return ColExpr("func", ("median", self))

    def quantile(self, q: float, method: QuantileMethod | str = QuantileMethod.CONT) -> ColExpr:
        """The exact ``q`` quantile of ``x``.

        Parameters
        ----------
        q
            The fraction, between 0 and 1.
        method
            ``"cont"``: SQL ``quantile_cont(x, q)``, interpolated between the two nearest
            values; ``"disc"``: SQL ``quantile_disc(x, q)``, the nearest value itself.

        Returns
        -------
        ColExpr
            The aggregate, for ``agg`` or ``select``.
        """
        try:
            m = QuantileMethod(method)
        except ValueError:
            raise UsageError(f"quantile method is 'cont' or 'disc', not {method!r}") from None
        q = list(q) if isinstance(q, list | tuple) else q  # refused as SQL refuses a list
        return ColExpr("func", (f"quantile_{m.value}", self, q))


def col(name: str) -> ColExpr:
    """A column of the table, by name."""
    return ColExpr("col", (name,))


def count() -> ColExpr:
    """COUNT(*)."""
    return ColExpr("func", ("count", None))


# -- ColExpr -> sqlglot ---------------------------------------------------------------------

def _const(v) -> exp.Expression:
    """A Python constant as the SQL constant of the same value."""
    if isinstance(v, np.generic) and not isinstance(v, np.datetime64):
        v = v.item()
    if isinstance(v, bool):
        return exp.Boolean(this=v)
    if isinstance(v, int):
        return exp.Literal.number(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise PlanError(f"unsupported constant {v!r}")
        return exp.Literal.number(repr(v))
    if isinstance(v, str):
        return exp.Literal.string(v)
    if v is None:
        return exp.Null()
    if isinstance(v, datetime.datetime) and v.tzinfo is not None:
        raise PlanError(f"unsupported constant {v!r}: timestamps are without time zone")
    if isinstance(v, np.datetime64 | datetime.datetime):
        # as text: the translator checks the range (a cast to microseconds wraps in NumPy)
        return exp.cast(exp.Literal.string(str(np.datetime64(v)).replace("T", " ")), "TIMESTAMP")
    if isinstance(v, list):
        return exp.Array(expressions=[_const(x) for x in v])
    raise PlanError(f"unsupported constant {v!r}")


def _node(e) -> exp.Expression:
    """The sqlglot expression of a ColExpr (or of a constant)."""
    if not isinstance(e, ColExpr):
        return _const(e)
    return _NODES[e.op](*e.args)


#: how tightly each node binds in SQL (DuckDB's order): an operand that binds less tightly
#: than its operator is parenthesized; anything not listed is an atom
_PRECEDENCE: tuple[tuple[type[exp.Expression], int], ...] = (
    (exp.Or, 1), (exp.And, 2), (exp.Not, 3),
    (exp.EQ | exp.NEQ | exp.LT | exp.LTE | exp.GT | exp.GTE | exp.Is | exp.In | exp.Between, 4),
    (exp.Add | exp.Sub, 5), (exp.Mul | exp.Div, 6), (exp.Neg, 7))


def _precedence(n: exp.Expression) -> int:
    if isinstance(n, exp.Literal) and not n.is_string and n.this.startswith("-"):
        return 7  # a negative number prints as a negation
    return next((p for cls, p in _PRECEDENCE if isinstance(n, cls)), 8)


def _operand(e, parent: int, right: bool = False) -> exp.Expression:
    """``_node(e)`` as an operand of an operator of precedence ``parent``: parenthesized
    where it binds less tightly, or as tightly on the right (so that the tree is the one
    built: ``a - (b - c)``), or below a comparison or a prefix operator."""
    n = _node(e)
    p = _precedence(n)
    if p < parent or p == parent and (right or parent in (3, 4, 7)):
        return exp.Paren(this=n)
    return n


def _binary(cls: type[exp.Expression], prec: int) -> Callable[..., exp.Expression]:
    return lambda a, b: cls(this=_operand(a, prec), expression=_operand(b, prec, right=True))


def _func(name: str, *args) -> exp.Expression:
    if name == "count" and args == (None,):
        return exp.Count(this=exp.Star())
    return exp.func(name, *(_node(a) for a in args), dialect="duckdb")


def _column(name) -> exp.Expression:
    if not isinstance(name, str):
        raise UsageError(f"a column is named by a string, not {type(name).__name__}")
    return exp.column(name)  # every name is quoted in the text that runs


#: one rule per ColExpr operation
_NODES: dict[str, Callable[..., exp.Expression]] = {
    "col": _column,
    "=": _binary(exp.EQ, 4), "<>": _binary(exp.NEQ, 4), "<": _binary(exp.LT, 4),
    "<=": _binary(exp.LTE, 4), ">": _binary(exp.GT, 4), ">=": _binary(exp.GTE, 4),
    "+": _binary(exp.Add, 5), "-": _binary(exp.Sub, 5), "*": _binary(exp.Mul, 6),
    "/": _binary(exp.Div, 6), "and": _binary(exp.And, 2), "or": _binary(exp.Or, 1),
    "neg": lambda a: exp.Neg(this=_operand(a, 7)),
    "not": lambda a: exp.Not(this=_operand(a, 3)),
    "in": lambda a, vs: exp.In(this=_operand(a, 4), expressions=[_node(v) for v in vs]),
    "between": lambda a, lo, hi: exp.Between(this=_operand(a, 4), low=_operand(lo, 5),
                                             high=_operand(hi, 5)),
    "isnull": lambda a: exp.Is(this=_operand(a, 4), expression=exp.Null()),
    "notnull": lambda a: exp.Not(this=exp.Paren(this=exp.Is(this=_operand(a, 4),
                                                            expression=exp.Null()))),
    "func": _func,
}


def _label(e) -> str:
    """The output name of an unnamed item: a column's name, ``hour`` for ``hour(x)``, else
    the expression's SQL text."""
    if isinstance(e, ColExpr) and e.op == "col":
        return e.args[0]
    if isinstance(e, ColExpr) and e.op == "func" and e.args[0] == "hour":
        return "hour"
    return _node(e).sql(dialect="duckdb")


def _term(k) -> ColExpr:
    """A key, ORDER BY term or select item given as a column name or an expression."""
    if isinstance(k, str):
        return col(k)
    if isinstance(k, ColExpr):
        return k
    raise UsageError(f"expected a column name or an expression such as col('x'), got {k!r}")


def _flags(v, n: int, what: str) -> tuple:
    """``order_by``'s ``desc`` or ``nulls_first``: one value for every key, or one per key."""
    vs = tuple(v) if isinstance(v, Sequence) and not isinstance(v, str) else (v,) * n
    if len(vs) != n:
        raise UsageError(f"order_by: {len(vs)} {what} values for {n} keys")
    return vs


@dataclass(frozen=True)
class Frame:
    """A lazy query on one table: ``filter``, ``group_by``, ``order_by`` and ``limit`` add
    clauses; ``agg`` and ``select`` run it and return a ``Result``."""

    session: object
    name: str
    predicate: ColExpr | None = None
    keys: tuple[ColExpr, ...] = ()
    #: (term: a column or output name, or an expression; descending; NULLs first)
    order: tuple[tuple[str | ColExpr, bool, bool], ...] = ()
    limit_: int | None = None
    offset: int = 0

    # -- clauses -------------------------------------------------------------------------
    def filter(self, cond: ColExpr) -> Frame:
        """Rows where ``cond`` holds (ANDed with earlier filters): SQL ``WHERE``."""
        if not isinstance(cond, ColExpr):
            raise UsageError(f"filter() takes a condition such as col('x') > 1, not {cond!r}")
        return replace(self, predicate=cond if self.predicate is None else self.predicate & cond)

    def group_by(self, *keys) -> Frame:
        """Group by columns or expressions (names, ``col('x')``, ``col('t').hour()``,
        ``col('x') * 2``...): SQL ``GROUP BY``."""
        return replace(self, keys=tuple(_term(k) for k in keys))

    def order_by(self, *keys, desc: bool | Sequence[bool] = False,
                 nulls_first: bool | Sequence[bool] | None = None) -> Frame:
        """Order the output (replacing an earlier ``order_by``): SQL ``ORDER BY``.

        Parameters
        ----------
        *keys
            Output names (as SQL binds them: an output column before a table column of
            the same name) or expressions; the first key orders first.
        desc
            Descending: one flag for every key, or one per key.
        nulls_first
            NULLs before other values: one flag, or one per key; None: after them, as in
            DuckDB.

        Returns
        -------
        Frame
            The frame with this order.
        """
        if not keys:
            raise UsageError("order_by() needs at least one key")
        terms = tuple(k if isinstance(k, str) else _term(k) for k in keys)
        ds = _flags(desc, len(terms), "desc")
        ns = _flags(False if nulls_first is None else nulls_first, len(terms), "nulls_first")
        return replace(self, order=tuple(zip(terms, map(bool, ds), map(bool, ns), strict=True)))

    def limit(self, n: int, offset: int = 0) -> Frame:
        """At most ``n`` rows, after skipping ``offset``: SQL ``LIMIT n OFFSET offset``."""
        return replace(self, limit_=n, offset=offset)

    def head(self, n: int = 5) -> Frame:
        """The first ``n`` rows: ``limit(n)``."""
        return self.limit(n)

    # -- running -------------------------------------------------------------------------
    def select(self, *items, **named) -> Relation:
        """``SELECT items ...`` over the frame's clauses, run when collected.

        Parameters
        ----------
        *items
            Column names or expressions, named by their column (``hour`` for
            ``hour()``), else by their SQL text; none: every column (``SELECT *``).
        **named
            Expressions named by their keyword.

        Returns
        -------
        Relation
            Rows of each matching row's values (or of groups, with aggregates or
            ``group_by``), as the same SQL returns, once collected.
        """
        return Relation(self.session, self.sql(*items, **named))

    def agg(self, **aggs: ColExpr) -> Relation:
        """The aggregates, run when collected: the group keys, then one column per named
        aggregate; groups in the order of their keys unless ``order_by`` says otherwise."""
        return Relation(self.session, self._agg_sql(aggs))

    def sql(self, *items, **named) -> str:
        """The SQL text that ``select(*items, **named)`` runs."""
        out = [exp.alias_(_node(_term(i)), _label(_term(i)), quoted=True) for i in items] + [
            exp.alias_(_node(e), n, quoted=True) for n, e in named.items()]
        return self._text(out or [exp.Star()], self.order)

    def query(self, **aggs: ColExpr) -> ir.Query:
        """The logical query that ``agg(**aggs)`` runs."""
        return self._checked(self.session._translate, self._agg_sql(aggs))

    def explain(self, **aggs: ColExpr) -> str:
        """The EXPLAIN text of ``agg(**aggs)``."""
        return self._checked(self.session.explain, self._agg_sql(aggs))

    # -- helpers -------------------------------------------------------------------------
    def _agg_sql(self, aggs: dict[str, ColExpr]) -> str:
        if not aggs:
            raise PlanError("agg() needs at least one named aggregate")
        out = [exp.alias_(_node(k), _label(k), quoted=True) for k in self.keys] + [
            exp.alias_(_node(e), n, quoted=True) for n, e in aggs.items()]
        order = self.order or tuple((i, False, False) for i in range(1, len(self.keys) + 1))
        return self._text(out, order, positions=not self.order)

    def _text(self, out: list[exp.Expression], order, positions: bool = False) -> str:
        s = exp.Select(expressions=out).from_(exp.table_(self.name, quoted=True), copy=False)
        if self.predicate is not None:
            s = s.where(_node(self.predicate), copy=False)
        if self.keys:
            s = s.group_by(*(_node(k) for k in self.keys), copy=False)
        if order:
            s.set("order", exp.Order(expressions=[
                exp.Ordered(this=exp.Literal.number(t) if positions else
                            _column(t) if isinstance(t, str) else _node(t),
                            desc=d, nulls_first=nf) for t, d, nf in order]))
        if self.limit_ is not None:
            s = s.limit(_const(self.limit_), copy=False)
        if self.offset:
            s = s.offset(_const(self.offset), copy=False)
        return s.sql(dialect="duckdb", identify=True)

    @staticmethod
    def _checked(fn, text: str):
        return _checked(fn, text)


def _checked(fn, text: str):
    """``fn(text)``, its PlanError without the position in the generated text."""
    try:
        return fn(text)
    except PlanError as e:
        msg = _POSITION.sub("", str(e))
        if msg == str(e):
            raise
        raise PlanError(msg) from None


class Relation:
    """A query planned but not run yet: ``order_by``, ``filter``, ``select``, ``limit`` and
    ``head`` nest it as a derived table (new relations); ``collect()`` runs it once and keeps the
    ``Result``, whose methods (``rows``, ``fetchall``, ``df``, ``arrow``, ``pl``, ``show``,
    ``explain``, ``stats``...) a relation answers by collecting itself."""

    def __init__(self, session, text: str) -> None:
        self.session = session
        self._text = text
        self._result: Result | None = None
        # bound and planned now, as DuckDB's relations are (a wrong name fails here); run later
        _checked(session.explain, text)

    def sql(self) -> str:
        """The SQL text the relation runs."""
        return self._text

    def collect(self) -> Result:
        """Run the relation (once; later calls return the same result)."""
        if self._result is None:
            self._result = _checked(self.session.sql, self._text)
        return self._result

    def _outer(self) -> exp.Select:
        inner = exp.Subquery(this=exp.maybe_parse(self._text, dialect="duckdb"),
                             alias=exp.TableAlias(this=exp.to_identifier("_r")))
        return exp.Select(expressions=[exp.Star()]).from_(inner, copy=False)

    def _nest(self, s: exp.Select) -> Relation:
        return Relation(self.session, s.sql(dialect="duckdb", identify=True))

    def filter(self, cond: ColExpr) -> Relation:
        """Rows of the relation where ``cond`` holds (its output names as columns)."""
        if not isinstance(cond, ColExpr):
            raise UsageError(f"filter() takes a condition such as col('x') > 1, not {cond!r}")
        return self._nest(self._outer().where(_node(cond), copy=False))

    def select(self, *items, **named) -> Relation:
        """Columns or expressions of the relation's output, as ``Frame.select`` names them."""
        out = [exp.alias_(_node(_term(i)), _label(_term(i)), quoted=True) for i in items] + [
            exp.alias_(_node(e), n, quoted=True) for n, e in named.items()]
        s = self._outer()
        if out:
            s.set("expressions", out)
        return self._nest(s)

    def order_by(self, *keys, desc: bool | Sequence[bool] = False,
                 nulls_first: bool | Sequence[bool] | None = None) -> Relation:
        """The relation's rows in the order of ``keys`` (its output names or expressions of
        them), as ``Frame.order_by`` takes them."""
        if not keys:
            raise UsageError("order_by() needs at least one key")
        terms = tuple(k if isinstance(k, str) else _term(k) for k in keys)
        ds = _flags(desc, len(terms), "desc")
        ns = _flags(False if nulls_first is None else nulls_first, len(terms), "nulls_first")
        s = self._outer()
        s.set("order", exp.Order(expressions=[
            exp.Ordered(this=_column(t) if isinstance(t, str) else _node(t), desc=bool(d),
                        nulls_first=bool(nf)) for t, d, nf in zip(terms, ds, ns, strict=True)]))
        return self._nest(s)

    def limit(self, n: int, offset: int = 0) -> Relation:
        """At most ``n`` of the relation's rows, after skipping ``offset``."""
        s = self._outer().limit(_const(n), copy=False)
        if offset:
            s = s.offset(_const(offset), copy=False)
        return self._nest(s)

    def head(self, n: int = 5) -> Relation:
        """The first ``n`` rows: ``limit(n)``."""
        return self.limit(n)

    # a relation answers as its result does (collecting itself first)
    def __getattr__(self, name: str):
        if name.startswith("_"):
            raise AttributeError(name)
        return getattr(self.collect(), name)

    def __arrow_c_stream__(self, requested_schema=None):
        return self.collect().__arrow_c_stream__(requested_schema)

    def __arrow_c_schema__(self):
        return self.collect().__arrow_c_schema__()

    def __len__(self) -> int:
        return len(self.collect())

    def __bool__(self) -> bool:
        return True

    def __iter__(self):
        return iter(self.collect())

    def __repr__(self) -> str:
        return repr(self.collect())

    def _repr_html_(self, max_rows: int = 50) -> str:
        return self.collect()._repr_html_(max_rows)
