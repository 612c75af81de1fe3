"""The logical IR: immutable expression and plan nodes.

Expressions are typed by ``kind``: ``int``, ``float``, ``bool``, ``timestamp`` (int64
microseconds) or ``string`` (dictionary codes, compared in code order, which is string
order because dictionaries are sorted). Plans are a chain
``Scan -> Filter? -> Aggregate -> Project -> Sort? -> Limit?``.
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from enum import StrEnum

ARITH_OPS = ("+", "-", "*", "/")
CMP_OPS = ("=", "<>", "<", "<=", ">", ">=")
AGG_FUNCS = ("count", "sum", "avg", "min", "max", "var_samp", "var_pop", "stddev_samp", "stddev_pop")
#: Exact quantiles: never compiled; ``exec.rows`` computes them on the matching rows' values
QUANTILES = ("median", "quantile_cont", "quantile_disc")
#: ``COUNT(DISTINCT x)``: never compiled; ``sql.distinct`` rewrites it before planning
COUNT_DISTINCT = "count_distinct"
#: Aggregates kept as a count, a shift and the sums of (x - shift) and (x - shift)**2
VARIANCES = ("var_samp", "var_pop", "stddev_samp", "stddev_pop")
#: The calendar fields EXTRACT computes, and the slots each takes as a group key (its largest
#: value + 1); None: no small domain (not a group key).
EXTRACT_PARTS = {"hour": 24, "minute": 60, "second": 60, "dow": 7, "isodow": 8, "day": 32,
                 "doy": 367, "week": 54, "month": 13, "quarter": 5, "year": None,
                 "isoyear": None}


class MathFunc(StrEnum):
    """The rounding functions of ``Math``."""

    ABS = "abs"
    FLOOR = "floor"
    CEIL = "ceil"
    ROUND = "round"


class CastTo(StrEnum):
    """The types a ``Cast`` converts to: DuckDB's INTEGER (int32 range), BIGINT and DOUBLE."""

    INTEGER = "integer"
    BIGINT = "bigint"
    DOUBLE = "double"


class TruncUnit(StrEnum):
    """The units of ``date_trunc``."""

    YEAR = "year"
    QUARTER = "quarter"
    MONTH = "month"
    WEEK = "week"
    DAY = "day"
    HOUR = "hour"
    MINUTE = "minute"
    SECOND = "second"


class Expr:
    """Base of expression nodes."""

    __slots__ = ()

    def children(self) -> tuple[Expr, ...]:
        return ()


@dataclass(frozen=True)
class Col(Expr):
    name: str
    kind: str


@dataclass(frozen=True, eq=False)
class Lit(Expr):
    """A constant; ``value`` None is SQL NULL. String constants on dictionary columns are
    turned into codes (possibly fractional: a string between two dictionary entries).

    Two constants are equal when they are the same value of the same type: ``0.0`` and
    ``-0.0`` differ (``x / -0.0`` is not ``x / 0.0``), ``1`` and ``1.0`` differ, and every
    NaN equals every NaN; plans and merged IN lists are keyed by this equality.
    """

    value: int | float | bool | None
    kind: str
    #: a DATE constant (``DATE '2019-01-05'``, kind timestamp): its midnight's microseconds,
    #: which compare as the TIMESTAMP DuckDB promotes a DATE to, returned as a DATE (so it
    #: is no equal of the TIMESTAMP constant of that midnight)
    date: bool = False

    def _key(self) -> tuple:
        if self.date:
            return ("DATE", self.kind, self.value)
        v = self.value
        if isinstance(v, bool) or v is None or isinstance(v, str):
            return (self.kind, type(v).__name__, v)
        if isinstance(v, numbers.Integral):
            return (self.kind, "int", int(v))
        if isinstance(v, numbers.Real):
            v = float(v)
            return (self.kind, "float", "nan" if v != v else (v, math.copysign(1.0, v)))
        return (self.kind, type(v).__name__, v)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Lit) and self._key() == other._key()

    def __hash__(self) -> int:
        return hash(self._key())


@dataclass(frozen=True)
class Arith(Expr):
    op: str
    left: Expr
    right: Expr
    kind: str

    def children(self):
        return (self.left, self.right)


@dataclass(frozen=True)
class Dec(Arith):
    """A DECIMAL's value as a double: the integer expression ``left`` (the value times
    ``10**scale``, exactly: a DECIMAL column's stored integers, or exact arithmetic of them)
    over ``right`` (``10.0**scale``), one correctly rounded division. The translator computes
    with ``left`` exactly where SQL keeps a DECIMAL exact (comparisons, ``+``, ``-``,
    ``*``); what reads this node reads the double. ``bound`` is the most ``|left|`` may be
    (where it reaches ``sqltypes.DOUBLE_EXACT``, the double may round, which the translator
    refuses), ``source`` the DECIMAL column it is of (for errors)."""

    scale: int = 0
    bound: int = 0
    source: str = ""
    #: the digits of its SQL type, DECIMAL(precision, scale), as a result
    precision: int = 38


def dec(x: Expr, scale: int, bound: int, source: str, precision: int = 38) -> Dec:
    """The DECIMAL(precision, scale) whose value times ``10**scale`` is the integer ``x``."""
    return Dec("/", x, Lit(float(10**scale), "float"), "float", scale, bound, source,
               max(1, min(38, precision)))


@dataclass(frozen=True)
class Neg(Expr):
    arg: Expr
    kind: str

    def children(self):
        return (self.arg,)


@dataclass(frozen=True)
class Cmp(Expr):
    op: str
    left: Expr
    right: Expr
    kind: str = "bool"

    def children(self):
        return (self.left, self.right)


@dataclass(frozen=True)
class And(Expr):
    args: tuple[Expr, ...]
    kind: str = "bool"

    def children(self):
        return self.args


@dataclass(frozen=True)
class Or(Expr):
    args: tuple[Expr, ...]
    kind: str = "bool"

    def children(self):
        return self.args


@dataclass(frozen=True)
class Not(Expr):
    arg: Expr
    kind: str = "bool"

    def children(self):
        return (self.arg,)


@dataclass(frozen=True)
class IsNull(Expr):
    arg: Expr
    negated: bool = False
    kind: str = "bool"

    def children(self):
        return (self.arg,)


@dataclass(frozen=True)
class InList(Expr):
    arg: Expr
    values: tuple[Lit, ...]
    negated: bool = False
    kind: str = "bool"

    def children(self):
        return (self.arg, *self.values)


@dataclass(frozen=True)
class Extract(Expr):
    """A calendar field of a timestamp (UTC, proleptic Gregorian): one of ``EXTRACT_PARTS``
    (``dow``: Sunday = 0; ``isodow``: Monday = 1; ``week``/``isoyear``: ISO 8601)."""

    part: str
    arg: Expr
    kind: str = "int"

    def children(self):
        return (self.arg,)


@dataclass(frozen=True)
class Trunc(Expr):
    """``date_trunc(unit, arg)``: a timestamp rounded down to the start of its ``unit``
    (``week``: the Monday)."""

    unit: TruncUnit
    arg: Expr
    kind: str = "timestamp"

    def children(self):
        return (self.arg,)


@dataclass(frozen=True)
class Case(Expr):
    """``CASE WHEN c1 THEN v1 ... ELSE default END``: the value of the first condition that
    is TRUE (not NULL), else ``default`` (None: NULL). A branch is evaluated only for the
    rows that take it: an overflow in a branch not taken raises nothing, as in DuckDB.
    COALESCE and NULLIF are written as CASEs."""

    whens: tuple[tuple[Expr, Expr], ...]
    default: Expr | None
    kind: str

    def children(self):
        parts = tuple(x for w in self.whens for x in w)
        return parts if self.default is None else (*parts, self.default)


@dataclass(frozen=True)
class Math(Expr):
    """ABS, FLOOR, CEIL or ROUND of a number, as DuckDB computes them: ROUND(x, ``digits``)
    of a DOUBLE is ``round(x * 10^d) / 10^d`` halves away from zero (``x`` itself where that
    is not finite), of an integer the integer; FLOOR/CEIL return DOUBLE; ABS of BIGINT's
    minimum is an overflow error."""

    func: MathFunc
    arg: Expr
    kind: str
    digits: int = 0

    def children(self):
        return (self.arg,)


@dataclass(frozen=True)
class Cast(Expr):
    """``CAST(arg AS to)``: a DOUBLE to an integer rounds half to even and errors out of
    range (NaN, infinities included); an integer to INTEGER errors outside int32."""

    arg: Expr
    to: CastTo
    kind: str

    def children(self):
        return (self.arg,)


@dataclass(frozen=True)
class Lookup(Expr):
    """A value looked up by an integer ``key`` in a table held with the query (a joined
    dimension table's column, by the fact table's join key): ``values[key - base]`` where
    ``valid`` holds there; NULL for a NULL key or one outside the table. ``label`` names the
    column for EXPLAIN."""

    key: Expr
    base: int
    values: tuple[int | float, ...]
    valid: tuple[bool, ...]
    kind: str
    label: str = ""

    def children(self):
        return (self.key,)


def transform(e: Expr, fn) -> Expr:
    """``e`` rebuilt bottom-up with ``fn`` applied to every node (children first); ``fn``
    returns its node or a replacement. Nodes nothing changed in are kept as they are."""
    def each(v):
        if isinstance(v, Expr):
            return transform(v, fn)
        if isinstance(v, tuple):
            w = tuple(each(x) for x in v)
            return v if all(a is b for a, b in zip(w, v, strict=True)) else w
        return v

    changes = {}
    for f in dataclasses.fields(e):
        v = getattr(e, f.name)
        w = each(v)
        if w is not v:
            changes[f.name] = w
    return fn(dataclasses.replace(e, **changes) if changes else e)


@dataclass(frozen=True)
class Agg(Expr):
    """An aggregate; ``arg`` None is COUNT(*). With a ``filter`` (``FILTER (WHERE ...)``) it
    takes only the rows where the condition is TRUE."""

    func: str
    arg: Expr | None
    kind: str
    filter: Expr | None = None
    #: the fraction of a quantile (``QUANTILES``): 0.5 for MEDIAN
    param: float | None = None
    #: a continuous quantile of a DECIMAL's integers (``arg``): the DECIMAL's precision,
    #: which decides how it interpolates (``exec.quantiles.decimal_between``); 0 otherwise
    precision: int = 0

    def children(self):
        return tuple(e for e in (self.arg, self.filter) if e is not None)


@dataclass(frozen=True)
class KeyRef(Expr):
    """The value of group key ``index`` (in expressions over an aggregate's output)."""

    index: int
    kind: str


@dataclass(frozen=True)
class AggRef(Expr):
    """The value of aggregate ``index`` (in expressions over an aggregate's output)."""

    index: int
    kind: str


def walk(e: Expr):
    """Yield ``e`` and all its descendants, parents first (an ``IN`` list's constants are
    not visited: they are ``values``, not children)."""
    yield e
    for c in (e.arg,) if isinstance(e, InList) else e.children():
        yield from walk(c)


def size(e: Expr) -> int:
    """Number of nodes of an expression (an ``IN`` list counts one), without recursion."""
    n, todo = 0, [e]
    while todo:
        x = todo.pop()
        n += 1
        todo.extend((x.arg,) if isinstance(x, InList) else x.children())
    return n


def columns_of(e: Expr | None) -> tuple[str, ...]:
    """Names of the columns an expression reads, in first-use order."""
    if e is None:
        return ()
    seen: dict[str, None] = {}
    for n in walk(e):
        if isinstance(n, Col):
            seen.setdefault(n.name)
    return tuple(seen)


def any_of(parts) -> Expr:
    """The OR of ``parts``, nested ORs flattened, and the equalities of one expression with
    constants (``x = 1 OR x = 2 OR x IN (3, 4)``) merged into one ``IN`` list: the same truth
    in SQL's three values, but one set lookup in a kernel instead of a term per constant."""
    return _merged(parts, Or, negated=False)


def all_of(parts) -> Expr:
    """The AND of ``parts``, nested ANDs flattened, and ``x <> 1 AND x NOT IN (2, 3)``
    merged into one ``NOT IN`` list (``any_of``'s dual)."""
    return _merged(parts, And, negated=True)


def _merged(parts, cls: type, negated: bool) -> Expr:
    op = "<>" if negated else "="
    flat: list[Expr] = []
    for p in parts:
        flat.extend(p.args if isinstance(p, cls) else (p,))
    members: dict[Expr, list[Expr]] = {}  # the list's expression -> its terms
    order: list[tuple[bool, Expr]] = []  # (a list?, its expression or the term) in order
    for p in flat:
        if isinstance(p, Cmp) and p.op == op and isinstance(p.right, Lit) \
                and not isinstance(p.left, Lit):
            key = p.left
        elif isinstance(p, InList) and p.negated == negated:
            key = p.arg
        else:
            order.append((False, p))
            continue
        if key not in members:
            members[key] = []
            order.append((True, key))
        members[key].append(p)
    out: list[Expr] = []
    for is_list, x in order:
        terms = members[x] if is_list else [x]
        if len(terms) == 1:
            out.append(terms[0])
        else:
            vals = tuple(v for t in terms for v in ((t.right,) if isinstance(t, Cmp) else t.values))
            out.append(InList(x, vals, negated=negated))
    return out[0] if len(out) == 1 else cls(tuple(out))


def conjuncts(e: Expr | None) -> tuple[Expr, ...]:
    """Split a predicate into its top-level AND terms."""
    if e is None:
        return ()
    if isinstance(e, And):
        return tuple(c for a in e.args for c in conjuncts(a))
    return (e,)


@dataclass(frozen=True)
class Query:
    """A whole query: scan ``table``, filter by ``predicate``, group by ``keys`` computing
    ``aggs``, project ``exprs`` (over ``KeyRef``/``AggRef``) as ``names`` after ``having``,
    order, offset and limit."""

    table: str
    predicate: Expr | None
    keys: tuple[Expr, ...]
    aggs: tuple[Agg, ...]
    names: tuple[str, ...]
    exprs: tuple[Expr, ...]
    having: Expr | None
    #: (select-list index, descending, NULLs first) per ORDER BY term
    order: tuple[tuple[int, bool, bool], ...]
    limit: int | None
    #: output rows skipped before ``limit`` (OFFSET)
    offset: int = 0
    #: the last ``hidden`` of ``exprs`` are not output: ORDER BY terms beyond the select list
    hidden: int = 0

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns the predicate, the keys and the aggregates read, in first-use order."""
        seen: dict[str, None] = {}
        for e in (self.predicate, *self.keys, *self.aggs):
            for c in columns_of(e):
                seen.setdefault(c)
        return tuple(seen)


@dataclass(frozen=True)
class RowQuery:
    """A query that returns rows, not groups: scan ``table``, keep the rows where
    ``predicate`` is TRUE, compute ``exprs`` (over the table's columns) as ``names``, order
    by ``order`` and keep ``limit`` rows after the first ``offset``. ``steps`` say in words
    what a join became (EXPLAIN)."""

    table: str
    predicate: Expr | None
    names: tuple[str, ...]
    exprs: tuple[Expr, ...]
    #: (expression, descending, NULLs first) per ORDER BY term
    order: tuple[tuple[Expr, bool, bool], ...]
    limit: int | None
    offset: int = 0
    steps: tuple[str, ...] = ()

    @property
    def columns(self) -> tuple[str, ...]:
        """The columns the output and the order read, in first-use order."""
        seen: dict[str, None] = {}
        for e in (*self.exprs, *(o[0] for o in self.order)):
            for c in columns_of(e):
                seen.setdefault(c)
        return tuple(seen)


def quantile_aggs(q: Query) -> tuple[int, ...]:
    """The indexes of ``q``'s quantile aggregates."""
    return tuple(j for j, a in enumerate(q.aggs) if a.func in QUANTILES)
